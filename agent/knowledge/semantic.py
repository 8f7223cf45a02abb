"""Semantic recall: vector neighbours of a query, fused with full-text ranks, never in the way.

`Semantic` belongs to one KnowledgeStore. It asks the embedder for the query's vector (bounded by
QUERY_TIMEOUT_S), finds the nearest chunks or lessons in the active model's tables
(agent/knowledge/vectors.py), and embeds rows that have no vector yet (`embed_pending`, bounded
in time, so a write never waits on the embedder longer than WRITE_BOUND_S). When anything fails
(no embedder configured, sqlite-vec not loadable, the server down or slow, the model not pulled,
garbage or a vector of the wrong dimension) it goes lexical for the rest of its life and says why
once, through `on_lexical` (a run records that as one `recall` step).

`fuse` is reciprocal-rank fusion: each way a row was found adds weight / (rrf_k + rank), so a row
found by text and by meaning beats one found either way alone; each hit says which way it came.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.clock import utc_now
from agent.knowledge import vectors
from agent.knowledge.embedding import Embedder, EmbedFailed, too_wide

DEFAULT_EMBED_MODEL = "nomic-embed-text"
QUERY_TIMEOUT_S = 5.0
WRITE_BOUND_S = 2.0
EMBED_BATCH = 64


@dataclass(frozen=True)
class Fusion:
    """How text and meaning ranks are fused (HEARTH_RECALL_TEXT_WEIGHT, HEARTH_RECALL_MEANING_WEIGHT)."""

    text_weight: float = 1.0
    meaning_weight: float = 1.0
    rrf_k: int = 60  # the usual constant: a rank's weight falls slowly, so both lists count
    min_similarity: float = 0.5  # a neighbour less alike than this is not a meaning hit at all


def fuse(text: list[int], meaning: list[tuple[int, float]], fusion: Fusion) -> list[tuple[int, float, str]]:
    """(id, fused score, way) best first; way is text, meaning or both."""
    scores: dict[int, float] = {}
    ways: dict[int, set[str]] = {}
    for rank, row_id in enumerate(text, 1):
        scores[row_id] = scores.get(row_id, 0.0) + fusion.text_weight / (fusion.rrf_k + rank)
        ways.setdefault(row_id, set()).add("text")
    kept = [row_id for row_id, similarity in meaning if similarity >= fusion.min_similarity]
    for rank, row_id in enumerate(kept, 1):
        scores[row_id] = scores.get(row_id, 0.0) + fusion.meaning_weight / (fusion.rrf_k + rank)
        ways.setdefault(row_id, set()).add("meaning")
    order = sorted(scores, key=lambda row_id: (-scores[row_id], row_id))
    return [
        (row_id, scores[row_id], "both" if len(ways[row_id]) == 2 else next(iter(ways[row_id]))) for row_id in order
    ]


@dataclass(frozen=True)
class ActiveSet:
    key: str
    model: str
    dim: int


class Semantic:
    """The vector side of one knowledge store; see the module docstring."""

    def __init__(
        self,
        path: Path,
        conn: Any,
        embedder: Embedder | None,
        model: str,
        fusion: Fusion,
        on_lexical: Callable[[str], None] | None = None,
    ) -> None:
        self.path, self.conn, self.embedder, self.model, self.fusion = path, conn, embedder, model, fusion
        self.on_lexical = on_lexical
        self.reason: str | None = None if embedder is not None and model else "semantic recall is off"
        self._vec: Any = None
        self._queries: dict[tuple[str, str], list[float]] = {}

    @property
    def enabled(self) -> bool:
        return self.reason is None

    def close(self) -> None:
        closing = getattr(self.embedder, "close", None)  # the store owns its embedder's connections
        if closing is not None:
            closing()
        if self._vec is not None:
            self._vec.close()
            self._vec = None

    def go_lexical(self, why: str) -> None:
        """From now on search by text alone; the first reason is the one said, once."""
        if self.reason is None:
            self.reason = why
            if self.on_lexical is not None:
                self.on_lexical(why)

    def vec(self) -> Any:
        if self._vec is None:
            self._vec = vectors.open_vec(self.path)
        return self._vec

    def active(self) -> ActiveSet | None:
        found = vectors.active_set(self.conn)
        return ActiveSet(*found) if found else None

    # -- search ----------------------------------------------------------------------------
    def neighbours(self, kind: str, query: str, scopes: Iterable[str] | None, n: int) -> list[tuple[int, float]]:
        """(id, similarity) of the n nearest rows, or [] when lexical (the reason said once)."""
        if not self.enabled or not query.strip():
            return []
        try:
            vec = self.vec()
            active = self.active()
            model = active.model if active else self.model
            vector = self._query_vector(model, query, active.dim if active else None)
            if active is None:
                return []  # nothing embedded yet: the first write makes the set
            return vectors.neighbours(vec, active.key, kind, vector, scopes, n)
        except (EmbedFailed, vectors.VecUnavailable) as exc:
            self.go_lexical(str(exc))
        except Exception as exc:  # recall must never break a search
            self.go_lexical(f"the vector search failed: {type(exc).__name__}: {exc}")
        return []

    def _query_vector(self, model: str, query: str, dim: int | None) -> list[float]:
        if (model, query) not in self._queries:  # auto-recall asks for lessons and chunks of one goal
            assert self.embedder is not None
            vector = self.embedder.embed(model, [_as_query(model, query)], timeout_s=QUERY_TIMEOUT_S)[0]
            _check_dim(model, vector, dim)
            self._queries[(model, query)] = vector
        return self._queries[(model, query)]

    # -- writing vectors -------------------------------------------------------------------
    def embed_pending(self, budget_s: float = WRITE_BOUND_S, limit: int | None = None) -> int:
        """Embed rows that have no vector in the active set, within budget_s; how many were."""
        if not self.enabled:
            return 0
        try:
            return self._fill(None, budget_s, limit)
        except (EmbedFailed, vectors.VecUnavailable) as exc:
            self.go_lexical(str(exc))
        except Exception as exc:  # recall must never break a write: the text is stored, search goes on by it
            self.go_lexical(f"storing the vectors failed: {type(exc).__name__}: {exc}")
        return 0

    def fill(self, target: ActiveSet | None, budget_s: float, limit: int | None = None) -> int:
        """`embed_pending` for the CLI: errors raise (EmbedFailed, VecUnavailable) instead."""
        return self._fill(target, budget_s, limit)

    def _fill(self, target: ActiveSet | None, budget_s: float, limit: int | None) -> int:
        deadline = time.monotonic() + budget_s
        vec = self.vec()
        done = 0
        for kind in vectors.KINDS:
            while limit is None or done < limit:
                left = deadline - time.monotonic()
                if left <= 0.05:
                    return done
                target = target or self.active()
                key = target.key if target else None
                rows = vectors.pending(vec, key, kind, EMBED_BATCH) if key else self._first_rows(kind)
                if not rows:
                    break
                model = target.model if target else self.model
                got = self.embedder.embed(model, [_as_document(model, r[3]) for r in rows], timeout_s=left)  # type: ignore[union-attr]
                _check_dim(model, got[0], target.dim if target else None)
                target = target or self.start_set(model, len(got[0]), "active")
                vec.execute("BEGIN IMMEDIATE")
                try:
                    done += vectors.put(vec, target.key, kind, [(r[0], r[1], r[2], v) for r, v in zip(rows, got)])
                    vec.execute("COMMIT")
                except BaseException:
                    vec.execute("ROLLBACK")
                    raise
        return done

    def _first_rows(self, kind: str) -> list[tuple[int, str, str, str]]:
        """Before any set exists: the first rows, embedded to learn the model's dimension."""
        rows = self.vec().execute(f"{vectors.source_of(kind)} order by 1 limit ?", [EMBED_BATCH]).fetchall()
        return [tuple(r) for r in rows]

    def start_set(self, model: str, dim: int, state: str) -> ActiveSet:
        """The tables of model+dim, made and recorded (`active`, or `building` for a re-embed)."""
        key = vectors.model_key(model, dim)
        vec = self.vec()
        vectors.create_tables(vec, key, dim)
        vectors.record_set(vec, key, model, dim, state, utc_now())
        return ActiveSet(key, model, dim)

    def reembed(self, model: str, progress: Callable[[int, int], None] | None = None) -> ActiveSet:
        """Every chunk and lesson into model's own set, batch by batch (re-running goes on where it
        stopped); search keeps the active set until the new one is complete, then the old goes.
        Errors raise (EmbedFailed, VecUnavailable): the operator asked for this."""
        if self.embedder is None:
            raise EmbedFailed("no embedder is configured (HEARTH_EMBED_MODEL is empty)")
        probe = self.embedder.embed(model, [_as_document(model, "dimension probe")], timeout_s=QUERY_TIMEOUT_S)[0]
        _check_dim(model, probe, None)
        old = self.active()
        target = self.start_set(model, len(probe), "building")
        if old is not None and old.key == target.key:
            target = old  # the same model and dimension: only what is missing
        while True:
            done, total = self.counts(target)
            if progress is not None:
                progress(done, total)
            if done >= total:
                break
            self._fill(target, budget_s=3600.0, limit=EMBED_BATCH)
        self._switch(old, target)
        return target

    def _switch(self, old: ActiveSet | None, new: ActiveSet) -> None:
        """Make new the active set and drop the old one's tables, in one transaction."""
        vectors.switch_to(self.vec(), new.key, old.key if old is not None else None)
        self._queries.clear()

    def sweep(self) -> int:
        """Drop the active set's vectors whose row is gone or rewritten; how many went."""
        active = self.active() if self.enabled else None
        if active is None:
            return 0
        vec = self.vec()
        vec.execute("BEGIN IMMEDIATE")
        try:
            dropped = sum(vectors.sweep(vec, active.key, kind) for kind in vectors.KINDS)
            vec.execute("COMMIT")
        except BaseException:
            vec.execute("ROLLBACK")
            raise
        return dropped

    def counts(self, target: ActiveSet) -> tuple[int, int]:
        """(rows with a current vector, rows in all) of one set."""
        vec = self.vec()
        total = sum(int(vec.execute(f"select count(*) from {k}").fetchone()[0]) for k in vectors.KINDS)
        missing = sum(vectors.count_pending(vec, target.key, k) for k in vectors.KINDS)
        return total - missing, total


def _check_dim(model: str, vector: list[float], dim: int | None) -> None:
    too_wide(model, len(vector))  # whatever the embedder checked: the index cannot hold more
    if dim is not None and len(vector) != dim:
        raise EmbedFailed(
            f"{model} answered {len(vector)}-dimension vectors, but its vectors here have {dim}; "
            f"re-embed: hearth kb reembed --model {model}"
        )


def _as_query(model: str, text: str) -> str:
    # nomic-embed-text was trained with task prefixes; other models take the text as it is
    return f"search_query: {text}" if model.startswith("nomic-embed") else text


def _as_document(model: str, text: str) -> str:
    return f"search_document: {text}" if model.startswith("nomic-embed") else text
