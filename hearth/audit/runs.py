"""A run's row (`runs`, and its full-text index `runs_fts`): every statement on them.

The AuditStore's run methods write and read single runs; the reads below serve the lists, the
counts and the command center, through the store or its read-only reader (`Rows`).
"""

from __future__ import annotations

from hearth.audit.store import Rows


def tokens_since(db: Rows, source: str, since: str) -> int:
    """The tokens of the runs `source` launched from `since` on, as their rows count them."""
    sql = "select sum(coalesce(tokens_in, 0) + coalesce(tokens_out, 0)) as n from runs where source = ? and started_at >= ?"
    return int(db.rows(sql, [source, since])[0]["n"] or 0)
