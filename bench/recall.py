"""Semantic recall: hybrid search latency, the vector search's share of it, size, embedding throughput.

At 10,000 and 100,000 chunks of 768 dimensions (BENCH_SIZES), seeded straight into knowledge.db
(documents, chunks and their FTS5 rows through SQL, vectors through agent/knowledge/vectors.py:
no embedder is asked, so seeding is fast). Each sample is a hybrid search (`KnowledgeStore.search`,
k=8, the query's vector from an in-process embedder, so the HTTP round trip is not in it) paired
with the same search by text only, interleaved; the vector search's share is what the hybrid one
adds, over its time. The database size is read after a WAL checkpoint, per 10,000 chunks, with
what the vectors take. Then embedding throughput through tests/fake_ollama.py: chunks/s batched
(agent/model/backends.py, 64 a request) against one text a request.

Targets (issue 27): hybrid p95 under 15 ms at 10k and under 60 ms at 100k on this machine.
"""

from __future__ import annotations

import array
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.knowledge import vectors
from agent.knowledge.semantic import Fusion
from agent.knowledge.store import KnowledgeStore
from agent.model.backends import HostEmbedder
from tests.fake_ollama import FakeOllama, concept_vectors

SIZES = [int(n) for n in os.environ.get("BENCH_SIZES", "10000,100000").split(",")]
SAMPLES = int(os.environ.get("BENCH_SAMPLES", "60"))
DIM = 768
WORDS = [f"w{n}" for n in range(5000)] + ["backup", "nightly", "deploy", "staging", "database", "quota", "mount"]


class Fixed:
    """An in-process embedder: one vector per text from a seeded generator (search time only)."""

    def __init__(self) -> None:
        self.rng = random.Random(7)

    def embed(self, model: str, texts: list[str], *, timeout_s: float) -> list[list[float]]:
        return [[self.rng.uniform(-1, 1) for _ in range(DIM)] for _ in texts]


def seed(path: Path, n: int) -> None:
    rng = random.Random(n)
    with KnowledgeStore(path) as store:
        conn = store.conn
        conn.execute("BEGIN")
        conn.executemany(
            "insert into documents(id, scope, source, title, kind, content_hash, chars, created_at, updated_at) "
            "values (?, 'global', ?, ?, 'note', ?, 0, '', '')",
            [(d, f"doc{d}", f"Document {d}", f"h{d}") for d in range(1, n // 10 + 1)],
        )
        scope = "s" + b"global".hex()
        rows = []
        for c in range(1, n + 1):
            text = " ".join(rng.choice(WORDS) for _ in range(60))
            rows.append((c, (c - 1) // 10 + 1, c % 10, f"c{c}", f"Document {(c - 1) // 10 + 1}", text, scope))
        conn.executemany(
            "insert into chunks(id, doc_id, seq, hash, title, text, scope) values (?, ?, ?, ?, ?, ?, ?)", rows
        )
        conn.execute("COMMIT")
        vec = vectors.open_vec(path)
        key = vectors.model_key("bench-embed", DIM)
        vectors.create_tables(vec, key, DIM)
        vec.execute("insert into embed_models values (?, 'bench-embed', ?, 'active', '')", [key, DIM])
        vec.execute("BEGIN")
        for start in range(1, n + 1, 5000):
            batch = []
            for c in range(start, min(n, start + 4999) + 1):
                raw = array.array("b", rng.randbytes(DIM))
                batch.append((c, f"c{c}", "global", vectors.pack([x / 128 for x in raw])))
            vec.executemany(f"insert into emb_{key}_chunks values (?, ?, ?, ?)", batch)
            vec.executemany(
                f"insert into vec_{key}_chunks(rowid, embedding) values (?, vec_quantize_binary(?))",
                [(b[0], b[3]) for b in batch],
            )
        vec.execute("COMMIT")
        vec.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        vec.close()


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p * (len(ordered) - 1))))]


def measure(path: Path, n: int) -> None:
    queries = [" ".join(random.Random(i).choice(WORDS) for _ in range(6)) for i in range(SAMPLES)]
    hybrid_ms, text_ms = [], []
    with (
        KnowledgeStore(path, embedder=Fixed(), embed_model="bench-embed", fusion=Fusion(min_similarity=0.0)) as both,
        KnowledgeStore(path) as lexical,
    ):
        both.search("warm up", k=8)
        lexical.search("warm up", k=8)
        for query in queries:  # paired and interleaved: the same query both ways, one after the other
            started = time.perf_counter()
            hits = both.search(query, k=8)
            hybrid_ms.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            lexical.search(query, k=8)
            text_ms.append((time.perf_counter() - started) * 1000)
            assert any(h.way != "text" for h in hits), "the vector side found nothing"
        assert both.semantic.reason is None, both.semantic.reason
    share = [(h - t) / h for h, t in zip(hybrid_ms, text_ms) if h > 0]
    size = path.stat().st_size
    print(
        f"{n:>7} chunks: hybrid p50 {statistics.median(hybrid_ms):.1f} ms, p95 {pct(hybrid_ms, 0.95):.1f} ms "
        f"(text only p50 {statistics.median(text_ms):.1f} ms, p95 {pct(text_ms, 0.95):.1f} ms); "
        f"vector search share {statistics.median(share) * 100:.0f}% (median of pairs)"
    )
    print(f"{'':>7}         database {size / 1e6:.1f} MB, {size / 1e6 / (n / 10_000):.1f} MB per 10k chunks")


def throughput() -> None:
    texts = [f"Chunk {n} about the nightly copy and the backup job." for n in range(1280)]
    vector = concept_vectors({"backup": ("backup job",)}, DIM)("a chunk")
    with FakeOllama(embedders={"m": lambda text: vector}) as fake:  # the wire and batching, not the fake's maths
        embedder = HostEmbedder(fake.url)
        embedder.embed("m", texts[:64], timeout_s=30)  # warm up
        started = time.perf_counter()
        embedder.embed("m", texts, timeout_s=60)
        batched = len(texts) / (time.perf_counter() - started)
        started = time.perf_counter()
        for text in texts[:128]:
            embedder.embed("m", [text], timeout_s=30)
        single = 128 / (time.perf_counter() - started)
        embedder.close()
    print(
        f"embedding through the fake: {batched:.0f} chunks/s batched (64 a request), {single:.0f} chunks/s "
        f"one a request: {batched / single:.2f}x"
    )


def main() -> None:
    for n in SIZES:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "knowledge.db"
            started = time.perf_counter()
            seed(path, n)
            print(f"seeded {n} chunks in {time.perf_counter() - started:.0f} s")
            measure(path, n)
    throughput()


if __name__ == "__main__":
    main()
