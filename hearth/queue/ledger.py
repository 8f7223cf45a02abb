"""The queue's ledger: a checked request (`Parsed`) into the audit's rows and back out.

The queue's side of hearth/audit/requests.py: this module knows the queue's types (`Parsed`,
`Request`) and turns them into the values the audit keeps (`Accepted`, a `RunRecord`), so the
audit never imports the queue. `recorded_request` reads a request back as the spawner checked it:
what runs is what was recorded, never a second reading of the file.
"""

from __future__ import annotations

from hearth.audit.requests import Accepted, FileFacts, ensure_request, insert_request, record_rejected, recorded
from hearth.audit.store import AuditStore, RunRecord
from hearth.queue.intake import Parsed, RequestRefused
from hearth.queue.request import Request


def admit(audit: AuditStore, parsed: Parsed, facts: FileFacts, claimed_at: str) -> None:
    """Record an accepted request; RequestRefused if its id already names a run or a request.

    Checked and written in one transaction, so two spawners cannot both admit one id.
    """
    taken = insert_request(audit, accepted(parsed), facts, claimed_at)
    if taken:
        raise RequestRefused(f"duplicate id: {taken}; give the request a new id")


def ensure_request_row(audit: AuditStore, parsed: Parsed, facts: FileFacts, claimed_at: str) -> None:
    """Record the request if its spawner did not (a request moved into claimed/ by hand)."""
    ensure_request(audit, accepted(parsed), facts, claimed_at)


def recorded_request(audit: AuditStore, request_id: str) -> tuple[Parsed, str | None] | None:
    """The request as the spawner checked and recorded it, with the sha256 of the bytes it read.

    The run executes this, never a second reading of the file: what runs is what was recorded.
    """
    found = recorded(audit, request_id)
    if found is None:
        return None
    shape, body, sha256 = found
    return Parsed(Request.model_validate_json(body), shape), sha256


def accepted(parsed: Parsed) -> Accepted:
    request = parsed.request
    return Accepted(
        id=request.id,
        shape=parsed.shape,
        source=request.source,
        requested_by=request.requested_by,
        created_at=request.created_at.isoformat() if request.created_at else None,
        body=request.model_dump_json(exclude_none=True),
    )


def record_rejection(
    audit: AuditStore,
    reason: str,
    facts: FileFacts,
    *,
    kept_as: str,
    request: Request | None = None,
    request_id: str | None = None,
    run_id: str | None = None,
) -> str:
    """A `rejected` run row (a fresh id unless the run exists) and the rejection's file facts."""
    run = _rejected_run(request) if request else None
    request_id = request.id if request else request_id
    return record_rejected(audit, reason, facts, kept_as=kept_as, run=run, request_id=request_id, run_id=run_id)


def _rejected_run(request: Request) -> RunRecord:
    return RunRecord(
        id=request.id,
        agent_name=request.agent_name,
        model=request.model or "",
        goal=request.goal,
        mode=request.mode or "",
        source=request.source,
        requested_by=request.requested_by,
        status="rejected",
        label=request.label,
    )
