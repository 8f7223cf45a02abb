"""Knowledge base speed: kb_search p50/p95 over 10,000 chunks, and index_dir over 2,000 files.

Everything is generated here (a seeded vocabulary, so runs are comparable) into a temporary
directory: 10,000 one-chunk documents searched with 300 queries of 2 to 5 words through the
kb_search tool (the call a model makes), then a tree of 2,000 files indexed with index_dir,
re-indexed unchanged, and re-indexed after 20 files changed. Target: kb_search p50 under 5 ms.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.knowledge.query import fts_query
from agent.knowledge.store import KnowledgeStore
from agent.safety.workspace import Workspace
from agent.services import RunServices
from agent.tools.gate import call_tool

CHUNKS = 10_000
QUERIES = 300
FILES = 2_000
TARGET_MS = 5.0
rng = random.Random(4)
VOCABULARY = [
    f"{a}{b}"
    for a in ("ka", "lo", "mi", "nu", "pe", "ro", "su", "ti", "va", "ze")
    for b in (
        "ba",
        "ce",
        "di",
        "fo",
        "gu",
        "ha",
        "ji",
        "ko",
        "lu",
        "ma",
        "no",
        "pi",
        "qu",
        "ra",
        "se",
        "to",
        "vu",
        "wa",
        "xe",
        "yo",
    )
] * 3
VOCABULARY = [w + s for w, s in zip(VOCABULARY, ["", "n", "r"] * 200)]


def sentence(words: int) -> str:
    return " ".join(rng.choice(VOCABULARY) for _ in range(words)) + "."


def fill(store: KnowledgeStore) -> None:
    with store.writing():
        for n in range(CHUNKS):
            store.put(" ".join(sentence(12) for _ in range(8)), f"doc {n}", f"bench:{n}", "global", "note", None)


def search_times(ws: Workspace) -> tuple[list[float], float]:
    """Milliseconds per kb_search call, and how many chunks a query matched on average."""
    times, matched = [], []
    for _ in range(QUERIES):
        query = " ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(2, 5)))
        started = time.perf_counter()
        result = call_tool("kb_search", {"query": query, "k": 5}, ws)
        times.append((time.perf_counter() - started) * 1000)
        assert result.ok, result.output
        matched.append(
            ws.services.knowledge.db.execute(
                "select count(*) from chunks_fts where chunks_fts match ?", [fts_query(query)]
            ).fetchone()[0]
        )
    return times, statistics.mean(matched)


def make_tree(root: Path) -> None:
    for n in range(FILES):
        folder = root / f"pkg{n % 40}" / f"mod{n % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"file{n}.md").write_text("\n\n".join(sentence(14) for _ in range(rng.randint(3, 30))))


def timed_index(ws: Workspace) -> tuple[float, str]:
    started = time.perf_counter()
    result = call_tool("index_dir", {"path": "tree"}, ws)
    assert result.ok, result.output
    return time.perf_counter() - started, result.output


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = KnowledgeStore(Path(tmp) / "search.db")
        fill(store)
        with Workspace(tmp, services=RunServices(knowledge=store)) as ws:
            times, matched = search_times(ws)
        p50, p95 = statistics.median(times), percentile(times, 95)
        print(
            f"kb_search over {CHUNKS} chunks, {QUERIES} queries matching {matched:.0f} chunks each on average "
            "(a small vocabulary: harder than prose)"
        )
        print(
            f"  p50 {p50:.2f} ms = {p50 / TARGET_MS:.2f} of "
            f"target ({TARGET_MS:g} ms); p95 {p95:.2f} ms = {p95 / TARGET_MS:.2f} of target"
        )
        tree_store = KnowledgeStore(Path(tmp) / "tree.db")
        make_tree(Path(tmp) / "tree")
        with Workspace(tmp, services=RunServices(knowledge=tree_store)) as ws:
            first, report = timed_index(ws)
            again, _ = timed_index(ws)
            for n in range(0, FILES, FILES // 20):
                path = Path(tmp) / "tree" / f"pkg{n % 40}" / f"mod{n % 7}" / f"file{n}.md"
                path.write_text(path.read_text() + "\n\nChanged " + sentence(10))
            changed, _ = timed_index(ws)
        print(
            f"index_dir over {FILES} files: first {first:.2f} s ({FILES / first:.0f} files/s); "
            f"unchanged again {again:.2f} s ({again / first:.2f} of first); 20 changed {changed:.2f} s"
        )
        print(f"  {report}")


if __name__ == "__main__":
    main()
