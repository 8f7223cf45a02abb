"""What an operator changed or tried to change from the command center's operator pages
(`operator_actions`, hearth/web/routes/operate.py): every statement on it."""

from __future__ import annotations

from typing import Any

from hearth.audit.store import AuditStore, Rows

COLUMNS = ("at", "by", "area", "action", "subject", "ok", "detail")


def record(audit: AuditStore, row: dict[str, Any]) -> None:
    """One action (every one of COLUMNS), allowed (`ok` 1) or refused with its reason in `detail`."""
    audit.conn.execute(
        "insert into operator_actions (at, by, area, action, subject, ok, detail) values (?, ?, ?, ?, ?, ?, ?)",
        [row[name] for name in COLUMNS],
    )


def recent(db: Rows, area: str, limit: int) -> list[dict[str, Any]]:
    """The area's latest actions, newest first."""
    return db.rows("select * from operator_actions where area = ? order by id desc limit ?", [area, limit])
