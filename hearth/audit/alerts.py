"""Alerts (hearth/leash/alerts.py decides what to send; this module holds every statement on the
three tables):

    alerts            every alert hearth tried to send: to which destination, for what, sent or failed
    alert_actions     each signed alert link that decided an approval: the SHA-256 of its token, once
    alert_reminders   each reminder of a waiting approval, claimed before it is sent
"""

from __future__ import annotations

from typing import Any

from hearth.audit.store import AuditStore, Rows

COLUMNS = ("at", "event", "run_id", "destination", "status", "attempts", "error", "title", "body")
LISTED = "id, at, event, run_id, destination, status, attempts, error, title"  # a list leaves the bodies out


def record(audit: AuditStore, row: dict[str, Any]) -> None:
    """One alert tried (every one of COLUMNS)."""
    marks = ", ".join("?" * len(COLUMNS))
    audit.conn.execute(f"insert into alerts ({', '.join(COLUMNS)}) values ({marks})", [row[c] for c in COLUMNS])


def recent(db: Rows, limit: int, *, bodies: bool = False) -> list[dict[str, Any]]:
    """The latest alerts, newest first; with `bodies`, what each said too."""
    sql = "select * from alerts" if bodies else f"select {LISTED} from alerts"
    return db.rows(sql + " order by id desc limit ?", [limit])


def failures(db: Rows, among: int = 1000) -> list[dict[str, Any]]:
    """Per destination, how many of the latest `among` alerts failed and when it last did."""
    return db.rows(
        "select destination, count(*) as failed, max(at) as last_at from alerts where status = 'failed' "
        "and id > (select coalesce(max(id), 0) - ? from alerts) group by destination order by last_at desc",
        [among],
    )


def link_used(db: Rows, digest: str) -> dict[str, Any] | None:
    """When, by whom and for what the link whose token has this SHA-256 was used; None: never."""
    rows = db.rows("select * from alert_actions where digest = ?", [digest])
    return rows[0] if rows else None


def use_link(audit: AuditStore, digest: str, approval_id: str, decision: str, at: str, by: str) -> None:
    """The link is used: a second use of its token is refused (the digest is the key)."""
    audit.conn.execute(
        "insert into alert_actions (digest, approval_id, decision, used_at, used_by) values (?, ?, ?, ?, ?)",
        [digest, approval_id, decision, at, by],
    )


def claim_reminder(audit: AuditStore, approval_id: str, kind: str, at: str) -> bool:
    """Claim the reminder (`after` | `before`) of an approval; False when another sweep has."""
    cursor = audit.conn.execute(
        "insert or ignore into alert_reminders (approval_id, kind, at) values (?, ?, ?)", [approval_id, kind, at]
    )
    return cursor.rowcount == 1
