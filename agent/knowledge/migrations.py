"""Migrations of knowledge.db: a list of small functions, applied once each, in order.

Never edit a shipped migration; add a new one at the end. Their names are recorded in
`_migrations` (`agent.sqlite_store.migrate`), so a rename re-runs it. A room of its own, as the
audit's are, so the file's tables are read in one place and a new one is added without touching
the code that reads and writes them (`agent.knowledge.store`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils


def k001_documents_and_chunks(db: sqlite_utils.Database) -> None:
    db.table("documents").create(
        {
            "id": int,
            "scope": str,
            "source": str,
            "title": str,
            "kind": str,
            "collection": str,
            "content_hash": str,
            "chars": int,
            "created_at": str,
            "updated_at": str,
        },
        pk="id",
    )
    db.table("documents").create_index(["scope", "source"], unique=True)
    db.table("documents").create_index(["collection"])
    db.table("chunks").create(
        {"id": int, "doc_id": int, "seq": int, "hash": str, "title": str, "text": str, "scope": str},
        pk="id",
        foreign_keys=[("doc_id", "documents", "id")],
    )
    db.table("chunks").create_index(["doc_id", "hash"])
    # scope is indexed as one token per chunk, so a scope filter is an FTS intersection rather than
    # a row lookup per match (half the cost of a search over 10,000 chunks)
    db.table("chunks").enable_fts(["title", "text", "scope"], tokenize="porter unicode61", create_triggers=True)


def k002_lessons(db: sqlite_utils.Database) -> None:
    db.table("lessons").create(
        {"id": int, "scope": str, "lesson": str, "tags": str, "hash": str, "run_id": str, "created_at": str}, pk="id"
    )
    db.table("lessons").create_index(["scope", "hash"], unique=True)
    db.table("lessons").enable_fts(["lesson", "tags"], tokenize="porter unicode61", create_triggers=True)


def k003_embed_models(db: sqlite_utils.Database) -> None:
    """The sets of vectors (agent/knowledge/vectors.py): one per embedding model and dimension,
    `active` (what search uses) or `building` (a re-embed not finished yet). The vector tables
    themselves are made by sqlite-vec's connection when a set starts, not here: this file must
    open and migrate where the extension cannot load."""
    db.table("embed_models").create(
        {"key": str, "model": str, "dim": int, "state": str, "created_at": str}, pk="key", not_null={"state"}
    )


MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = [k001_documents_and_chunks, k002_lessons, k003_embed_models]
