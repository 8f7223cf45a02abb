"""A run's timeline (`steps`) and what its model read (`conversation`): every statement on them.

`StepRows` is the AuditStore's part a run writes its steps and conversation through
(hearth/run/events.py's SqliteRecorder); the reads below take the store or the command center's
read-only connection (`Rows`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from hearth.audit.rows import ARGUMENTS_CAP, OUTPUT_CAP, Rows, Writer, cap, newest

STEP_KEYS = ("id", "run_id", "seq", "kind")  # a step's place, which the store sets from its arguments
CAPPED = ("arguments", "output", "detail")  # a step's columns that can hold text of any length


class StepRows:
    """The AuditStore's steps and conversation: numbered per run as they are written."""

    def record_step(self: Writer, run_id: str, kind: str, **fields: Any) -> int:
        self.checked("steps", fields, fixed=STEP_KEYS)
        if "arguments" in fields and not isinstance(fields["arguments"], str | None):
            fields["arguments"] = json.dumps(fields["arguments"], ensure_ascii=False, default=str)
        fields["arguments"] = cap(fields.get("arguments"), ARGUMENTS_CAP)
        fields["output"] = cap(fields.get("output"), OUTPUT_CAP)
        with self.transaction():
            seq = self.conn.execute("select coalesce(max(seq), 0) + 1 from steps where run_id = ?", [run_id]).fetchone()
            self.insert("steps", {"run_id": run_id, "seq": seq[0], "at": self.clock(), "kind": kind, **fields})
        return int(seq[0])

    def open_step(self: Writer, run_id: str, kind: str, **fields: Any) -> int:
        """A step that has started (a tool about to run); its row id, for `close_step`."""
        self.checked("steps", fields, fixed=STEP_KEYS)
        fields["arguments"] = cap(_json_text(fields.get("arguments")), ARGUMENTS_CAP)
        with self.transaction():
            seq = self.conn.execute("select coalesce(max(seq), 0) + 1 from steps where run_id = ?", [run_id]).fetchone()
            return self.insert("steps", {"run_id": run_id, "seq": seq[0], "at": self.clock(), "kind": kind, **fields})

    def close_step(self: Writer, step_id: int, **fields: Any) -> None:
        """The step's outcome, written onto the row `open_step` made."""
        self.checked("steps", fields, fixed=(*STEP_KEYS, "opens"))
        if "output" in fields:
            fields["output"] = cap(fields["output"], OUTPUT_CAP)
        self.update("steps", step_id, fields)

    def opened_step(self: Writer, run_id: str, key: str) -> int | None:
        """The row id of the step the run opened under `key` (by any of its processes), or None."""
        row = self.conn.execute("select id from steps where run_id = ? and opens = ?", [run_id, key]).fetchone()
        return int(row[0]) if row else None

    def insert_steps(self: Writer, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """Many steps' rows of the same columns (each with its run_id and seq), in one transaction."""
        self.insert_many("steps", columns, rows)

    def steps(self: Writer, run_id: str) -> list[dict[str, Any]]:
        return self.rows("select * from steps where run_id = ? order by seq", [run_id])

    def keep_messages(self: Writer, kept: Any) -> None:
        """A `MessagesKept` record's rows (hearth/run/events.py), in one transaction."""
        rows = [
            (
                kept.run_id,
                kept.generation,
                kept.start + n,
                kept.iteration,
                json.dumps(message, ensure_ascii=False),
                kept.worked_ms,
                kept.at,
            )
            for n, message in enumerate(kept.messages)
        ]
        with self.transaction():
            self.conn.executemany(
                "insert or replace into conversation (run_id, generation, seq, iteration, message, worked_ms, at) "
                "values (?, ?, ?, ?, ?, ?, ?)",
                rows,
            )

    def conversation(self: Writer, run_id: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The run's latest conversation: its messages, and their rows (iteration, worked_ms, at)."""
        rows = self.rows(
            "select * from conversation where run_id = ? and generation = "
            "(select max(generation) from conversation where run_id = ?) order by seq",
            [run_id, run_id],
        )
        return [json.loads(row["message"]) for row in rows], rows


def _json_text(value: Any) -> str | None:
    return value if isinstance(value, str | None) else json.dumps(value, ensure_ascii=False, default=str)


# -- reads ----------------------------------------------------------------------------------------
def tool_calls(db: Rows, tool: str, limit: int) -> list[dict[str, Any]]:
    """The latest calls of one tool across runs, newest first."""
    return db.rows(
        "select run_id, seq, at, verdict, ok from steps where kind = 'tool' and tool = ? order by id desc limit ?",
        [tool, limit],
    )


def mcp_drift(db: Rows, limit: int = 50, since: str = "") -> list[dict[str, Any]]:
    """The `mcp` steps where a run found a server's tools changed since they were approved, newest
    first (those after `since` only, when given)."""
    return db.rows(
        "select run_id, at, detail from steps where kind = 'mcp' and verdict = 'drift' and at > ?"
        " order by id desc limit ?",
        [since, limit],
    )


def progress(db: Rows, run_id: str) -> dict[str, Any]:
    """How far a run has gone: its steps so far and the tool of its latest tool step ('' for none)."""
    counted = db.rows("select count(*) as n from steps where run_id = ?", [run_id])
    latest = db.rows("select tool from steps where run_id = ? and kind = 'tool' order by seq desc limit 1", [run_id])
    return {"steps": int(counted[0]["n"]) if counted else 0, "tool": (latest[0]["tool"] or "") if latest else ""}


def tool_steps(db: Rows, run_id: str) -> list[dict[str, Any]]:
    """A run's tool calls in order: the tool, its arguments, verdict and whether it succeeded."""
    return db.rows(
        "select tool, arguments, verdict, ok from steps where run_id = ? and kind = 'tool' order by seq", [run_id]
    )


def capped(db: Rows, run_id: str, limit: int | None = None) -> list[dict[str, Any]]:
    """A run's steps in order; with `limit`, each of CAPPED cut to that many characters in SQL (a
    row can be any size), beside its whole length as `<name>_chars`."""
    if limit is None:
        return db.rows("select * from steps where run_id = ? order by seq", [run_id])
    names = [r["name"] for r in db.rows("select name from pragma_table_info('steps')")]
    columns = ", ".join(
        f'substr("{n}", 1, {int(limit)}) as "{n}", length("{n}") as "{n}_chars"' if n in CAPPED else f'"{n}"'
        for n in names
    )
    return db.rows(f"select {columns or '*'} from steps where run_id = ? order by seq", [run_id])


def step(db: Rows, run_id: str, seq: int) -> dict[str, Any] | None:
    found = db.rows("select * from steps where run_id = ? and seq = ?", [run_id, seq])
    return found[0] if found else None


def model_totals(db: Rows, run_id: str) -> dict[str, Any]:
    """A run's model turns so far: its last iteration, tokens in and out, model time."""
    found = db.rows(
        """select max(iteration) as iteration, coalesce(sum(tokens_in), 0) as tokens_in,
                  coalesce(sum(tokens_out), 0) as tokens_out, coalesce(sum(duration_ms), 0) as model_ms
           from steps where run_id = ? and kind = 'model'""",
        [run_id],
    )
    return found[0] if found else {}


def last_turn(db: Rows, run_id: str) -> dict[str, Any]:
    """A run's latest model turn: its tokens out and how long it took."""
    found = db.rows(
        "select tokens_out, duration_ms from steps where run_id = ? and kind = 'model' order by seq desc limit 1",
        [run_id],
    )
    return found[0] if found else {}


def data_of(db: Rows, run_id: str, kind: str, *, latest: bool = False) -> list[dict[str, Any]]:
    """The `data` of a run's steps of one kind, each a row, in order (with `latest`, the last one only)."""
    sql = "select data from steps where run_id = ? and kind = ? order by seq" + (" desc limit 1" if latest else "")
    return db.rows(sql, [run_id, kind])


def for_resume(db: Rows, run_id: str) -> list[dict[str, Any]]:
    """What a resumed run reads of its steps: kind, tool, verdict, key, data, tokens and time, in order."""
    return db.rows(
        "select id, kind, tool, verdict, opens, data, tokens_in, tokens_out, duration_ms from steps "
        "where run_id = ? order by seq",
        [run_id],
    )


def approval_consumed(db: Rows, run_id: str, approval_id: str) -> bool:
    """Whether the run recorded an `approval` step for this approval (its call was answered)."""
    found = db.rows(
        "select 1 from steps where run_id = ? and kind = 'approval' and json_extract(detail, '$.approval') = ? limit 1",
        [run_id, approval_id],
    )
    return bool(found)


def children(db: Rows, run_id: str) -> list[str]:
    """The runs a swarm started, as its `child` steps name them."""
    return [r["id"] for r in db.rows("select detail as id from steps where run_id = ? and kind = 'child'", [run_id])]


def kept_conversation(db: Rows, run_id: str) -> bool:
    """Whether the run kept any of its conversation (so that it can go on in a new process)."""
    return bool(db.rows("select 1 from conversation where run_id = ? limit 1", [run_id]))


# a model step's tokens are columns; a compaction's, a judge's, a plan's and a research phase's are
# in its JSON data (hearth/run/recorder.py, hearth/run/long/marathon.py and swarm.py, hearth/research/)
SPENDING = ("model", "compaction", "judge", "plan", "phase")
_KINDS = f"s.kind in ({', '.join(repr(kind) for kind in SPENDING)})"
_TOKENS = """coalesce(sum(case when s.kind = 'model' then coalesce(s.tokens_in, 0) + coalesce(s.tokens_out, 0)
    else coalesce(json_extract(s.data, '$.tokens_in'), 0) + coalesce(json_extract(s.data, '$.tokens_out'), 0) end), 0)"""
_STEPS = f"from steps s join runs r on r.id = s.run_id where {_KINDS} and s.at >= ?"


def tokens_spent(db: Rows, since: str, agent: str | None = None) -> int:
    """Tokens the steps recorded from `since` on, for the box or one agent profile's runs."""
    if agent is None:
        return int(db.rows(f"select {_TOKENS} as spent from steps s where {_KINDS} and s.at >= ?", [since])[0]["spent"])
    return int(db.rows(f"select {_TOKENS} as spent {_STEPS} and r.agent_name = ?", [since, agent])[0]["spent"])


def tokens_spent_by_agent(db: Rows, since: str) -> dict[str, int]:
    sql = f"select r.agent_name as agent, {_TOKENS} as spent {_STEPS} group by r.agent_name"
    return {row["agent"]: int(row["spent"]) for row in db.rows(sql, [since])}


def denials(db: Rows, run: str, limit: int) -> list[dict[str, Any]]:
    """The latest calls refused (for one run, or all when `run` is ''), newest first."""
    select = "select id, run_id, seq, at, tool, arguments, detail, output from steps where verdict = 'denied'"
    return newest(db, select, run, limit)


def credential_uses(db: Rows, run: str, limit: int) -> list[dict[str, Any]]:
    """The latest uses of a credential by name (for one run, or all), newest first."""
    return newest(
        db, "select id, run_id, seq, at, tool, verdict, detail from steps where kind = 'credential'", run, limit
    )


def denied_since(db: Rows, since: str) -> list[dict[str, Any]]:
    """The tool calls refused in the runs started from `since` on: each one's tool and output."""
    return db.rows(
        """select s.tool as tool, s.output as output from steps s join runs r on r.id = s.run_id
           where s.kind = 'tool' and s.verdict = 'denied' and r.started_at >= ?""",
        [since],
    )
