"""What every owner module of the audit stands on: how it reads (`Rows`), what a writer is
(`Writer`, which the AuditStore is), the refusal of a name the audit does not have, and the caps
on text a row keeps. A leaf: the owner modules import it, and store.py composes them."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from hearth.errors import HearthError

ARGUMENTS_CAP = 4_000
OUTPUT_CAP = 8_000


class ColumnRefused(HearthError):
    """A row or a change naming a table or a column the audit does not have, or a column its writer
    may not set (a row's key, a step's run); nothing was written."""


class Rows(Protocol):
    """What a read goes through: an AuditStore, or the command center's read-only connection
    (hearth/audit/reader.py). The owner modules' reads take either."""

    def rows(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ...) -> list[dict[str, Any]]: ...


class Writer(Rows, Protocol):
    """What the owner modules' writes need of the AuditStore (and what its mix-ins stand on)."""

    conn: sqlite3.Connection
    clock: Callable[[], str]

    def insert(self, table: str, row: Mapping[str, Any], *, or_ignore: bool = False) -> int: ...

    def insert_many(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None: ...

    def update(self, table: str, key: Any, fields: Mapping[str, Any], *, pk: str = "id") -> None: ...

    def checked(self, table: str, names: Iterable[str], *, fixed: Iterable[str] = ()) -> None: ...

    def transaction(self) -> contextlib.AbstractContextManager[None]: ...

    def find_by_id_or_prefix(self, table: str, ident: str) -> dict[str, Any] | None: ...

    def ids_with_prefix(self, table: str, prefix: str, limit: int = 10) -> list[str]: ...


def cap(text: str | None, limit: int) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} characters not stored]"


def newest(db: Rows, select: str, run: str, limit: int) -> list[dict[str, Any]]:
    """The newest `limit` rows (by id) of `select` (a statement ending in its conditions), of one run
    (`run`; '': every run's)."""
    clause, params = (" and run_id = ?", [run]) if run else ("", [])
    return db.rows(f"{select}{clause} order by id desc limit ?", [*params, limit])
