"""The chat channels: what arrived, the conversations, what was sent and whether it arrived, and
each channel's state.

Part of the list in hearth/audit/migrations/__init__.py. Never edit a shipped migration: its
name is recorded in each audit.db's `_migrations` as applied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils


# the columns of `channel_updates` as m232 made them
_M232_UPDATES: dict[str, type] = {
    "channel": str,
    "update_id": str,
    "at": str,
    "kind": str,
    "sender": str,
    "chat": str,
    "user": str,
    "verdict": str,
    "detail": str,
    "run_id": str,
}


# the columns of `channel_chats` as m232 made them
_M232_CHATS: dict[str, type] = {
    "channel": str,
    "chat": str,
    "user": str,
    "run_id": str,
    "progress_id": str,
    "shown": str,
    "answered": str,
    "updated_at": str,
}


# the columns of `deliveries` as m232 made them
_M232_DELIVERIES: dict[str, type] = {
    "id": int,
    "channel": str,
    "chat": str,
    "kind": str,
    "subject": str,
    "text": str,
    "buttons": str,
    "status": str,
    "message_id": str,
    "attempts": int,
    "next_at": str,
    "last_error": str,
    "created_at": str,
    "delivered_at": str,
    "mission": str,
}


def m232_channels(db: sqlite_utils.Database) -> None:
    """Every update a platform delivered (`channel_updates`: its own id is the key, so a replay is
    seen and acted on once; the sender, the user it mapped to, what hearth made of it), each chat's
    conversation (`channel_chats`: its latest run and the message that shows its progress), every
    message hearth sent or must send (`deliveries`: delivered only once the platform acknowledged
    it, with the platform's message id; retried with backoff), and each channel's state
    (`channel_state`: up, backing off, stopped; its last error)."""
    db.table("channel_updates").create(_M232_UPDATES, pk=("channel", "update_id"))
    db.table("channel_updates").create_index(["channel", "sender", "at"])
    db.table("channel_chats").create(_M232_CHATS, pk=("channel", "chat", "user"))
    db.table("deliveries").create(_M232_DELIVERIES, pk="id")
    db.table("deliveries").create_index(["status", "next_at"])
    db.table("deliveries").create_index(["channel", "chat", "kind", "subject"])
    db.table("deliveries").create_index(["mission"])
    db.table("channel_state").create(
        {"channel": str, "state": str, "since": str, "last_error": str, "updated_at": str}, pk="channel"
    )


def m233_channel_attachments(db: sqlite_utils.Database) -> None:
    """Every attachment a message brought (`channel_attachments`): the update it came with, the
    run it went to, the name it was sent as and the one it is kept under in the workspace's
    attachments/ ('' when refused), its size and SHA-256, and whether it was taken, renamed or
    refused, and why."""
    columns: dict[str, type] = {"id": int, "channel": str, "update_id": str, "run_id": str, "at": str}
    columns |= {"sent_as": str, "name": str, "size": int, "sha256": str, "verdict": str, "reason": str}
    db.table("channel_attachments").create(columns, pk="id")
    db.table("channel_attachments").create_index(["run_id"])
    db.table("channel_attachments").create_index(["channel", "update_id"])
