"""Approvals and the standing rules made from them.

Part of the list in hearth/audit/migrations/__init__.py. Never edit a shipped migration: its
name is recorded in each audit.db's `_migrations` as applied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils


def m010_approvals(db: sqlite_utils.Database) -> None:
    """One row per approval asked: the exact call (its hash binds the decision to it) and the verdict."""
    db.table("approvals").create(
        {
            "id": str,
            "run_id": str,
            "tool": str,
            "arguments": str,
            "call_hash": str,
            "reason": str,
            "via": str,
            "status": str,
            "requested_at": str,
            "expires_at": str,
            "timeout_s": float,
            "decided_at": str,
            "decided_by": str,
            "note": str,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
    )
    db.table("approvals").create_index(["status"])
    db.table("approvals").create_index(["run_id"])


def m121_standing_rules(db: sqlite_utils.Database) -> None:
    """Standing approvals (hearth/leash/rules.py): a profile's tool, and for a command its one simple
    command (the head and the argument words as JSON), who made it from which approval and when;
    a removed rule keeps its row, with who removed it and when."""
    db.table("standing_rules").create(
        {
            "id": str,
            "profile": str,
            "tool": str,
            "head": str,
            "arguments": str,
            "made_by": str,
            "made_at": str,
            "approval_id": str,
            "removed_by": str,
            "removed_at": str,
        },
        pk="id",
    )
    db.table("standing_rules").create_index(["profile", "tool"])
