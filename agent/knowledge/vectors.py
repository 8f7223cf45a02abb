"""The vectors of knowledge.db: sqlite-vec, one set of tables per embedding model and dimension.

For each model+dimension (its `key`, e.g. `nomic_embed_text_768`) and each kind of row (`chunks`,
`lessons`) there are two tables: `emb_<key>_<kind>`, a plain table of the float32 vectors (with
the row's content hash and scope), and `vec_<key>_<kind>`, a sqlite-vec index of the same vectors
quantised to one bit per dimension. A search scans the bit index (hamming distance: 96 bytes a
vector at 768 dimensions, which sqlite-vec scans far faster than floats) for a wider set of
candidates, then ranks those by exact cosine distance over the float vectors, in scope. Two models
never share a table, so changing the model never mixes vectors. `embed_models` (migration k003)
records which sets exist and which one is `active`; every statement on these tables is here
(semantic.py decides when a set is made, filled and switched to).

A vector counts only while its hash equals its row's: a chunk rewritten, or a deleted id reused,
is simply unembedded again, so no delete of a chunk has to reach these tables in its own
transaction (`sweep` drops the stale ones later).

The tables are reached through a connection of their own (`open_vec`): the stdlib sqlite3 of some
Python builds (pyenv's, by default) cannot load extensions; pysqlite3 can, when it is installed.
When neither can, `open_vec` says why and search stays lexical.
"""

from __future__ import annotations

import array
import re
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agent.errors import AgentError
from agent.sqlite_store import BUSY_TIMEOUT_S

KINDS = ("chunks", "lessons")
COARSE = 4  # candidates from the bit index per neighbour wanted (then ranked exactly)
MIN_COARSE = 40


class VecUnavailable(AgentError):
    """sqlite-vec cannot be loaded here; str() says why and what to do."""


def open_vec(path: Path) -> Any:
    """A connection to knowledge.db with sqlite-vec loaded, or VecUnavailable saying why."""
    try:
        import sqlite_vec  # type: ignore[import-untyped]
    except ImportError:
        raise VecUnavailable("the sqlite-vec package is not installed (pip install sqlite-vec)") from None
    for module in _drivers():
        conn = module.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        try:
            conn.enable_load_extension(True)
            sqlite_vec.load(conn)
            conn.enable_load_extension(False)
        except Exception:  # any driver that cannot load it is passed over alike
            conn.close()
            continue
        conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        return conn
    raise VecUnavailable(
        "this Python's sqlite3 cannot load extensions (built without --enable-loadable-sqlite-extensions); "
        "install pysqlite3-binary, or use a Python that can (Debian's, nixpkgs')"
    )


def _drivers() -> list[Any]:
    drivers: list[Any] = [sqlite3] if hasattr(sqlite3.Connection, "enable_load_extension") else []
    try:
        import pysqlite3.dbapi2 as alternative  # type: ignore[import-not-found, import-untyped, unused-ignore]

        drivers.append(alternative)
    except ImportError:
        pass
    return drivers


def model_key(model: str, dim: int) -> str:
    """A table-name-safe key of one model and dimension: `nomic-embed-text:v1.5`, 768 -> ..._768."""
    return re.sub(r"[^a-z0-9]+", "_", model.lower()).strip("_")[:60] + f"_{dim}"


def create_tables(conn: Any, key: str, dim: int) -> None:
    for kind in KINDS:
        conn.execute(
            f"create table if not exists emb_{key}_{kind} (id integer primary key, hash text, scope text, vector blob)"
        )
        conn.execute(f"create virtual table if not exists vec_{key}_{kind} using vec0(embedding bit[{dim}])")


def drop_tables(conn: Any, key: str) -> None:
    for kind in KINDS:
        conn.execute(f"drop table if exists emb_{key}_{kind}")
        conn.execute(f"drop table if exists vec_{key}_{kind}")


def active_set(conn: Any) -> tuple[str, str, int] | None:
    """The active set's key, model and dimension, or None before one is made."""
    row = conn.execute("select key, model, dim from embed_models where state = 'active'").fetchone()
    return (str(row[0]), str(row[1]), int(row[2])) if row else None


def record_set(conn: Any, key: str, model: str, dim: int, state: str, at: str) -> None:
    """A set of model+dim recorded (`active`, or `building` for a re-embed), unless it is already."""
    conn.execute(
        "insert into embed_models(key, model, dim, state, created_at) values (?, ?, ?, ?, ?) on conflict(key) do nothing",
        [key, model, dim, state, at],
    )


