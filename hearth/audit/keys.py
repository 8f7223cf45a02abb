"""The `/v1` door's keys (`api_keys`: the SHA-256 of each, never the key) and the calls they made
(`api_calls`: one per run a key queued, with the conversation it belongs to). hearth/doors/keys.py
decides what a key may do; this module holds every statement on the two tables."""

from __future__ import annotations

from typing import Any

from hearth.audit.store import AuditStore, Rows, immediate


def add_key(audit: AuditStore, row: dict[str, Any]) -> bool:
    """Store a key's row; False, and nothing written, when a key of that name exists."""
    with immediate(audit.conn):
        if audit.rows("select 1 from api_keys where name = ?", [row["name"]]):
            return False
        audit.insert("api_keys", row)
    return True


def all_keys(db: Rows) -> list[dict[str, Any]]:
    return db.rows("select * from api_keys order by name")


def remove_key(audit: AuditStore, name: str) -> bool:
    """False when no key has that name."""
    return audit.conn.execute("delete from api_keys where name = ?", [name]).rowcount > 0


def key_with_digest(db: Rows, digest: str) -> dict[str, Any] | None:
    rows = db.rows("select * from api_keys where digest = ?", [digest])
    return rows[0] if rows else None


def record_call(audit: AuditStore, call: dict[str, Any], *, rate: int, since: str) -> bool:
    """Count a call of `call["key"]`, unless the key made `rate` calls after `since` (0: no rate):
    then False and nothing written. Counted and written in one transaction."""
    with immediate(audit.conn):
        if rate:
            rows = audit.rows("select count(*) as n from api_calls where key = ? and at > ?", [call["key"], since])
            if rows[0]["n"] >= rate:
                return False
        audit.insert("api_calls", call)
    return True


def forget_call(audit: AuditStore, run_id: str) -> None:
    """The call whose run was never queued: there is no turn to continue."""
    audit.conn.execute("delete from api_calls where run_id = ?", [run_id])


def latest_run(db: Rows, key: str, conversation: str) -> str | None:
    """The conversation's latest run the key launched."""
    sql = "select run_id from api_calls where key = ? and conversation = ? order by id desc limit 1"
    rows = db.rows(sql, [key, conversation])
    return rows[0]["run_id"] if rows else None


def conversation_of(db: Rows, key: str, run_id: str) -> str | None:
    rows = db.rows("select conversation from api_calls where key = ? and run_id = ?", [key, run_id])
    return rows[0]["conversation"] if rows else None


def answered(db: Rows, key: str, limit: int = 200) -> list[dict[str, Any]]:
    """The key's latest calls whose run answered: each call's conversation and its run's summary."""
    sql = """select c.conversation, r.summary from api_calls c join runs r on r.id = c.run_id
             where c.key = ? and r.summary is not null and r.summary != '' order by c.id desc limit ?"""
    return db.rows(sql, [key, limit])
