"""Approvals in the audit store: one row per dangerous call that had to ask, and its verdict.

    pending --hearth approve ID--> approved
            --hearth deny ID-----> denied
            --nobody in time-----> expired      (a headless run treats it as deny)
            --run interrupted----> cancelled    (the call never runs)

Each move out of `pending` is one compare-and-set inside a write transaction, so an approve that
races the timeout has exactly one winner. An approval is bound to the call it was asked for:
`call_hash` is SHA-256 over the tool name and the canonical JSON of its arguments, and the run
that waits checks it before it runs anything. Decisions taken at a terminal are recorded here too
(born decided), so every verdict, who gave it, when, and the timeout are in one table.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import secrets
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime, timedelta
from typing import Any

from agent.clock import stamp
from hearth.audit.store import AuditStore, Rows, immediate
from hearth.errors import HearthError, NotFound

REVIEW_LIMIT = 64_000  # characters of arguments a person can be asked to review
Clock = Callable[[], datetime]


class ApprovalClosed(HearthError):
    """The approval was already decided or has expired; nothing was changed (exit 1)."""


@dataclass
class Approval:
    id: str
    run_id: str
    tool: str
    arguments: str  # canonical JSON
    call_hash: str
    reason: str
    via: str  # 'queue' (decided from another shell) | 'terminal'
    status: str  # pending | approved | denied | expired | cancelled
    requested_at: str
    expires_at: str
    timeout_s: float
    decided_at: str | None = None
    decided_by: str | None = None
    note: str | None = None

    def status_at(self, now: str) -> str:
        """The status as a reader should see it: a pending row past its deadline is expired."""
        return "expired" if self.status == "pending" and now >= self.expires_at else self.status


def parse_stamp(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def utc_clock() -> datetime:
    return datetime.now(UTC)


def canonical_arguments(args: dict[str, Any]) -> str:
    return json.dumps(args, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def call_hash(tool: str, args: dict[str, Any]) -> str:
    return hashlib.sha256(f"{tool}\0{canonical_arguments(args)}".encode()).hexdigest()


def operator_name() -> str:
    """Who is deciding: the login name, and the sudo caller behind it if there is one."""
    try:
        name = pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        name = f"uid {os.getuid()}"
    caller = os.environ.get("SUDO_USER")
    return f"{caller} (sudo as {name})" if caller and caller != name else name


def ask(
    audit: AuditStore,
    run_id: str,
    tool: str,
    args: dict[str, Any],
    reason: str,
    *,
    timeout_s: float,
    via: str = "queue",
    now: Clock = utc_clock,
) -> Approval:
    """Write a pending approval for this exact call; it expires ``timeout_s`` from now."""
    approval = pending(run_id, tool, args, reason, timeout_s=timeout_s, via=via, now=now)
    insert(audit, asdict(approval))
    return approval


def insert(audit: AuditStore, row: dict[str, Any]) -> None:
    """An approval's whole row, as asked (pending) or born decided."""
    audit.insert("approvals", row)


def pending(
    run_id: str, tool: str, args: dict[str, Any], reason: str, *, timeout_s: float, via: str = "queue", now: Clock
) -> Approval:
    """A pending approval for this exact call, not yet written anywhere; it expires ``timeout_s`` from now."""
    started = now()
    return Approval(
        id=secrets.token_hex(5),
        run_id=run_id,
        tool=tool,
        arguments=canonical_arguments(args),
        call_hash=call_hash(tool, args),
        reason=reason,
        via=via,
        status="pending",
        requested_at=stamp(started),
        expires_at=stamp(started + timedelta(seconds=timeout_s)),
        timeout_s=timeout_s,
    )


def on_the_spot(
    run_id: str,
    tool: str,
    args: dict[str, Any],
    reason: str,
    *,
    granted: bool,
    by: str,
    note: str = "",
    timeout_s: float = 0.0,
    asked_at: datetime | None = None,
    now: Clock = utc_clock,
) -> Approval:
    """An approval decided on the spot (at a terminal, or by policy), born decided: recorded like any other."""
    asked = asked_at or now()
    approval = pending(run_id, tool, args, reason, timeout_s=timeout_s, via="terminal", now=lambda: asked)
    status = "approved" if granted else "expired" if by == "timeout" else "denied"
    decided = {"status": status, "decided_at": stamp(now()), "decided_by": by, "note": note or None}
    return Approval(**{**asdict(approval), **decided})


def find(audit: AuditStore, ident: str) -> Approval | None:
    """An approval by its id or a unique prefix of at least 4 characters."""
    if len(ident) >= 4 and ident.isalnum():
        row = audit.find_by_id_or_prefix("approvals", ident)
    else:
        row = next(iter(audit.rows("select * from approvals where id = ?", [ident])), None)
    return from_row(row) if row else None


def row_of(db: Rows, approval_id: str) -> dict[str, Any] | None:
    """An approval's row by its exact id."""
    rows = db.rows("select * from approvals where id = ?", [approval_id])
    return rows[0] if rows else None


def decided_of_run(db: Rows, run_id: str) -> list[dict[str, Any]]:
    """The run's approvals that are no longer pending."""
    return db.rows("select * from approvals where run_id = ? and status != 'pending'", [run_id])