def switch_to(conn: Any, new_key: str, old_key: str | None) -> None:
    """Make new the active set and drop the old one's tables and record, in one transaction."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        if old_key is not None and old_key != new_key:
            drop_tables(conn, old_key)
            conn.execute("delete from embed_models where key = ?", [old_key])
        conn.execute("update embed_models set state = 'active' where key = ?", [new_key])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def pack(vector: list[float]) -> bytes:
    return array.array("f", vector).tobytes()


def put(conn: Any, key: str, kind: str, rows: Iterable[tuple[int, str, str, list[float]]]) -> int:
    """Store (id, hash, scope, vector) rows, replacing any older vector of the same id."""
    count = 0
    for row_id, digest, scope, vector in rows:
        blob = pack(vector)
        conn.execute(f"insert or replace into emb_{key}_{kind} values (?, ?, ?, ?)", [row_id, digest, scope, blob])
        conn.execute(f"delete from vec_{key}_{kind} where rowid = ?", [row_id])
        conn.execute(
            f"insert into vec_{key}_{kind}(rowid, embedding) values (?, vec_quantize_binary(?))", [row_id, blob]
        )
        count += 1
    return count


def source_of(kind: str) -> str:
    """The rows a kind's vectors belong to: (id, hash, scope, text to embed)."""
    if kind == "chunks":
        return "select c.id, c.hash, d.scope, c.title || char(10) || c.text from chunks c join documents d on d.id = c.doc_id"
    return "select l.id, l.hash, l.scope, l.lesson || case when l.tags != '' then ' (' || l.tags || ')' else '' end from lessons l"


def pending(conn: Any, key: str, kind: str, limit: int) -> list[tuple[int, str, str, str]]:
    """Rows without a current vector in this set, oldest first."""
    alias = "c" if kind == "chunks" else "l"
    sql = (
        f"{source_of(kind)} left join emb_{key}_{kind} e on e.id = {alias}.id and e.hash = {alias}.hash "
        f"where e.id is null order by {alias}.id limit ?"
    )
    return [tuple(row) for row in conn.execute(sql, [limit]).fetchall()]


def count_pending(conn: Any, key: str, kind: str) -> int:
    alias = "c" if kind == "chunks" else "l"
    sql = (
        f"select count(*) from ({source_of(kind)} left join emb_{key}_{kind} e "
        f"on e.id = {alias}.id and e.hash = {alias}.hash where e.id is null)"
    )
    return int(conn.execute(sql).fetchone()[0])


def sweep(conn: Any, key: str, kind: str) -> int:
    """Drop vectors whose row is gone or was rewritten (their hash no longer matches)."""
    table = "chunks" if kind == "chunks" else "lessons"
    stale = [
        r[0]
        for r in conn.execute(
            f"select e.id from emb_{key}_{kind} e left join {table} t on t.id = e.id and t.hash = e.hash "
            "where t.id is null"
        ).fetchall()
    ]
    for row_id in stale:
        conn.execute(f"delete from emb_{key}_{kind} where id = ?", [row_id])
        conn.execute(f"delete from vec_{key}_{kind} where rowid = ?", [row_id])
    return len(stale)


def neighbours(
    conn: Any, key: str, kind: str, query: list[float], scopes: Iterable[str] | None, n: int
) -> list[tuple[int, float]]:
    """(id, cosine similarity) of the n nearest current rows in these scopes, nearest first."""
    blob = pack(query)
    wide = max(MIN_COARSE, COARSE * n)
    ids = [
        r[0]
        for r in conn.execute(
            f"select rowid from vec_{key}_{kind} where embedding match vec_quantize_binary(?) and k = ?", [blob, wide]
        ).fetchall()
    ]
    if not ids:
        return []
    table = "chunks" if kind == "chunks" else "lessons"
    where, params = "", []
    if scopes is not None:
        wanted = list(scopes)
        where, params = f" and e.scope in ({','.join('?' * len(wanted))})", wanted
    sql = (
        f"select e.id, 1.0 - vec_distance_cosine(e.vector, ?) as similarity from emb_{key}_{kind} e "
        f"join {table} t on t.id = e.id and t.hash = e.hash "
        f"where e.id in ({','.join('?' * len(ids))}){where} order by similarity desc limit ?"
    )
    return [(int(i), float(s)) for i, s in conn.execute(sql, [blob, *ids, *params, n]).fetchall()]
