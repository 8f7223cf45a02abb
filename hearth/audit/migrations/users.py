"""hearth's users, what each may do in which agent profile, their sign-in tokens and the chat
identities the platforms vouch for.

Part of the list in hearth/audit/migrations/__init__.py. Never edit a shipped migration: its
name is recorded in each audit.db's `_migrations` as applied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils

# the two tokens `hearth serve` had before users (--token-file, --viewer-token-file) are these users
BUILT_IN = (("operator", "owner"), ("viewer", "viewer"))


def m230_users(db: sqlite_utils.Database) -> None:
    """Users (a name, a role: owner, operator or viewer; who made them, disabled or not, the profile
    a chat's first message runs under), memberships (one row per user, agent profile and right:
    launch or approve; profile `*` is every profile), sign-in tokens (the SHA-256 of each, never
    the token) and channel identities (a platform's sender id, mapped to one user). The command
    center's two tokens of before become two built-in users: `operator`, an owner as that token
    could do everything, and `viewer`."""
    db.table("users").create(
        {
            "name": str,
            "role": str,
            "created_at": str,
            "created_by": str,
            "disabled": int,
            "default_profile": str,
            "built_in": int,
        },
        pk="name",
    )
    db.table("memberships").create(
        {"user": str, "profile": str, "right": str, "granted_by": str, "granted_at": str},
        pk=("user", "profile", "right"),
    )
    db.table("user_tokens").create(
        {"id": str, "user": str, "digest": str, "created_at": str, "created_by": str}, pk="id"
    )
    db.table("user_tokens").create_index(["digest"], unique=True)
    db.table("channel_identities").create(
        {"channel": str, "address": str, "user": str, "created_at": str, "created_by": str},
        pk=("channel", "address"),
    )
    db.table("channel_identities").create_index(["user"])
    for name, role in BUILT_IN:
        db.execute(
            "insert or ignore into users (name, role, created_at, created_by, disabled, default_profile, built_in)"
            " values (?, ?, strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), 'hearth', 0, 'default', 1)",
            [name, role],
        )