def waiting(db: Rows, now: str) -> list[Approval]:
    """Every approval still pending and not past its deadline at `now`, in no order."""
    return [from_row(r) for r in db.rows("select * from approvals where status = 'pending' and expires_at > ?", [now])]


def listing(audit: AuditStore, *, everything: bool = False, limit: int = 50, now: Clock = utc_clock) -> list[Approval]:
    """Pending approvals still open (oldest first), or with ``everything`` the latest of any status."""
    if everything:
        rows = audit.rows("select * from approvals order by requested_at desc, rowid desc limit ?", [limit])
        return [from_row(r) for r in rows]
    rows = audit.rows(
        "select * from approvals where status = 'pending' and expires_at > ? order by requested_at, rowid limit ?",
        [stamp(now()), limit],
    )
    return [from_row(r) for r in rows]


def decide(
    audit: AuditStore, ident: str, *, granted: bool, by: str, note: str = "", now: Clock = utc_clock
) -> Approval:
    """Approve or deny a pending approval; ApprovalClosed when it is decided or expired already."""
    with immediate(audit.conn):
        approval = find(audit, ident)
        if approval is None:
            raise NotFound(f"no approval with id {ident!r}; see: hearth approvals")
        moment = stamp(now())
        closed = _closed_reason(approval, moment)
        if closed is None:
            status = "approved" if granted else "denied"
            close(audit, approval.id, status, moment, by, note or None)
        elif approval.status == "pending":  # past its deadline: say so in the row too
            close(audit, approval.id, "expired", approval.expires_at, "timeout", timeout_note(approval))
    if closed is not None:
        raise ApprovalClosed(closed)
    found = find(audit, approval.id)
    assert found is not None
    return found


def _closed_reason(approval: Approval, moment: str) -> str | None:
    status = approval.status_at(moment)
    if status == "pending":
        return None
    if status == "expired":
        return f"approval {approval.id} expired at {approval.expires_at} (its run treats that as deny); nothing changed"
    return f"approval {approval.id} was already {status} by {approval.decided_by} at {approval.decided_at}; nothing changed"


def timeout_note(approval: Approval) -> str:
    return f"no decision within {approval.timeout_s:g}s; an unanswered approval is a deny"


def close(
    audit: AuditStore, approval_id: str, status: str, moment: str | None, by: str | None, note: str | None
) -> bool:
    """Compare-and-set out of pending; False when someone else moved it first."""
    cursor = audit.conn.execute(
        "update approvals set status = ?, decided_at = ?, decided_by = ?, note = ? where id = ? and status = 'pending'",
        [status, moment, by, note, approval_id],
    )
    return cursor.rowcount == 1


def copy_verdict(audit: AuditStore, given: Approval) -> bool:
    """A verdict given elsewhere (a fleet's hub, through hearth/leash/decisions.py there) copied onto
    this audit's row of the approval while it is still pending here; False when it is not."""
    return close(audit, given.id, given.status, given.decided_at, given.decided_by, given.note)


def cancel_pending_of_run(audit: AuditStore, run_id: str, note: str) -> int:
    """Close what a dead run left waiting (it was killed and cannot run the call); how many were open."""
    cursor = audit.conn.execute(
        "update approvals set status = 'cancelled', decided_at = ?, decided_by = 'run', note = ? "
        "where run_id = ? and status = 'pending'",
        [stamp(utc_clock()), note, run_id],
    )
    return cursor.rowcount


def from_row(row: dict[str, Any]) -> Approval:
    names = {f.name for f in fields(Approval)}
    return Approval(**{k: v for k, v in row.items() if k in names})


def count_of_run(db: Rows, run_id: str) -> int:
    """How many approvals the run asked (or had decided on the spot)."""
    return int(db.rows("select count(*) as n from approvals where run_id = ?", [run_id])[0]["n"])


def waits_of(db: Rows, run_id: str) -> list[dict[str, Any]]:
    """When each of the run's approvals was asked and decided, and its status: the run's waits."""
    return db.rows("select requested_at, decided_at, status from approvals where run_id = ?", [run_id])


def pending_with_goal(db: Rows, now: str, limit: int = 100) -> list[dict[str, Any]]:
    """The approvals still open at `now`, oldest first, each with its run's goal (240 characters)."""
    sql = """select a.*, substr(r.goal, 1, 240) as goal from approvals a left join runs r on r.id = a.run_id
             where a.status = 'pending' and a.expires_at > ? order by a.requested_at, a.rowid limit ?"""
    return db.rows(sql, [now, limit])


def recent_decisions(db: Rows, limit: int = 30) -> list[dict[str, Any]]:
    """The latest approvals no longer pending, newest decision first."""
    sql = "select * from approvals where status != 'pending' order by coalesce(decided_at, requested_at) desc limit ?"
    return db.rows(sql, [limit])


def of_run(db: Rows, run_id: str) -> list[dict[str, Any]]:
    """The run's approvals in the order they were asked."""
    return db.rows("select * from approvals where run_id = ? order by requested_at", [run_id])


def latest_queued(db: Rows, run_id: str) -> Approval | None:
    """The run's latest approval asked of someone elsewhere (via the queue), whatever its status."""
    found = db.rows(
        "select * from approvals where run_id = ? and via = 'queue' order by requested_at desc, rowid desc limit 1",
        [run_id],
    )
    return from_row(found[0]) if found else None
