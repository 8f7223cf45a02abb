"""Hybrid recall against the fake model server's /api/embed: found by text, by meaning, or both,
and lexical (with one reason said) whenever the embedder is missing, down or answers garbage."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.knowledge import vectors
from agent.knowledge.embedding import EmbedFailed, checked_vectors
from agent.knowledge.store import KnowledgeStore
from agent.model.backends import HostEmbedder
from tests.fake_ollama import FakeOllama, Raw, concept_vectors

# the test's table of meanings: texts holding any phrase of a set point the same way
CONCEPTS = {
    "backup": ("backup job", "nightly copy", "nightly backup", "copy job"),
    "deploy": ("deploy", "release to production", "ship the build"),
}
WIDE = concept_vectors(CONCEPTS, 768)
NARROW = concept_vectors(CONCEPTS, 384)

try:
    vectors.open_vec(Path(":memory:")).close()
    VEC = ""
except vectors.VecUnavailable as exc:
    VEC = str(exc)
needs_vec = pytest.mark.skipif(bool(VEC), reason=VEC)


@pytest.fixture
def fake() -> Iterator[FakeOllama]:
    with FakeOllama(embedders={"embed-a": WIDE, "embed-b": NARROW}) as server:
        yield server


def open_store(
    path: Path, fake: FakeOllama | str, model: str = "embed-a", said: list[str] | None = None
) -> KnowledgeStore:
    host = fake.url if isinstance(fake, FakeOllama) else fake
    on_lexical = said.append if said is not None else None
    return KnowledgeStore(path, embedder=HostEmbedder(host), embed_model=model, on_lexical=on_lexical)


def fill(store: KnowledgeStore) -> None:
    store.add("The backup job needs the NAS mounted first.", title="Backups", source="backups")
    store.add("Bread needs flour, water, salt and yeast.", title="Bread", source="bread")
    store.add("Error E4711Q means the disk quota is spent.", title="Quota", source="quota")


@needs_vec
def test_a_paraphrase_full_text_misses_is_found_by_meaning(tmp_path: Path, fake: FakeOllama) -> None:
    with KnowledgeStore(tmp_path / "k.db") as lexical:
        fill(lexical)
        assert lexical.search("why does the nightly copy fail") == []
    with open_store(tmp_path / "k.db", fake) as store:
        assert store.embed_pending() == 3  # written without an embedder: embedded now
        hits = store.search("why does the nightly copy fail")
    assert [(h.source, h.way) for h in hits] == [("backups", "meaning")]
    assert fake.embeds[-1]["model"] == "embed-a"
    assert fake.embeds[-1]["input"] == ["why does the nightly copy fail"]


@needs_vec
def test_an_exact_rare_term_is_still_found_by_text_when_vectors_miss(tmp_path: Path, fake: FakeOllama) -> None:
    with open_store(tmp_path / "k.db", fake) as store:
        fill(store)
        hits = store.search("E4711Q")
    assert [(h.source, h.way) for h in hits] == [("quota", "text")]


@needs_vec
def test_fusion_ranks_a_hit_found_both_ways_first(tmp_path: Path, fake: FakeOllama) -> None:
    with open_store(tmp_path / "k.db", fake) as store:
        store.add("The backup job needs the NAS mounted first.", title="Backups", source="meaning-only")
        store.add("Copy the nightly report to the wiki.", title="Report", source="text-only")
        store.add("The nightly copy writes its log to /var/log/copy.", title="Copy log", source="both")
        hits = store.search("nightly copy", k=5)
    assert [(h.source, h.way) for h in hits][0] == ("both", "both")
    assert {(h.source, h.way) for h in hits[1:]} == {("meaning-only", "meaning"), ("text-only", "text")}
    assert hits[0].score > hits[1].score >= hits[2].score


@needs_vec
def test_lessons_are_recalled_by_meaning_within_their_scopes(tmp_path: Path, fake: FakeOllama) -> None:
    with open_store(tmp_path / "k.db", fake) as store:
        store.remember("The backup job needs the NAS mounted first.", scope="agent:ops")
        store.remember("Deploy only before Friday noon.", scope="agent:web")
        mine = store.recall("why does the nightly copy fail", scopes=("global", "agent:ops"))
        theirs = store.recall("why does the nightly copy fail", scopes=("global", "agent:web"))
    assert [(x.lesson, x.way) for x in mine] == [("The backup job needs the NAS mounted first.", "meaning")]
    assert theirs == []  # another agent's lesson stays out of sight, by meaning as by text


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (None, "connection refused"),
        ("missing", "the embedding model embed-a is not pulled; run: ollama pull embed-a"),
        (Raw(200, "<html>not json</html>"), "not JSON"),
        (Raw(200, json.dumps({"embeddings": [["a", "b"]]})), "not a list of numbers"),
        (Raw(200, json.dumps({"embeddings": []})), "answered 0 vectors for 1 texts"),
        (Raw(500, json.dumps({"error": "out of memory"})), "HTTP 500: out of memory"),
    ],
)
def test_a_broken_embedder_gives_lexical_results_and_one_reason(
    tmp_path: Path, fake: FakeOllama, answer: Raw | str | None, reason: str
) -> None:
    said: list[str] = []
    host = f"http://127.0.0.1:{free_port()}" if answer is None else fake.url
    if isinstance(answer, Raw):
        fake.embedders["embed-a"] = answer
    elif answer == "missing":
        del fake.embedders["embed-a"]
    with open_store(tmp_path / "k.db", host, said=said) as store:
        fill(store)
        hits = store.search("disk quota E4711Q")
        again = store.search("bread flour")
        lessons = store.recall("anything at all")
    assert [(h.source, h.way) for h in hits] == [("quota", "text")]
    assert [(h.source, h.way) for h in again] == [("bread", "text")]
    assert lessons == []
    assert len(said) == 1 and reason in said[0]


@needs_vec
def test_vectors_wider_than_the_index_holds_are_refused_and_the_text_is_stored_and_found(
    tmp_path: Path, fake: FakeOllama
) -> None:
    fake.embedders["embed-a"] = concept_vectors(CONCEPTS, 20_000)
    said: list[str] = []
    with open_store(tmp_path / "k.db", fake, said=said) as store:
        fill(store)
        hits = store.search("backup job")
    assert [(h.source, h.way) for h in hits] == [("backups", "text")]
    assert said == [
        "embed-a answered 20000-dimension vectors; the vector index holds at most 8192: "
        "use an embedding model with fewer dimensions (HEARTH_EMBED_MODEL)"
    ]


def test_an_answer_wider_than_the_index_holds_is_refused_by_the_check_of_every_answer() -> None:
    with pytest.raises(EmbedFailed, match="answered 8193-dimension vectors; the vector index holds at most 8192"):
        checked_vectors([[0.5] * 8193], 1, "wide")
    assert len(checked_vectors([[0.5] * 8192], 1, "widest")[0]) == 8192


@needs_vec
def test_a_vector_of_the_wrong_dimension_gives_lexical_results_and_says_so(tmp_path: Path, fake: FakeOllama) -> None:
    with open_store(tmp_path / "k.db", fake) as store:
        fill(store)
    fake.embedders["embed-a"] = NARROW  # the same name now answers 384 dimensions
    said: list[str] = []
    with open_store(tmp_path / "k.db", fake, said=said) as store:
        hits = store.search("why does the nightly copy fail")
        store.search("nightly backup")
    assert hits == []
    assert said == [
        "embed-a answered 384-dimension vectors, but its vectors here have 768; re-embed: hearth kb reembed --model embed-a"
    ]


def test_a_write_never_waits_on_a_hung_embedder_past_its_bound(tmp_path: Path, fake: FakeOllama) -> None:
    fake.embedders["embed-a"] = Raw(200, json.dumps({"embeddings": [WIDE("x")]}), delay_s=6.0)
    said: list[str] = []
    with open_store(tmp_path / "k.db", fake, said=said) as store:
        fill(store)  # stored, each write bounded; the embedder never answered in time
        hits = store.search("disk quota")
    assert [h.source for h in hits] == ["quota"]
    assert said == [f"{fake.url}/api/embed did not answer within 2.0 s"]


@needs_vec
def test_chunks_stored_while_the_embedder_was_down_are_embedded_later(tmp_path: Path, fake: FakeOllama) -> None:
    with open_store(tmp_path / "k.db", f"http://127.0.0.1:{free_port()}") as store:
        fill(store)
    with open_store(tmp_path / "k.db", fake) as store:
        assert store.embed_pending() == 3
        assert store.embed_pending() == 0
        assert [h.way for h in store.search("why does the nightly copy fail")] == ["meaning"]


@needs_vec
def test_reembedding_to_another_dimension_keeps_search_working_throughout(tmp_path: Path, fake: FakeOllama) -> None:
    with open_store(tmp_path / "k.db", fake) as store:
        for n in range(150):  # more than two batches, so the re-embed is seen half done
            store.add(f"Note {n} about bread number {n}.", title=f"Note {n}", source=f"n{n}")
        fill(store)
        seen: list[tuple[int, int, list[str]]] = []

        def during(done: int, total: int) -> None:
            hits = store.search("why does the nightly copy fail", k=1)
            seen.append((done, total, [f"{h.source}/{h.way}" for h in hits]))
            if len(seen) == 2:
                raise KeyboardInterrupt  # the operator stops it half way

        with pytest.raises(KeyboardInterrupt):
            store.semantic.reembed("embed-b", during)
        assert store.semantic.active() is not None and store.semantic.active().dim == 768  # type: ignore[union-attr]
        store.semantic.reembed("embed-b", during)
        after = store.search("why does the nightly copy fail", k=1)
        tables = {r[0] for r in store.conn.execute("select name from sqlite_master where name glob 'emb_*'")}
    assert all(hits == ["backups/meaning"] for _, _, hits in seen)
    assert seen[0][0] == 0 and seen[1][0] == 64  # the second run went on from where the first stopped
    assert seen[2][0] == 64 and seen[-1][0] == seen[-1][1] == 153
    assert [f"{h.source}/{h.way}" for h in after] == ["backups/meaning"]
    assert tables == {"emb_embed_b_384_chunks", "emb_embed_b_384_lessons"}  # the old set went when the new was whole


def test_reembed_without_an_embedder_says_how_to_turn_it_on(tmp_path: Path) -> None:
    with KnowledgeStore(tmp_path / "k.db") as store, pytest.raises(EmbedFailed, match="HEARTH_EMBED_MODEL"):
        store.semantic.reembed("embed-b")


@needs_vec
def test_a_rewritten_chunk_is_not_found_by_its_old_meaning_and_its_vector_is_swept(
    tmp_path: Path, fake: FakeOllama
) -> None:
    with (
        open_store(tmp_path / "k.db", f"http://127.0.0.1:{free_port()}") as away,
        open_store(tmp_path / "k.db", fake) as store,
    ):
        store.add("The backup job needs the NAS mounted first.", title="Backups", source="b")
        away.add("Bread needs flour and water.", title="Backups", source="b")  # rewritten, no new vector
        hits = store.search("why does the nightly copy fail")
        assert store.semantic.sweep() == 1
        assert store.embed_pending() == 1
    assert hits == []  # the old vector no longer matches its row's hash
