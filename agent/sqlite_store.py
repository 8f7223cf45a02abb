"""Opening the SQLite files hearth keeps (the audit and the knowledge base): one way, used by both.

WAL (readers never wait for a writer), a busy timeout (writers wait for each other instead of
failing), write transactions taken up front, and migrations as a list of small functions applied
once each. The files stay plain SQLite, readable as-is by sqlite-utils and Datasette.

`SqliteFile` is what both stores are: `conn`, the raw connection every read and row write of a
run goes through, and `db`, the same connection seen through sqlite-utils, built on first use
(migrations, and writes by table name). sqlite-utils takes about as long to import as a whole
run's audit writes, so a file whose migrations are all applied never loads it.
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.clock import utc_now

if TYPE_CHECKING:
    import sqlite_utils

BUSY_TIMEOUT_S = 30.0
Migration = Callable[["sqlite_utils.Database"], None]


def connect(path: str | Path, *, check_same_thread: bool = True) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=check_same_thread)
    _ensure_wal(conn)
    conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


def _ensure_wal(conn: sqlite3.Connection) -> None:
    """Switch a new file to WAL. The switch takes an exclusive lock and SQLite answers `locked` at
    once, without the busy handler, when another process is creating the same file: retry then."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


@contextlib.contextmanager
def immediate(db: sqlite3.Connection | sqlite_utils.Database) -> Iterator[None]:
    """A write transaction taken up front, so two writers wait instead of failing mid-way."""
    conn = db if isinstance(db, sqlite3.Connection) else db.conn
    if conn.in_transaction:  # nested: the outer transaction holds the lock already
        yield
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


class SqliteFile:
    """One of hearth's SQLite files, opened and migrated."""

    def __init__(self, path: str | Path, migrations: Sequence[Migration], *, check_same_thread: bool = True) -> None:
        self.path = Path(path)
        self.conn = connect(self.path, check_same_thread=check_same_thread)
        migrate(self, migrations)

    @functools.cached_property
    def db(self) -> sqlite_utils.Database:
        import sqlite_utils

        return sqlite_utils.Database(self.conn)

    def close(self) -> None:
        self.conn.close()

    def rows(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[dict[str, Any]]:
        """The rows a query returns, each a dict by column name."""
        cursor = self.conn.execute(sql, params)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]

    def insert(self, table: str, row: Mapping[str, Any], *, or_ignore: bool = False) -> int:
        """Insert one row; its rowid. Table and column names come from hearth's code, never from input."""
        columns = ", ".join(f'"{name}"' for name in row)
        marks = ", ".join("?" * len(row))
        verb = "insert or ignore" if or_ignore else "insert"
        cursor = self.conn.execute(f'{verb} into "{table}" ({columns}) values ({marks})', list(row.values()))
        return cursor.lastrowid or 0

    def update(self, table: str, key: Any, fields: Mapping[str, Any], *, pk: str = "id") -> None:
        if not fields:
            return
        assignments = ", ".join(f'"{name}" = ?' for name in fields)
        self.conn.execute(f'update "{table}" set {assignments} where "{pk}" = ?', [*fields.values(), key])


def migrate(store: SqliteFile, migrations: Sequence[Migration]) -> None:
    """Apply every migration not yet recorded, in order, each in its own transaction."""
    conn = store.conn
    conn.execute("create table if not exists _migrations (name text primary key, applied_at text)")
    applied = {row[0] for row in conn.execute("select name from _migrations")}
    for migration in migrations:
        if migration.__name__ in applied:
            continue
        with immediate(conn):
            if not conn.execute("select 1 from _migrations where name = ?", [migration.__name__]).fetchone():
                migration(store.db)
                conn.execute("insert into _migrations values (?, ?)", [migration.__name__, utc_now()])
