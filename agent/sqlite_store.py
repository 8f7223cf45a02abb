"""Opening the SQLite files hearth keeps (the audit and the knowledge base): one way, used by both.

WAL (readers never wait for a writer), a busy timeout (writers wait for each other instead of
failing), write transactions taken up front, and migrations as a list of small functions applied
once each. The files stay plain SQLite, readable as-is by sqlite-utils and Datasette.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import sqlite_utils

from agent.clock import utc_now

BUSY_TIMEOUT_S = 30.0
Migration = Callable[[sqlite_utils.Database], None]


def open_database(path: str | Path, *, check_same_thread: bool = True) -> sqlite_utils.Database:
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=check_same_thread)
    _ensure_wal(conn)
    conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    return sqlite_utils.Database(conn)


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
def immediate(db: sqlite_utils.Database) -> Iterator[None]:
    """A write transaction taken up front, so two writers wait instead of failing mid-way."""
    if db.conn.in_transaction:  # nested: the outer transaction holds the lock already
        yield
        return
    db.conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.conn.execute("ROLLBACK")
        raise
    db.conn.execute("COMMIT")


def migrate(db: sqlite_utils.Database, migrations: Sequence[Migration]) -> None:
    """Apply every migration not yet recorded, in order, each in its own transaction."""
    db.execute("create table if not exists _migrations (name text primary key, applied_at text)")
    for migration in migrations:
        with immediate(db):
            if not db.execute("select 1 from _migrations where name = ?", [migration.__name__]).fetchone():
                migration(db)
                db.execute("insert into _migrations values (?, ?)", [migration.__name__, utc_now()])
