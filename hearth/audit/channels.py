"""The chat channels' record: every update a platform delivered (`channel_updates`), each chat's
conversation (`channel_chats`), every message sent or to send (`deliveries`), each channel's
state (`channel_state`) and every attachment (`channel_attachments`): every statement on the five
tables. hearth/channels/ decides what happens;
this module only keeps it."""

from __future__ import annotations

from typing import Any

from hearth.audit.store import AuditStore, Rows, immediate


# -- updates ---------------------------------------------------------------------------------------
def record_update(audit: AuditStore, row: dict[str, Any]) -> bool:
    """Keep an update by its platform id; False, and nothing written, when it was kept before (a
    replay: it is acted on once)."""
    with immediate(audit.conn):
        sql = "select 1 from channel_updates where channel = ? and update_id = ?"
        if audit.rows(sql, [row["channel"], row["update_id"]]):
            return False
        audit.insert("channel_updates", row)
    return True


def settle_update(audit: AuditStore, channel: str, update_id: str, fields: dict[str, Any]) -> None:
    """What hearth made of an update (its verdict, detail, user, run)."""
    audit.checked("channel_updates", fields, fixed=["channel", "update_id"])
    names = ", ".join(f'"{name}" = ?' for name in fields)
    sql = f"update channel_updates set {names} where channel = ? and update_id = ?"
    audit.conn.execute(sql, [*fields.values(), channel, update_id])


def last_update_id(db: Rows, channel: str) -> int:
    """The highest numeric update id kept (Telegram's offset goes on from it); 0 for none."""
    rows = db.rows(
        "select max(cast(update_id as integer)) as n from channel_updates where channel = ? and update_id glob '[0-9]*'",
        [channel],
    )
    return int(rows[0]["n"] or 0) if rows else 0


def count_from(db: Rows, channel: str, sender: str, since: str, verdict: str = "") -> int:
    """A sender's updates since `since` (of one verdict, or any)."""
    sql = "select count(*) as n from channel_updates where channel = ? and sender = ? and at >= ?"
    params: list[Any] = [channel, sender, since]
    if verdict:
        sql += " and verdict = ?"
        params.append(verdict)
    return int(db.rows(sql, params)[0]["n"])


def updates(db: Rows, channel: str = "", limit: int = 50) -> list[dict[str, Any]]:
    """The latest updates, newest first (of one channel, or all)."""
    return db.rows(
        "select * from channel_updates where (? = '' or channel = ?) order by at desc limit ?",
        [channel, channel, limit],
    )


def add_attachment(audit: AuditStore, row: dict[str, Any]) -> int:
    """An attachment as it was judged (taken, renamed or refused), with its SHA-256."""
    return audit.insert("channel_attachments", row)


def attachments(db: Rows, *, run_id: str = "", channel: str = "", update_id: str = "") -> list[dict[str, Any]]:
    """The attachments of a run, or of one update, in the order they came."""
    return db.rows(
        """select * from channel_attachments where (? = '' or run_id = ?) and (? = '' or channel = ?)
           and (? = '' or update_id = ?) order by id""",
        [run_id, run_id, channel, channel, update_id, update_id],
    )


# -- conversations ---------------------------------------------------------------------------------
def chat(db: Rows, channel: str, chat_id: str, user: str) -> dict[str, Any] | None:
    rows = db.rows("select * from channel_chats where channel = ? and chat = ? and user = ?", [channel, chat_id, user])
    return rows[0] if rows else None


def set_chat(audit: AuditStore, row: dict[str, Any]) -> None:
    """The chat's conversation as it is now (a new run, its progress message, what was shown)."""
    audit.checked("channel_chats", row)
    names = list(row)
    marks = ", ".join("?" * len(names))
    updates = ", ".join(f'"{n}" = excluded."{n}"' for n in names if n not in ("channel", "chat", "user"))
    sql = (
        f"insert into channel_chats ({', '.join(chr(34) + n + chr(34) for n in names)}) values ({marks}) "
        f"on conflict(channel, chat, user) do update set {updates}"
    )
    audit.conn.execute(sql, list(row.values()))


