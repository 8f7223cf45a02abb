"""The knowledge base and long-term memory: one SQLite file (sqlite-utils, FTS5, BM25 ranking).

Shared by every run; each row has a scope, `global` or `agent:NAME`, and a run sees the global
rows plus its own agent's. Documents are split into overlapping chunks; each chunk keeps a content
hash, so re-adding a changed document rewrites only the chunks that changed, and re-adding an
unchanged one costs one hash comparison. Lessons (`remember`) are short texts with tags.

Writers take the write lock up front (BEGIN IMMEDIATE) and the file is in WAL mode with a busy
timeout, so several runs can write at once. Chunking lives in `agent/knowledge/chunking.py`, the
walk of a directory in `agent/knowledge/indexing.py`, the tables in `agent/knowledge/migrations.py`
and the text of a search (its FTS5 query, scope tokens, snippets) in `agent/knowledge/query.py`;
this module stores and ranks. With an embedder, search is hybrid: full-text ranks fused with vector
neighbours (agent/knowledge/semantic.py), each hit saying which way it was found; new rows are
embedded after their write commits, within a bound, and the rest later (`embed_pending`).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.clock import utc_now
from agent.knowledge.chunking import chunk_text
from agent.knowledge.embedding import Embedder
from agent.knowledge.migrations import MIGRATIONS
from agent.knowledge.query import chunk_match, fts_query, scope_token, snippet
from agent.knowledge.semantic import DEFAULT_EMBED_MODEL, WRITE_BOUND_S, Fusion, Semantic, fuse
from agent.sqlite_store import SqliteFile, immediate

if TYPE_CHECKING:
    from agent.services import RunServices


def content_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def document_hash(title: str, text: str) -> str:
    return content_hash(f"{title}\0{text}")


def scopes_for(agent_name: str | None) -> tuple[str, ...]:
    """What a run of this agent sees: the global scope and its own."""
    return ("global",) if not agent_name else ("global", f"agent:{agent_name}")


@dataclass
class Hit:
    chunk_id: int
    doc_id: int
    title: str
    source: str
    scope: str
    snippet: str
    text: str
    score: float  # the fused score: higher is better
    way: str = "text"  # how it was found: text, meaning or both


@dataclass
class Lesson:
    id: int
    scope: str
    lesson: str
    tags: str
    created_at: str
    score: float = 0.0
    way: str = "text"


@dataclass
class Stored:
    """What one add did: the document's id and how many chunks were added, kept and removed."""

    doc_id: int
    added: int
    kept: int
    removed: int
    unchanged: bool = False


