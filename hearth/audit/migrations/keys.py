"""The keys of the OpenAI-compatible door and the calls they made.

Part of the list in hearth/audit/migrations/__init__.py. Never edit a shipped migration: its
name is recorded in each audit.db's `_migrations` as applied.
"""

from __future__ import annotations

import secrets
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


def m211_api_key_ids(db: sqlite_utils.Database) -> None:
    """A key is its id, not its name (a key removed and made again under the same name is another
    key): each key gets a random `id`, and each call the id of the key that made it (`key_id`,
    which a conversation and the day's budget are found by) and the tokens it reserved of the key's
    budget for its run (`reserved`: admission counts what runs still going may spend, so calls made
    at once cannot spend past it). A call already kept is given its key's id only when it was made
    after that key was: one made before belongs to a key since removed, and stays no one's."""
    db.table("api_keys").add_column("id", str)
    for name in [row["name"] for row in db.query("select name from api_keys")]:
        db.execute("update api_keys set id = ? where name = ?", [f"key-{secrets.token_hex(8)}", name])
    db.table("api_keys").create_index(["id"], unique=True)
    db.table("api_calls").add_column("key_id", str)
    db.table("api_calls").add_column("reserved", int)
    db.execute(
        "update api_calls set key_id = (select k.id from api_keys k where k.name = api_calls.key"
        " and k.created_at <= api_calls.at)"
    )
    db.table("api_calls").create_index(["key_id", "conversation"])
    db.table("api_calls").create_index(["key_id", "at"])


def m231_api_key_users(db: sqlite_utils.Database) -> None:
    """A `/v1` key belongs to a user (`user`), whose rights its calls have: the keys made before users
    belong to the built-in `operator`, who could do everything, as the keys could. Each call keeps
    the user it was made for (a key's calls stay theirs in the record)."""
    db.table("api_keys").add_column("user", str)
    db.execute("update api_keys set user = 'operator' where user is null")
    db.table("api_calls").add_column("user", str)
    db.execute("update api_calls set user = 'operator' where key_id is not null")
