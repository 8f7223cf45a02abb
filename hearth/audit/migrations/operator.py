"""What an operator changed from the command center's operator pages.

Part of the list in hearth/audit/migrations/__init__.py. Never edit a shipped migration: its
name is recorded in each audit.db's `_migrations` as applied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils


def m155_operator_actions(db: sqlite_utils.Database) -> None:
    """What an operator changed or tried to change from the command center's operator pages
    (hearth/web/routes/): budgets, missions, alerts' test sends, proposals' decisions. `ok` 0 is a
    refused change, with the one-line reason in `detail`; `subject` names what it was about."""
    db.table("operator_actions").create(
        {"id": int, "at": str, "by": str, "area": str, "action": str, "subject": str, "ok": int, "detail": str},
        pk="id",
    )
    db.table("operator_actions").create_index(["at"])
