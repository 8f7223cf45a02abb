"""AuditStore: the only writer of audit.db (SQLite through sqlite-utils, WAL, migrations).

A row per run and a row per step; later tables (approvals, rejections, ...) come as migrations
in `hearth/audit/migrations/`. The file stays plain SQLite, readable as-is by sqlite-utils
and Datasette. Several processes write at once (one per run): WAL plus a busy timeout.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from agent.clock import utc_now
from agent.sqlite_store import SqliteFile, immediate
from hearth.audit.migrations import MIGRATIONS
from hearth.errors import HearthError

__all__ = ["AuditStore", "ColumnRefused", "Rows", "RunRecord", "cap", "immediate", "new_run_id"]

STEP_KEYS = ("id", "run_id", "seq", "kind")  # a step's place, which the store sets from its arguments
ARGUMENTS_CAP = 4_000
OUTPUT_CAP = 8_000


class ColumnRefused(HearthError):
    """A row or a change naming a table or a column the audit does not have, or a column its writer
    may not set (a row's key, a step's run); nothing was written."""


class Rows(Protocol):
    """What a read goes through: an AuditStore, or the command center's read-only connection
    (hearth/web/reader.py). The owner modules' reads take either."""

    def rows(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ...) -> list[dict[str, Any]]: ...


def new_run_id(now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> str:
    return f"{now().strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(3)}"


def cap(text: str | None, limit: int) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} characters not stored]"


@dataclass
class RunRecord:
    id: str
    agent_name: str
    model: str
    goal: str
    mode: str
    source: str = "cli"
    requested_by: str = ""
    workspace: str = ""
    sandbox: str = ""
    status: str = "running"
    started_at: str = ""
    parent_run: str | None = None  # the run this one was made from (see RUN_LINKS)
    link: str | None = None
    kind: str | None = None  # marathon | swarm; None for a plain run (and for a leg or a child)
    label: str | None = None  # the operator's free-text name for the run (a request's `label`)
    model_requested: str | None = None  # what the request asked for (`auto`: the router chose)
    model_reason: str | None = None  # why `model` was used: a router rule, default, fallback, escalation, tag
    model_host: str | None = None  # the Ollama hosts that answered, when there were several (hearth/run/hosts.py)


# How a run can be made from another: a follow-up continues it, a leg is one of a marathon's,
# a child one of a swarm's sub-goals and the synthesis merges them, an escalation retries it on a
# larger model and a fallback on the next model when the first was not available.
RUN_LINKS = ("follow-up", "leg", "child", "synthesis", "escalation", "fallback")


