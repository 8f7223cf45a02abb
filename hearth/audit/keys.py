"""The `/v1` door's keys (`api_keys`: the SHA-256 of each, never the key) and the calls they made
(`api_calls`: one per run a key queued, with the conversation it belongs to and the tokens it
reserved). hearth/doors/keys.py decides what a key may do; this module holds every statement on
the two tables. A key is its `id`: the calls, their conversations and the day's budget are
found by it, never by the key's name, which a later key may take."""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from hearth.audit.store import AuditStore, Rows, immediate

# what a key's name may be (a `/v1` run's source is api:NAME); `mcp` is hearth's own MCP server's
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
RESERVED = "mcp"
# a run that has not ended: what it may still spend is held for it (hearth/doors/follow.py's ACTIVE)
_GOING = ("queued", "claimed", "running", "waiting", "paused")


class Charged(NamedTuple):
    """What a key's calls of one day weigh on its budget."""

    spent: int  # tokens its runs used
    held: int  # tokens reserved by its runs still going, beyond what they used so far

    @property
    def total(self) -> int:
        return self.spent + self.held


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


def update_key(audit: AuditStore, name: str, fields: dict[str, Any]) -> None:
    """Change a key's limits, profiles or user; its id, and so its calls and budget, stay."""
    audit.update("api_keys", name, fields, pk="name")


def key_with_digest(db: Rows, digest: str) -> dict[str, Any] | None:
    rows = db.rows("select * from api_keys where digest = ?", [digest])
    return rows[0] if rows else None


def charged(db: Rows, key_id: str, day: str) -> Charged:
    """The key's calls made from `day` on: the tokens their runs used, and what the runs still going
    (or not yet started) hold of their reservation beyond that."""
    rows = db.rows(
        f"""select coalesce(r.tokens_in, 0) + coalesce(r.tokens_out, 0) as used, c.reserved,
                   r.id is null or r.status in ({", ".join("?" * len(_GOING))}) as going
            from api_calls c left join runs r on r.id = c.run_id where c.key_id = ? and c.at >= ?""",
        [*_GOING, key_id, day],
    )
    spent = sum(row["used"] for row in rows)
    held = sum(max(0, (row["reserved"] or 0) - row["used"]) for row in rows if row["going"])
    return Charged(spent, held)


def record_call(
    audit: AuditStore, call: dict[str, Any], *, rate: int, since: str, budget: int, day: str, own: int
) -> str:
    """Count a call of the key `call["key_id"]` and reserve its run's tokens, in one transaction:
    '' when written, else what stopped it, and nothing is written: "rate" when the key made `rate`
    calls after `since` (0: no rate), "budget" when nothing is left of `budget` today (from `day`:
    what its runs spent and what those still going hold). The run may spend what is left, at most
    `own` (its profile's cap; 0: none): that is `call["reserved"]` (None without a budget)."""
    with immediate(audit.conn):
        if rate:
            sql = "select count(*) as n from api_calls where key_id = ? and at > ?"
            if audit.rows(sql, [call["key_id"], since])[0]["n"] >= rate:
                return "rate"
        call["reserved"] = None
        if budget:
            left = budget - charged(audit, call["key_id"], day).total
            if left <= 0:
                return "budget"
            call["reserved"] = min(left, own) if own else left
        audit.insert("api_calls", call)
    return ""


def forget_call(audit: AuditStore, run_id: str) -> None:
    """The call whose run was never queued: there is no turn to continue, nothing to reserve."""
    audit.conn.execute("delete from api_calls where run_id = ?", [run_id])


def latest_run(db: Rows, key_id: str, conversation: str) -> str | None:
    """The conversation's latest run the key launched."""
    sql = "select run_id from api_calls where key_id = ? and conversation = ? order by id desc limit 1"
    rows = db.rows(sql, [key_id, conversation])
    return rows[0]["run_id"] if rows else None


def answered(db: Rows, key_id: str, limit: int = 200) -> list[dict[str, Any]]:
    """The key's latest calls whose run answered: each call's conversation and its run's summary."""
    sql = """select c.conversation, r.summary from api_calls c join runs r on r.id = c.run_id
             where c.key_id = ? and r.summary is not null and r.summary != '' order by c.id desc limit ?"""
    return db.rows(sql, [key_id, limit])
