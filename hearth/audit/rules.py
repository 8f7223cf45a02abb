"""Standing approvals (`standing_rules`): every statement on them. hearth/leash/rules.py decides
what a rule covers and when one may be made; a removed rule keeps its row, with who removed it."""

from __future__ import annotations

from typing import Any

from hearth.audit.store import AuditStore, Rows

COLUMNS = (
    "id",
    "profile",
    "tool",
    "head",
    "arguments",
    "made_by",
    "made_at",
    "approval_id",
    "removed_by",
    "removed_at",
)


def insert(audit: AuditStore, row: dict[str, Any]) -> None:
    """A new rule (every one of COLUMNS)."""
    marks = ", ".join("?" * len(COLUMNS))
    audit.conn.execute(f"insert into standing_rules ({', '.join(COLUMNS)}) values ({marks})", [row[c] for c in COLUMNS])


def active(db: Rows, profile: str, tool: str) -> list[dict[str, Any]]:
    """The rules standing for one tool in one profile, oldest first."""
    sql = "select * from standing_rules where profile = ? and tool = ? and removed_at is null order by made_at, rowid"
    return db.rows(sql, [profile, tool])


def listing(db: Rows, *, everything: bool = False) -> list[dict[str, Any]]:
    """The rules standing (with `everything`, the removed ones too), oldest first."""
    if everything:
        return db.rows("select * from standing_rules order by made_at, rowid")
    return db.rows("select * from standing_rules where removed_at is null order by made_at, rowid")


def find(audit: AuditStore, ident: str) -> dict[str, Any] | None:
    """A rule by its id, or (4 characters or more, letters and digits) a unique prefix of it."""
    if len(ident) >= 4 and ident.isalnum():
        return audit.find_by_id_or_prefix("standing_rules", ident)
    return next(iter(audit.rows("select * from standing_rules where id = ?", [ident])), None)


def remove(audit: AuditStore, rule_id: str, by: str, at: str) -> bool:
    """The rule stops covering calls from now on; False when it was removed already."""
    cursor = audit.conn.execute(
        "update standing_rules set removed_by = ?, removed_at = ? where id = ? and removed_at is null",
        [by, at, rule_id],
    )
    return cursor.rowcount == 1