class AuditStore(SqliteFile):
    """The audit: runs, steps, checkpoints here; the queue's and approvals' rows in their modules.

    A run writes it only through hearth/run/events.py's SqliteRecorder (its times come with its
    records, as `at`); the queue, settle and the operator's commands write their own rows here."""

    def __init__(self, path: str | Path, *, clock: Callable[[], str] = utc_now) -> None:
        super().__init__(path, MIGRATIONS)
        self.clock = clock
        self._columns: dict[str, frozenset[str]] = {}

    @classmethod
    def read_only(cls, path: str | Path) -> AuditStore:
        """The audit opened for reading only, never migrated: for a reader who may not write it
        (a submitter on NixOS, whose group may read audit.db and the -wal/-shm beside it)."""
        store = cls.__new__(cls)
        store.path, store.clock, store._columns = Path(path), utc_now, {}
        try:
            store.conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0, isolation_level=None)
            store.conn.execute("select 1 from runs limit 1").fetchall()
        except sqlite3.OperationalError:
            # no writer is connected, so SQLite has checkpointed and removed the -wal and -shm, and
            # this reader may not make a -shm: the file alone is the whole audit, read as it is
            store.conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True, isolation_level=None)
        return store

    def transaction(self) -> contextlib.AbstractContextManager[None]:
        """A write transaction taken up front, for a caller whose several calls (of several owner
        modules) must be one: `with audit.transaction(): ...`. Nested, it joins the outer one."""
        return immediate(self.conn)

    # -- the allow-list: SQL names only the tables and columns the audit has ------------------------
    def columns(self, table: str) -> frozenset[str]:
        """The columns of one of the audit's tables, read from its schema once (ColumnRefused for a
        table it does not have)."""
        known = self._columns.get(table)
        if known is None:
            rows = self.conn.execute("select name from pragma_table_info(?)", [table]).fetchall()
            if not rows:
                raise ColumnRefused(f"the audit has no table {table!r}")
            known = self._columns[table] = frozenset(row[0] for row in rows)
        return known

    def checked(self, table: str, names: Iterable[str], *, fixed: Iterable[str] = ()) -> None:
        """ColumnRefused unless every name is a column of `table` and none is one of `fixed`
        (the columns the store sets itself, or a row's key)."""
        known, fixed = self.columns(table), set(fixed)
        for name in names:
            if name not in known or name in fixed:
                why = "is set by the audit itself" if name in known else "is not one of its columns"
                raise ColumnRefused(f"{table}: {str(name)[:80]!r} {why}; nothing was written")

    def insert(self, table: str, row: Mapping[str, Any], *, or_ignore: bool = False) -> int:
        self.checked(table, row)
        return super().insert(table, row, or_ignore=or_ignore)

    def update(self, table: str, key: Any, fields: Mapping[str, Any], *, pk: str = "id") -> None:
        self.checked(table, [pk])
        self.checked(table, fields, fixed=[pk])
        super().update(table, key, fields, pk=pk)

    def __enter__(self) -> AuditStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- runs ------------------------------------------------------------------------------
    def start_run(self, run: RunRecord) -> None:
        run.started_at = run.started_at or self.clock()
        self.insert("runs", asdict(run))

    def insert_run(self, row: Mapping[str, Any]) -> None:
        """A run's row as a record of the stream carries it (hearth/run/events.py's RunStarted)."""
        self.insert("runs", row)

    def finish_run(self, run_id: str, *, if_running: bool = False, **fields: Any) -> None:
        """The run's final status and totals; with `if_running`, only while it has none yet."""
        fields.setdefault("ended_at", self.clock())
        if "error" in fields:
            fields["error"] = cap(fields["error"], ARGUMENTS_CAP)
        if not if_running:
            self.update("runs", run_id, fields)
            return
        self.checked("runs", fields, fixed=["id"])
        assignments = ", ".join(f'"{name}" = ?' for name in fields)
        sql = f"update runs set {assignments} where id = ? and status = 'running'"
        self.conn.execute(sql, [*fields.values(), run_id])

    def update_run(self, run_id: str, **fields: Any) -> None:
        self.update("runs", run_id, fields)

    def run(self, run_id: str) -> dict[str, Any] | None:
        rows = self.rows("select * from runs where id = ?", [run_id])
        return rows[0] if rows else None

    def runs(
        self, limit: int = 20, *, since: str | None = None, search: str | None = None, **where: Any
    ) -> list[dict[str, Any]]:
        """The newest runs first; `where` matches columns exactly, `since` is a time stamp the run
        started at or after, `search` words that its goal or summary holds (the runs_fts index)."""
        clauses = [f'"{k}" = :{k}' for k in where]
        params: dict[str, Any] = {**where, "_limit": limit}
        if since:
            clauses.append("started_at >= :_since")
            params["_since"] = since
        if search is not None:
            clauses.append("rowid in (select rowid from runs_fts where runs_fts match :_match)")
            params["_match"] = fts_query(search)
        clause = " and ".join(clauses) or "1 = 1"
        sql = f"select * from runs where {clause} order by started_at desc, rowid desc limit :_limit"
        return self.rows(sql, params)

    def find_run(self, prefix: str) -> dict[str, Any] | None:
        """A run by its id or a unique prefix of it."""
        return self.find_by_id_or_prefix("runs", prefix)

    def find_by_id_or_prefix(self, table: str, ident: str) -> dict[str, Any] | None:
        """A row of `table` by its id, else by a prefix that matches exactly one id (`_` and `%` literal)."""
        rows = self.rows(f'select * from "{table}" where id = ? limit 1', [ident])
        if not rows:
            rows = self.rows(f"select * from \"{table}\" where id like ? escape '\\' limit 2", [_like_prefix(ident)])
        return rows[0] if len(rows) == 1 else None

    def ids_with_prefix(self, table: str, prefix: str, limit: int = 10) -> list[str]:
        """The ids of `table` that start with `prefix`, newest first: what an ambiguous prefix means."""
        rows = self.rows(
            f"select id from \"{table}\" where id like ? escape '\\' order by rowid desc limit ?",
            [_like_prefix(prefix), limit],
        )
        return [row["id"] for row in rows]

    # -- steps -----------------------------------------------------------------------------
    def record_step(self, run_id: str, kind: str, **fields: Any) -> int:
        self.checked("steps", fields, fixed=STEP_KEYS)
        if "arguments" in fields and not isinstance(fields["arguments"], str | None):
            fields["arguments"] = json.dumps(fields["arguments"], ensure_ascii=False, default=str)
        fields["arguments"] = cap(fields.get("arguments"), ARGUMENTS_CAP)
        fields["output"] = cap(fields.get("output"), OUTPUT_CAP)
        with immediate(self.conn):
            seq = self.conn.execute("select coalesce(max(seq), 0) + 1 from steps where run_id = ?", [run_id]).fetchone()
            self.insert("steps", {"run_id": run_id, "seq": seq[0], "at": self.clock(), "kind": kind, **fields})
        return int(seq[0])

    def open_step(self, run_id: str, kind: str, **fields: Any) -> int:
        """A step that has started (a tool about to run); its row id, for `close_step`."""
        self.checked("steps", fields, fixed=STEP_KEYS)
        fields["arguments"] = cap(_json_text(fields.get("arguments")), ARGUMENTS_CAP)
        with immediate(self.conn):
            seq = self.conn.execute("select coalesce(max(seq), 0) + 1 from steps where run_id = ?", [run_id]).fetchone()
            return self.insert("steps", {"run_id": run_id, "seq": seq[0], "at": self.clock(), "kind": kind, **fields})

    def close_step(self, step_id: int, **fields: Any) -> None:
        """The step's outcome, written onto the row `open_step` made."""
        self.checked("steps", fields, fixed=(*STEP_KEYS, "opens"))
        if "output" in fields:
            fields["output"] = cap(fields["output"], OUTPUT_CAP)
        self.update("steps", step_id, fields)

    def opened_step(self, run_id: str, key: str) -> int | None:
        """The row id of the step the run opened under `key` (by any of its processes), or None."""
        row = self.conn.execute("select id from steps where run_id = ? and opens = ?", [run_id, key]).fetchone()
        return int(row[0]) if row else None

    # -- the conversation ------------------------------------------------------------------
    def keep_messages(self, kept: Any) -> None:
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
        with immediate(self.conn):
            self.conn.executemany(
                "insert or replace into conversation (run_id, generation, seq, iteration, message, worked_ms, at) "
                "values (?, ?, ?, ?, ?, ?, ?)",
                rows,
            )

    def conversation(self, run_id: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The run's latest conversation: its messages, and their rows (iteration, worked_ms, at)."""
        rows = self.rows(
            "select * from conversation where run_id = ? and generation = "
            "(select max(generation) from conversation where run_id = ?) order by seq",
            [run_id, run_id],
        )
        return [json.loads(row["message"]) for row in rows], rows

    def steps(self, run_id: str) -> list[dict[str, Any]]:
        return self.rows("select * from steps where run_id = ? order by seq", [run_id])

    # -- workspace checkpoints -------------------------------------------------------------
    def record_checkpoint(self, run_id: str, **fields: Any) -> None:
        self.insert("checkpoints", {"run_id": run_id, "at": self.clock(), **fields})

    def linked(self, run_id: str) -> list[dict[str, Any]]:
        """The runs made from this one, oldest first."""
        return self.rows("select * from runs where parent_run = ? order by started_at, rowid", [run_id])

    def checkpoints(self, run_id: str) -> list[dict[str, Any]]:
        return self.rows("select * from checkpoints where run_id = ? order by id", [run_id])

    # -- the walls around commands (hearth/run/walls.py) -------------------------------------
    def record_connection(self, run_id: str, **fields: Any) -> None:
        self.insert("connections", {"run_id": run_id, "at": self.clock(), **fields})

    def connections(self, run_id: str) -> list[dict[str, Any]]:
        return self.rows("select * from connections where run_id = ? order by id", [run_id])

    def record_tripwire(self, run_id: str, **fields: Any) -> None:
        self.insert("tripwires", {"run_id": run_id, "at": self.clock(), **fields})

    def tripwires(self, run_id: str) -> list[dict[str, Any]]:
        return self.rows("select * from tripwires where run_id = ? order by id", [run_id])


def _json_text(value: Any) -> str | None:
    return value if isinstance(value, str | None) else json.dumps(value, ensure_ascii=False, default=str)


def fts_query(text: str) -> str:
    """Free text -> an FTS5 query: every word quoted (no operator injection), all of them required."""
    words = text.split()
    return " ".join('"' + word.replace('"', '""') + '"' for word in words) or '""'


def _like_prefix(prefix: str) -> str:
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"
