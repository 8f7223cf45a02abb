"""The queue's rows in the audit: accepted requests, rejections, and runs that never finished.

Part of the audit store (it writes only through an open `AuditStore`); kept in its own module so
the queue's records live in one place. Tables come from migrations m030 and m031.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from hearth.audit.approvals import cancel_pending_of_run
from hearth.audit.store import AuditStore, RunRecord, immediate, new_run_id
from hearth.intake import Parsed, RequestRefused
from hearth.queue import printable
from hearth.request import Request


@dataclass(frozen=True)
class FileFacts:
    """What the queue knows about a file before trusting it: its name, size and digest."""

    file: str
    size: int | None = None
    sha256: str | None = None

    @classmethod
    def of(cls, file: str, data: bytes | None) -> FileFacts:
        """`file` may hold undecodable bytes (surrogate escapes); the record holds text."""
        if data is None:
            return cls(printable(file))
        return cls(printable(file), len(data), hashlib.sha256(data).hexdigest())


def admit(audit: AuditStore, parsed: Parsed, facts: FileFacts, claimed_at: str) -> None:
    """Record an accepted request; RequestRefused if its id already names a run or a request.

    Checked and written in one transaction, so two spawners cannot both admit one id.
    """
    request = parsed.request
    with immediate(audit.conn):
        taken = _taken(audit, request.id)
        if taken:
            raise RequestRefused(f"duplicate id: {taken}; give the request a new id")
        audit.insert("requests", _request_row(parsed, facts, claimed_at))


def ensure_request_row(audit: AuditStore, parsed: Parsed, facts: FileFacts, claimed_at: str) -> None:
    """Record the request if its spawner did not (a request moved into claimed/ by hand)."""
    audit.insert("requests", _request_row(parsed, facts, claimed_at), or_ignore=True)


def recorded_request(audit: AuditStore, request_id: str) -> tuple[Parsed, str | None] | None:
    """The request as the spawner checked and recorded it, with the sha256 of the bytes it read.

    The run executes this, never a second reading of the file: what runs is what was recorded.
    """
    row = next(iter(audit.rows("select shape, sha256, body from requests where id = ?", [request_id])), None)
    if row is None:
        return None
    return Parsed(Request.model_validate_json(row["body"]), row["shape"]), row["sha256"]


def _request_row(parsed: Parsed, facts: FileFacts, claimed_at: str) -> dict[str, object]:
    request = parsed.request
    return {
        "id": request.id,
        "shape": parsed.shape,
        "file": facts.file,
        "size": facts.size,
        "sha256": facts.sha256,
        "source": request.source,
        "requested_by": request.requested_by,
        "created_at": request.created_at.isoformat() if request.created_at else None,
        "claimed_at": claimed_at,
        "body": request.model_dump_json(exclude_none=True),
    }


def _taken(audit: AuditStore, request_id: str) -> str | None:
    run = audit.run(request_id)
    if run:
        return f"run {request_id} already exists (status {run['status']})"
    if audit.conn.execute("select 1 from requests where id = ?", [request_id]).fetchone():
        return f"request {request_id} was already accepted"
    return None


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
    run_id = run_id or new_run_id()
    with immediate(audit.conn):
        if audit.run(run_id) is None:
            audit.start_run(_rejected_run(run_id, request))
        audit.finish_run(run_id, status="rejected", error=reason, iterations=0)
        audit.insert(
            "rejections",
            {
                "run_id": run_id,
                "at": audit.clock(),
                "file": facts.file,
                "request_id": request.id if request else request_id,
                "size": facts.size,
                "sha256": facts.sha256,
                "reason": reason,
                "kept_as": kept_as,
            },
        )
    return run_id


def _rejected_run(run_id: str, request: Request | None) -> RunRecord:
    if request is None:  # nothing trustworthy was read: the rejections row says what the file was
        return RunRecord(id=run_id, agent_name="", model="", goal="", mode="", source="unknown", status="rejected")
    return RunRecord(
        id=run_id,
        agent_name=request.agent_name,
        model=request.model or "",
        goal=request.goal,
        mode=request.mode or "",
        source=request.source,
        requested_by=request.requested_by,
        status="rejected",
        label=request.label,
    )


def record_unfinished(audit: AuditStore, request_id: str, status: str, reason: str) -> None:
    """Close the run of a claimed request that ended without its own final record."""
    with immediate(audit.conn):
        if audit.run(request_id) is None:
            audit.start_run(_run_from_request_row(audit, request_id))
        audit.finish_run(request_id, status=status, error=reason)
        cancel_pending_of_run(audit, request_id, f"its run ended {status}: {reason}")


def _run_from_request_row(audit: AuditStore, request_id: str) -> RunRecord:
    row = next(iter(audit.rows("select * from requests where id = ?", [request_id])), None)
    body = json.loads(row["body"]) if row else {}
    return RunRecord(
        id=request_id,
        agent_name=body.get("agent_name", ""),
        model=body.get("model", ""),
        goal=body.get("goal", ""),
        mode=body.get("mode", ""),
        source=body.get("source", "unknown"),
        requested_by=body.get("requested_by", ""),
        label=body.get("label"),
    )


def run_status_readonly(path: Path, run_id: str) -> str | None:
    """A run's status, read without writing anything; None when absent or unreadable.

    For `hearth enqueue`, which submitters run: they may not be able to read the audit at all
    and must never create or migrate it. The spawner checks again with full access.
    """
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=2.0)
        try:
            row = conn.execute("select status from runs where id = ?", [run_id]).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    return row[0] if row else None
