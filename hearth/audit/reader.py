"""audit.db opened for reading only: the command center's reads, and a process that only watches
a run's status (a fleet worker's task threads).

`file:...?mode=ro`, so nothing read this way can write the file (WAL lets it read while runs
write). Each thread keeps its own connection: FastAPI runs page handlers in a pool of threads and
a connection stays in one. An audit that does not exist yet, or lacks a table, reads as empty.
The owner modules' reads take an AuditReader as they take an AuditStore (`Rows`).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


class AuditReader:
    def __init__(self, path: Path, *, timeout: float = 5.0) -> None:
        self.path = path
        self.timeout = timeout
        self._local = threading.local()

    def _conn(self) -> sqlite3.Connection | None:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None and self.path.exists():
            conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=self.timeout, check_same_thread=False)
            conn.row_factory = sqlite3.Row
            self._local.conn = conn
        return conn

    def rows(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[dict[str, Any]]:
        """The rows of a query as dicts; none when the audit or its table does not exist yet."""
        conn = self._conn()
        if conn is None:
            return []
        try:
            return [dict(row) for row in conn.execute(sql, params)]
        except sqlite3.OperationalError as exc:
            if "no such" in str(exc):
                return []
            raise

    def forget(self) -> None:
        """Close this thread's connection (after an error): the next read opens it again."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            conn.close()


class Changes:
    """Whether anyone wrote the audit since the last look: SQLite's `data_version`, which moves when
    another connection commits, read through one read-only connection of its own (the counter is a
    connection's), from any thread, until closed. The lock: the reading thread may ask while another
    closes it (a server being stopped), and a connection closed under a running statement can crash
    sqlite3."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._closed = False

    def version(self) -> int | None:
        """The counter now; None while the audit does not exist, after `close`, or when it cannot be read."""
        with self._lock:
            if self._closed:
                return None
            if self._conn is None and self.path.exists():
                self._conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
            try:
                return self._conn.execute("pragma data_version").fetchone()[0] if self._conn else None
            except sqlite3.Error:
                return None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def quick_check(path: Path) -> str:
    """SQLite's quick_check of the audit, read-only: "ok", or what is damaged (sqlite3.Error when
    the file cannot be read at all)."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return str(conn.execute("pragma quick_check").fetchone()[0])
