"""The queue's rows in the audit: accepted requests, rejections, and runs that never finished.

Part of the audit store (it writes only through an open `AuditStore`); kept in its own module so
the queue's records live in one place. Tables come from migrations m030 and m031.

It speaks in rows and values, never in the queue's types: a request reaches it as its JSON body
with the fields its row indexes (`Accepted`, which hearth/queue/ledger.py makes of a
`Parsed` request on the queue's side), so the audit sits
below the queue and never imports it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hearth.audit.approvals import cancel_pending_of_run
from hearth.audit.store import AuditStore, Rows, RunRecord, immediate, new_run_id
from hearth.ids import printable


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


@dataclass(frozen=True)
class Accepted:
    """A request as the audit keeps it: the fields its row indexes, and its body (the request's JSON)."""

    id: str
    shape: str  # "v1" | "legacy"
    source: str
    requested_by: str
    created_at: str | None  # ISO 8601, as the sender gave it
    body: str


def insert_request(audit: AuditStore, accepted: Accepted, facts: FileFacts, claimed_at: str) -> str | None:
    """Record an accepted request; the reason instead when its id already names a run or a request.

    Checked and written in one transaction, so two spawners cannot both admit one id.
    """
    with immediate(audit.conn):
        taken = _taken(audit, accepted.id)
        if taken:
            return taken
        audit.insert("requests", _request_row(accepted, facts, claimed_at))
    return None


def ensure_request(audit: AuditStore, accepted: Accepted, facts: FileFacts, claimed_at: str) -> None:
    """Record the request if its spawner did not (a request moved into claimed/ by hand)."""
    audit.insert("requests", _request_row(accepted, facts, claimed_at), or_ignore=True)


def recorded(audit: AuditStore, request_id: str) -> tuple[str, str, str | None] | None:
    """The shape and body of a request as the spawner recorded it, with the sha256 of the bytes it
    read; None if absent."""
    row = next(iter(audit.rows("select shape, sha256, body from requests where id = ?", [request_id])), None)
    if row is None:
        return None
    return row["shape"], row["body"], row["sha256"]


def _request_row(accepted: Accepted, facts: FileFacts, claimed_at: str) -> dict[str, object]:
    return {
        "id": accepted.id,
        "shape": accepted.shape,
        "file": facts.file,
        "size": facts.size,
        "sha256": facts.sha256,
        "source": accepted.source,
        "requested_by": accepted.requested_by,
        "created_at": accepted.created_at,
        "claimed_at": claimed_at,
        "body": accepted.body,
    }


def _taken(audit: AuditStore, request_id: str) -> str | None:
    run = audit.run(request_id)
    if run:
        return f"run {request_id} already exists (status {run['status']})"
    if audit.conn.execute("select 1 from requests where id = ?", [request_id]).fetchone():
        return f"request {request_id} was already accepted"
    return None


def record_rejected(
    audit: AuditStore,
    reason: str,
    facts: FileFacts,
    *,
    kept_as: str,
    run: RunRecord | None = None,
    request_id: str | None = None,
    run_id: str | None = None,
) -> str:
    """A `rejected` run row (`run`, else a bare one; a fresh id unless the run exists) and the
    rejection's file facts."""
    run_id = run_id or new_run_id()
    with immediate(audit.conn):
        if audit.run(run_id) is None:
            audit.start_run(_rejected_run(run_id, run))
        audit.finish_run(run_id, status="rejected", error=reason, iterations=0)
        audit.insert(
            "rejections",
            {
                "run_id": run_id,
                "at": audit.clock(),
                "file": facts.file,
                "request_id": request_id,
                "size": facts.size,
                "sha256": facts.sha256,
                "reason": reason,
                "kept_as": kept_as,
            },
        )
    return run_id


def _rejected_run(run_id: str, run: RunRecord | None) -> RunRecord:
    if run is None:  # nothing trustworthy was read: the rejections row says what the file was
        return RunRecord(id=run_id, agent_name="", model="", goal="", mode="", source="unknown", status="rejected")
    return replace(run, id=run_id, status="rejected")


def record_unfinished(audit: AuditStore, request_id: str, status: str, reason: str) -> None:
    """Close the run of a claimed request that ended without its own final record."""
    with immediate(audit.conn):
        if audit.run(request_id) is None:
            audit.start_run(_run_from_request_row(audit, request_id))
        audit.finish_run(request_id, status=status, error=reason)
        cancel_pending_of_run(audit, request_id, f"its run ended {status}: {reason}")


def _run_from_request_row(audit: AuditStore, request_id: str) -> RunRecord:
    row = request_row(audit, request_id)
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


def request_row(db: Rows, request_id: str) -> dict[str, Any] | None:
    """The request as accepted (its body and file facts), or None."""
    found = db.rows("select * from requests where id = ?", [request_id])
    return found[0] if found else None


def refusal_of(db: Rows, request_id: str) -> str | None:
    """Why the queue refused the request with this id, if it did."""
    found = db.rows("select reason from rejections where request_id = ? limit 1", [request_id])
    return found[0]["reason"] if found else None