class KnowledgeStore(SqliteFile):
    """The knowledge base and memory in one SQLite file; see the module docstring."""

    def __init__(
        self,
        path: str | Path,
        *,
        clock: Callable[[], str] = utc_now,
        embedder: Embedder | None = None,
        embed_model: str = DEFAULT_EMBED_MODEL,
        fusion: Fusion | None = None,
        on_lexical: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(path, MIGRATIONS, check_same_thread=False)
        self.clock = clock
        self.semantic = Semantic(self.path, self.conn, embedder, embed_model, fusion or Fusion(), on_lexical)

    def close(self) -> None:
        self.semantic.close()
        super().close()

    def embed_pending(self, budget_s: float = WRITE_BOUND_S) -> int:
        """Embed rows written without a vector, for at most budget_s; how many were embedded."""
        return self.semantic.embed_pending(budget_s)

    def __enter__(self) -> KnowledgeStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """One write transaction, the lock taken up front so two writers wait instead of failing."""
        with immediate(self.conn):
            yield

    # -- documents -------------------------------------------------------------------------
    def add(
        self,
        text: str,
        *,
        title: str,
        source: str,
        scope: str = "global",
        kind: str = "note",
        collection: str | None = None,
    ) -> Stored:
        """Add or update the document (scope, source); only changed chunks are rewritten."""
        with self.writing():
            stored = self.put(text, title, source, scope, kind, collection)
        if stored.added:
            self.embed_pending()
        return stored

    def put(self, text: str, title: str, source: str, scope: str, kind: str, collection: str | None) -> Stored:
        """`add` for callers that hold `writing()` already (a batch of files)."""
        digest = document_hash(title, text)
        row = self.conn.execute(
            "select id, content_hash, collection from documents where scope = ? and source = ?", [scope, source]
        ).fetchone()
        now = self.clock()
        if row and row[1] == digest:
            if collection and row[2] != collection:  # the same file, now indexed from another directory
                self.db.table("documents").update(row[0], {"collection": collection})
            return Stored(row[0], 0, self._chunk_count(row[0]), 0, unchanged=True)
        fields = {
            "title": title,
            "kind": kind,
            "collection": collection,
            "content_hash": digest,
            "chars": len(text),
            "updated_at": now,
        }
        if row:
            doc_id = row[0]
            self.db.table("documents").update(doc_id, fields)
        else:
            doc_id = (
                self.db.table("documents")
                .insert({"scope": scope, "source": source, "created_at": now, **fields})
                .last_pk
            )
        return self._sync_chunks(doc_id, title, scope, chunk_text(text))

    def _sync_chunks(self, doc_id: int, title: str, scope: str, chunks: list[str]) -> Stored:
        old = self.conn.execute("select id, hash, title from chunks where doc_id = ?", [doc_id]).fetchall()
        wanted = {content_hash(c): (seq, c) for seq, c in reversed(list(enumerate(chunks)))}
        kept: dict[str, int] = {}
        for cid, digest, old_title in old:  # a chunk is kept when its text and title are unchanged
            if digest in wanted and old_title == title and digest not in kept:
                kept[digest] = cid
        stale = [cid for cid, digest, _ in old if kept.get(digest) != cid]
        for start in range(0, len(stale), 500):
            part = stale[start : start + 500]
            self.conn.execute(f"delete from chunks where id in ({','.join('?' * len(part))})", part)
        rows = [
            {"doc_id": doc_id, "seq": seq, "hash": h, "title": title, "text": c, "scope": scope_token(scope)}
            for h, (seq, c) in wanted.items()
            if h not in kept
        ]
        if rows:
            self.db.table("chunks").insert_all(rows)
        for digest, cid in kept.items():  # a kept chunk may have moved; its text (and index) stays
            self.conn.execute(
                "update chunks set seq = ? where id = ? and seq != ?", [wanted[digest][0], cid, wanted[digest][0]]
            )
        return Stored(doc_id, len(rows), len(kept), len(stale))

    def _chunk_count(self, doc_id: int) -> int:
        return self.conn.execute("select count(*) from chunks where doc_id = ?", [doc_id]).fetchone()[0]

    def collection_hashes(self, collection: str, scope: str) -> dict[str, str]:
        """source -> content hash of every document indexed from one directory."""
        rows = self.conn.execute(
            "select source, content_hash from documents where collection = ? and scope = ?", [collection, scope]
        ).fetchall()
        return dict(rows)

    def remove(self, ref: str | int, scopes: Iterable[str] | None = None) -> int:
        """Remove documents by id or by source; returns how many went."""
        docs = self._find_documents(ref, scopes)
        with self.writing():
            for doc_id in docs:
                self.conn.execute("delete from chunks where doc_id = ?", [doc_id])
                self.conn.execute("delete from documents where id = ?", [doc_id])
        return len(docs)

    def remove_sources(self, sources: Iterable[str], scope: str) -> int:
        """Inside a write transaction: drop these documents (files deleted since the last index)."""
        count = 0
        for source in sources:
            row = self.conn.execute(
                "select id from documents where scope = ? and source = ?", [scope, source]
            ).fetchone()
            if row:
                self.conn.execute("delete from chunks where doc_id = ?", [row[0]])
                self.conn.execute("delete from documents where id = ?", [row[0]])
                count += 1
        return count

    def _find_documents(self, ref: str | int, scopes: Iterable[str] | None) -> list[int]:
        where, params = _scope_clause(scopes, "scope")
        key: int | str
        if isinstance(ref, int) or str(ref).isdigit():
            sql, key = f"select id from documents where id = ?{where}", int(ref)
        else:
            sql, key = f"select id from documents where source = ?{where}", str(ref)
        return [r[0] for r in self.conn.execute(sql, [key, *params]).fetchall()]

    def documents(self, scopes: Iterable[str] | None = None, limit: int = 200) -> list[dict[str, Any]]:
        where, params = _scope_clause(scopes, "d.scope")
        sql = (
            "select d.id, d.scope, d.title, d.source, d.kind, d.chars, d.updated_at, "
            "(select count(*) from chunks c where c.doc_id = d.id) as chunks "
            f"from documents d where 1 = 1{where} order by d.updated_at desc, d.id desc limit ?"
        )
        return [
            dict(zip(("id", "scope", "title", "source", "kind", "chars", "updated_at", "chunks"), row))
            for row in self.conn.execute(sql, [*params, limit]).fetchall()
        ]

    def search(self, query: str, *, scopes: Iterable[str] | None = None, k: int = 5) -> list[Hit]:
        """The k chunks that best match query, best first: BM25 ranks (a title match counts double)
        fused with the vector neighbours' when semantic recall is on."""
        depth = max(4 * k, 20)
        match = chunk_match(query, scopes)
        # rank by score alone, then fetch the k best rows; snippets are cut in Python (FTS5's
        # snippet() in the ranking query runs for every match, and with MATCH again costs 2 ms)
        text = (
            [
                r[0]
                for r in self.conn.execute(
                    "select rowid, bm25(chunks_fts, 2.0, 1.0, 0.0) as score from chunks_fts "
                    "where chunks_fts match ? order by score limit ?",
                    [match, depth],
                ).fetchall()
            ]
            if match is not None
            else []
        )
        ranked = {
            cid: (score, way)
            for cid, score, way in fuse(
                text, self.semantic.neighbours("chunks", query, scopes, _near(k)), self.semantic.fusion
            )[:k]
        }
        if not ranked:
            return []
        sql = (
            "select c.id, c.doc_id, c.title, d.source, d.scope, c.text from chunks c "
            f"join documents d on d.id = c.doc_id where c.id in ({','.join('?' * len(ranked))})"
        )
        hits = [
            Hit(cid, doc, title, source, scope, snippet(text, query), text, *ranked[cid])
            for cid, doc, title, source, scope, text in self.conn.execute(sql, list(ranked)).fetchall()
        ]
        return sorted(hits, key=lambda hit: (-hit.score, hit.chunk_id))

    # -- lessons ---------------------------------------------------------------------------
    def remember(self, lesson: str, *, tags: str = "", scope: str = "global", run_id: str = "") -> tuple[int, bool]:
        """Store a lesson; (id, False) when the same lesson is already stored in that scope."""
        digest = content_hash(" ".join(lesson.split()).lower())
        with self.writing():
            row = self.conn.execute("select id from lessons where scope = ? and hash = ?", [scope, digest]).fetchone()
            if row:
                return row[0], False
            record = {
                "scope": scope,
                "lesson": lesson,
                "tags": tags,
                "hash": digest,
                "run_id": run_id,
                "created_at": self.clock(),
            }
            lesson_id = int(self.db.table("lessons").insert(record).last_pk or 0)
        self.embed_pending()
        return lesson_id, True

    def recall(self, query: str, *, scopes: Iterable[str] | None = None, k: int = 5) -> list[Lesson]:
        """The k lessons that best match query, best first (BM25 fused with meaning, as `search`)."""
        depth = max(4 * k, 20)
        match = fts_query(query)
        where, params = _scope_clause(scopes, "l.scope")
        sql = (
            "select l.id, bm25(lessons_fts, 1.0, 0.5) as score "
            "from lessons_fts join lessons l on l.id = lessons_fts.rowid "
            f"where lessons_fts match ?{where} order by score limit ?"
        )
        text = [r[0] for r in self.conn.execute(sql, [match, *params, depth]).fetchall()] if match else []
        meaning = self.semantic.neighbours("lessons", query, scopes, _near(k))
        ranked = {i: (score, way) for i, score, way in fuse(text, meaning, self.semantic.fusion)[:k]}
        if not ranked:
            return []
        rows = self.conn.execute(
            f"select id, scope, lesson, tags, created_at from lessons where id in ({','.join('?' * len(ranked))})",
            list(ranked),
        ).fetchall()
        found = [Lesson(i, scope, text, tags, at, *ranked[i]) for i, scope, text, tags, at in rows]
        return sorted(found, key=lambda lesson: (-lesson.score, lesson.id))

    def lessons(self, scopes: Iterable[str] | None = None, limit: int = 200) -> list[Lesson]:
        where, params = _scope_clause(scopes, "scope")
        sql = f"select id, scope, lesson, tags, created_at from lessons where 1 = 1{where} order by id desc limit ?"
        return [Lesson(*row) for row in self.conn.execute(sql, [*params, limit]).fetchall()]

    def forget(self, lesson_id: int, scopes: Iterable[str] | None = None) -> bool:
        where, params = _scope_clause(scopes, "scope")
        with self.writing():
            cursor = self.conn.execute(f"delete from lessons where id = ?{where}", [lesson_id, *params])
        return cursor.rowcount > 0


def _near(k: int) -> int:
    """How many vector neighbours a search of k fuses: fewer than its text candidates, because
    sqlite-vec's top-k scan grows faster than k (64 candidates cost a quarter of 128's)."""
    return max(2 * k, 10)


def _scope_clause(scopes: Iterable[str] | None, column: str) -> tuple[str, list[str]]:
    if scopes is None:
        return "", []
    wanted = list(scopes)
    return f" and {column} in ({','.join('?' * len(wanted))})", wanted


def run_store(services: RunServices) -> KnowledgeStore | None:
    """The run's knowledge store: `services.knowledge`, else the one at `services.knowledge_path`,
    opened on first use (a run that never touches knowledge never opens the file)."""
    if services.knowledge is None and services.knowledge_path is not None:
        services.knowledge = KnowledgeStore(
            services.knowledge_path,
            embedder=services.embedder,
            embed_model=services.embed_model,
            fusion=services.recall_fusion,
            on_lexical=services.on_lexical,
        )
    store = services.knowledge
    if store is not None and not isinstance(store, KnowledgeStore):
        raise TypeError(f"a run's knowledge must be a KnowledgeStore, not {type(store).__name__}")
    if store is not None and services.on_lexical is not None:
        store.semantic.on_lexical = services.on_lexical  # set after a store handed in was opened
    return store
