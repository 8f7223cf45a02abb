"""Alerts sent, the signed links that decided approvals, and the reminders claimed.

Part of the list in hearth/audit/migrations/__init__.py. Never edit a shipped migration: its
name is recorded in each audit.db's `_migrations` as applied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils


def m091_alerts(db: sqlite_utils.Database) -> None:
    """Every alert hearth tried to send (hearth/leash/alerts.py): to which destination, for what, and
    whether it was sent or failed with the error."""
    db.table("alerts").create(
        {
            "id": int,
            "at": str,
            "event": str,
            "run_id": str,
            "destination": str,
            "status": str,
            "attempts": int,
            "error": str,
            "title": str,
            "body": str,
        },
        pk="id",
    )
    db.table("alerts").create_index(["at"])


def m122_alert_actions(db: sqlite_utils.Database) -> None:
    """Each signed alert link that decided an approval (hearth/leash/actions.py): the SHA-256 of the
    token (never the token: it was a capability), its approval and decision, when and by whom it was
    used. A token whose digest is here is refused: a link decides once.

    `alert_reminders` claims each reminder of a waiting approval (`after`: still undecided after the
    reminder interval; `before`: shortly before it expires) before it is sent, so two sweeps in two
    processes send it once; what was sent is in `alerts` as any alert."""
    db.table("alert_actions").create(
        {"digest": str, "approval_id": str, "decision": str, "used_at": str, "used_by": str},
        pk="digest",
    )
    db.table("alert_reminders").create({"approval_id": str, "kind": str, "at": str}, pk=("approval_id", "kind"))
