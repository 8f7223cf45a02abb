"""AuditStore: the only writer of audit.db (SQLite through sqlite-utils, WAL, migrations).

The connection, made of its owner modules' parts: the runs (runs.py's RunRows), their steps and
conversation (steps.py's StepRows) and what their walls kept (walls.py's WallRows); every other
table's statements are functions of its owner module that take the store (the table in
hearth/audit/__init__.py). Tables come as migrations in `hearth/audit/migrations/`. The file stays
plain SQLite, readable as-is by sqlite-utils and Datasette. Several processes write at once (one
per run): WAL plus a busy timeout.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agent.clock import utc_now
from agent.sqlite_store import SqliteFile, immediate
from hearth.audit.migrations import MIGRATIONS
from hearth.audit.rows import ARGUMENTS_CAP, OUTPUT_CAP, ColumnRefused, Rows, cap
from hearth.audit.runs import RUN_LINKS, RunRecord, RunRows, new_run_id
from hearth.audit.steps import StepRows
from hearth.audit.walls import WallRows

__all__ = [
    "ARGUMENTS_CAP",
    "OUTPUT_CAP",
    "RUN_LINKS",
    "AuditStore",
    "ColumnRefused",
    "Rows",
    "RunRecord",
    "cap",
    "immediate",
    "new_run_id",
]


class AuditStore(RunRows, StepRows, WallRows, SqliteFile):
    """The audit. A run writes it only through hearth/run/events.py's SqliteRecorder (its times come
    with its records, as `at`); the queue, settle and the operator's commands write their own rows
    through the owner modules."""

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

    def insert_many(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """Rows of the same columns, in one transaction (a replay, a benchmark's seed)."""
        self.checked(table, columns)
        names, marks = ", ".join(f'"{c}"' for c in columns), ", ".join("?" * len(columns))
        with self.transaction():
            self.conn.executemany(f'insert into "{table}" ({names}) values ({marks})', rows)

    def update(self, table: str, key: Any, fields: Mapping[str, Any], *, pk: str = "id") -> None:
        self.checked(table, [pk])
        self.checked(table, fields, fixed=[pk])
        super().update(table, key, fields, pk=pk)

    def analyze(self) -> None:
        """Gather the statistics SQLite's planner chooses indexes by (after a large write)."""
        self.conn.execute("analyze")

    def __enter__(self) -> AuditStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def find_by_id_or_prefix(self, table: str, ident: str) -> dict[str, Any] | None:
        """A row of `table` by its id, else by a prefix that matches exactly one id (`_` and `%` literal)."""
        self.checked(table, ["id"])
        rows = self.rows(f'select * from "{table}" where id = ? limit 1', [ident])
        if not rows:
            rows = self.rows(f"select * from \"{table}\" where id like ? escape '\\' limit 2", [_like_prefix(ident)])
        return rows[0] if len(rows) == 1 else None

    def ids_with_prefix(self, table: str, prefix: str, limit: int = 10) -> list[str]:
        """The ids of `table` that start with `prefix`, newest first: what an ambiguous prefix means."""
        self.checked(table, ["id"])
        rows = self.rows(
            f"select id from \"{table}\" where id like ? escape '\\' order by rowid desc limit ?",
            [_like_prefix(prefix), limit],
        )
        return [row["id"] for row in rows]


def _like_prefix(prefix: str) -> str:
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"
