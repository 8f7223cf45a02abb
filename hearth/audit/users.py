"""hearth's users (`users`), their rights per agent profile (`memberships`), their sign-in tokens
(`user_tokens`: the SHA-256 of each) and the platforms' sender ids mapped to them
(`channel_identities`): every statement on the four tables. hearth/users/ decides what the rows
mean; this module only keeps them."""

from __future__ import annotations

from typing import Any

from hearth.audit.store import AuditStore, Rows, immediate


def user_row(db: Rows, name: str) -> dict[str, Any] | None:
    rows = db.rows("select * from users where name = ?", [name])
    return rows[0] if rows else None


def all_users(db: Rows) -> list[dict[str, Any]]:
    return db.rows("select * from users order by built_in desc, name")


def add_user(audit: AuditStore, row: dict[str, Any]) -> bool:
    """Store a user's row; False, and nothing written, when the name is taken."""
    with immediate(audit.conn):
        if user_row(audit, row["name"]) is not None:
            return False
        audit.insert("users", row)
    return True


def set_user(audit: AuditStore, name: str, fields: dict[str, Any]) -> None:
    audit.update("users", name, fields, pk="name")


def remove_user(audit: AuditStore, name: str) -> None:
    """The user and everything that is theirs here: memberships, tokens, channel identities (their
    runs and decisions stay as recorded: the audit keeps who did what)."""
    with immediate(audit.conn):
        for statement in (
            "delete from memberships where user = ?",
            "delete from user_tokens where user = ?",
            "delete from channel_identities where user = ?",
            "delete from users where name = ?",
        ):
            audit.conn.execute(statement, [name])


def memberships(db: Rows, user: str = "") -> list[dict[str, Any]]:
    """A user's memberships (every user's with ''), by profile."""
    if user:
        return db.rows("select * from memberships where user = ? order by profile, right", [user])
    return db.rows("select * from memberships order by user, profile, right")


def grant(audit: AuditStore, row: dict[str, Any]) -> bool:
    """False when the user already had that right in that profile (nothing written)."""
    with immediate(audit.conn):
        sql = "select 1 from memberships where user = ? and profile = ? and right = ?"
        if audit.rows(sql, [row["user"], row["profile"], row["right"]]):
            return False
        audit.insert("memberships", row)
    return True


def revoke(audit: AuditStore, user: str, profile: str, right: str) -> bool:
    """False when there was no such membership."""
    sql = "delete from memberships where user = ? and profile = ? and right = ?"
    return audit.conn.execute(sql, [user, profile, right]).rowcount > 0


def add_token(audit: AuditStore, row: dict[str, Any]) -> None:
    audit.insert("user_tokens", row)


def user_with_digest(db: Rows, digest: str) -> str | None:
    rows = db.rows("select user from user_tokens where digest = ?", [digest])
    return rows[0]["user"] if rows else None


def tokens_of(db: Rows, user: str) -> list[dict[str, Any]]:
    return db.rows("select id, user, created_at, created_by from user_tokens where user = ? order by id", [user])


def token_digests(db: Rows, user: str, created_by: str) -> dict[str, str]:
    """The digests of a user's tokens that `created_by` made, each to its token's id."""
    sql = "select id, digest from user_tokens where user = ? and created_by = ?"
    return {row["digest"]: row["id"] for row in db.rows(sql, [user, created_by])}


def drop_token(audit: AuditStore, token_id: str) -> None:
    audit.conn.execute("delete from user_tokens where id = ?", [token_id])


def drop_tokens(audit: AuditStore, user: str) -> int:
    return audit.conn.execute("delete from user_tokens where user = ?", [user]).rowcount


def identity_user(db: Rows, channel: str, address: str) -> str | None:
    """The user a platform's sender id maps to."""
    rows = db.rows("select user from channel_identities where channel = ? and address = ?", [channel, address])
    return rows[0]["user"] if rows else None


def identities(db: Rows, channel: str = "", user: str = "") -> list[dict[str, Any]]:
    """The mapped sender ids, of one channel and/or one user ('' for any)."""
    return db.rows(
        "select * from channel_identities where (? = '' or channel = ?) and (? = '' or user = ?)"
        " order by channel, user, address",
        [channel, channel, user, user],
    )


def add_identity(audit: AuditStore, row: dict[str, Any]) -> str | None:
    """Map a sender id to a user; the user it maps to already (nothing written) when it is taken."""
    with immediate(audit.conn):
        taken = identity_user(audit, row["channel"], row["address"])
        if taken is None:
            audit.insert("channel_identities", row)
    return taken


def remove_identity(audit: AuditStore, channel: str, address: str) -> bool:
    sql = "delete from channel_identities where channel = ? and address = ?"
    return audit.conn.execute(sql, [channel, address]).rowcount > 0
