"""The keys of the OpenAI-compatible door and the calls they made.

Part of the list in hearth/audit/migrations/__init__.py. Never edit a shipped migration: its
name is recorded in each audit.db's `_migrations` as applied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils


def m160_api_keys(db: sqlite_utils.Database) -> None:
    """The keys of hearth's OpenAI-compatible door (hearth/doors/keys.py): per name, the SHA-256 of the
    key (never the key: it is printed once), the profiles it may use (JSON, empty: any), its daily
    token budget and its requests per minute (0: no limit), who made it and when."""
    db.table("api_keys").create(
        {
            "name": str,
            "digest": str,
            "agents": str,
            "budget_tokens": int,
            "rate_per_min": int,
            "created_at": str,
            "created_by": str,
        },
        pk="name",
    )
    db.table("api_keys").create_index(["digest"], unique=True)


def m161_api_calls(db: sqlite_utils.Database) -> None:
    """Each call a key made that queued a run: when, the run, and the conversation it belongs to (a
    client's next turn continues the conversation's latest run). The rate limit counts these rows."""
    db.table("api_calls").create(
        {"id": int, "key": str, "at": str, "run_id": str, "conversation": str},
        pk="id",
    )
    db.table("api_calls").create_index(["key", "at"])
    db.table("api_calls").create_index(["key", "conversation"])