def chats_to_follow(db: Rows, channel: str) -> list[dict[str, Any]]:
    """The chats whose latest run has not been answered yet."""
    return db.rows(
        """select * from channel_chats where channel = ? and run_id is not null and run_id != ''
           and (answered is null or answered != run_id)""",
        [channel],
    )


# -- deliveries ------------------------------------------------------------------------------------
def add_delivery(audit: AuditStore, row: dict[str, Any]) -> int:
    return audit.insert("deliveries", {"status": "pending", "attempts": 0, **row})


def delivered_before(db: Rows, channel: str, chat_id: str, kind: str, subject: str) -> bool:
    """Whether such a message was queued already (delivered, or still being tried)."""
    return bool(deliveries_of(db, channel, chat_id, kind, subject))


def deliveries_of(db: Rows, channel: str, chat_id: str, kind: str, subject: str) -> list[dict[str, Any]]:
    sql = "select * from deliveries where channel = ? and chat = ? and kind = ? and subject = ? order by id"
    return db.rows(sql, [channel, chat_id, kind, subject])


def chat_known(db: Rows, channel: str, chat_id: str) -> bool:
    """Whether a mapped user has a conversation in that chat (a group they addressed hearth in)."""
    return bool(db.rows("select 1 from channel_chats where channel = ? and chat = ? limit 1", [channel, chat_id]))


def delivery(db: Rows, ident: int) -> dict[str, Any] | None:
    rows = db.rows("select * from deliveries where id = ?", [ident])
    return rows[0] if rows else None


def set_delivery(audit: AuditStore, ident: int, fields: dict[str, Any]) -> None:
    audit.update("deliveries", ident, fields)


def due(db: Rows, channel: str, now: str) -> list[dict[str, Any]]:
    """Deliveries still to try: pending, or failed and past their next try."""
    return db.rows(
        """select * from deliveries where channel = ? and status in ('pending', 'failed')
           and (next_at is null or next_at <= ?) order by id""",
        [channel, now],
    )


def deliveries(db: Rows, *, mission: str = "", status: str = "", limit: int = 50) -> list[dict[str, Any]]:
    """The latest deliveries, newest first (of a mission, of a status, or all)."""
    return db.rows(
        """select * from deliveries where (? = '' or mission = ?) and (? = '' or status = ?)
           order by id desc limit ?""",
        [mission, mission, status, status, limit],
    )


def approval_message(db: Rows, channel: str, approval_id: str) -> list[dict[str, Any]]:
    """The messages that carried an approval's buttons (to mark them decided)."""
    sql = "select * from deliveries where channel = ? and kind = 'approval' and subject = ? and status = 'delivered'"
    return db.rows(sql, [channel, approval_id])


# -- state -----------------------------------------------------------------------------------------
def set_state(audit: AuditStore, row: dict[str, Any]) -> None:
    """A channel's state now (every column of the table)."""
    audit.conn.execute(
        """insert into channel_state (channel, state, since, last_error, updated_at) values (?, ?, ?, ?, ?)
           on conflict(channel) do update set state = excluded.state, since = excluded.since,
           last_error = excluded.last_error, updated_at = excluded.updated_at""",
        [row["channel"], row["state"], row["since"], row["last_error"], row["updated_at"]],
    )


def states(db: Rows) -> list[dict[str, Any]]:
    return db.rows("select * from channel_state order by channel")


def status(db: Rows) -> list[dict[str, Any]]:
    """Each channel's state, how many deliveries it still owes (pending or failed) and the latest
    it gave up on (`missing`, newest first; the page shows the first few, the CLI counts them)."""
    owed = {s: deliveries(db, status=s, limit=1000) for s in ("pending", "failed", "missing")}
    return [
        {
            **row,
            "owed": sum(1 for s in ("pending", "failed") for d in owed[s] if d["channel"] == row["channel"]),
            "missing": [d for d in owed["missing"] if d["channel"] == row["channel"]],
        }
        for row in states(db)
    ]


def state(db: Rows, channel: str) -> dict[str, Any] | None:
    rows = db.rows("select * from channel_state where channel = ?", [channel])
    return rows[0] if rows else None
