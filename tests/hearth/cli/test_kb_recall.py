"""`hearth kb search|embed|reembed` with the fake's /api/embed: how each hit was found, vectors
given later to what was stored while the embedder was away, and a re-embed to another model."""

from __future__ import annotations

import json
from pathlib import Path

from tests.agent.knowledge.test_semantic import CONCEPTS, needs_vec
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, concept_vectors


def hearth(fake: FakeOllama | str, *args: str) -> tuple[int, str, str]:
    host = fake.url if isinstance(fake, FakeOllama) else fake
    proc = run_cli("hearth", *args, env={"OLLAMA_HOST": host, "HEARTH_EMBED_MODEL": "embed-a"})
    return proc.returncode, proc.stdout, proc.stderr


@needs_vec
def test_kb_commands_embed_later_search_both_ways_and_reembed_to_another_model(state_dir: Path) -> None:
    gone = "http://127.0.0.1:9"  # nothing listens there: stored by text only
    code, _, _ = hearth(gone, "kb", "add", "--text", "The backup job needs the NAS mounted first.", "--source", "b")
    assert code == 0
    code, out, err = hearth(gone, "kb", "search", "backup job")
    assert code == 0 and "found by text" in out and "(by text only: cannot reach" in err
    embedders = {"embed-a": concept_vectors(CONCEPTS, 768), "embed-b": concept_vectors(CONCEPTS, 384)}
    with FakeOllama(embedders=embedders) as fake:
        code, out, _ = hearth(fake, "kb", "embed", "--json")
        assert code == 0 and json.loads(out) == {
            "model": "embed-a",
            "embedded": 1,
            "stale_dropped": 0,
            "with_vectors": 1,
            "total": 1,
        }
        code, out, err = hearth(fake, "kb", "search", "why does the nightly copy fail", "--json")
        assert code == 0 and [(h["source"], h["way"]) for h in json.loads(out)] == [("b", "meaning")]
        code, out, err = hearth(fake, "kb", "reembed", "--model", "embed-b", "--json")
        assert code == 0 and json.loads(out) == {"model": "embed-b", "dim": 384, "chunks_and_lessons": 1}
        assert "HEARTH_EMBED_MODEL still says 'embed-a'" in err
        code, out, _ = hearth(fake, "kb", "search", "nightly copy backup job")
    assert code == 0 and "found by text and meaning" in out
    assert fake.embeds[-1] == {"model": "embed-b", "input": ["nightly copy backup job"]}


def test_kb_reembed_with_the_embedder_down_says_so_and_changes_nothing(state_dir: Path) -> None:
    code, _, _ = hearth("http://127.0.0.1:9", "kb", "add", "--text", "a note", "--source", "n")
    code, out, err = hearth("http://127.0.0.1:9", "kb", "reembed", "--model", "embed-b")
    assert code != 0 and "re-embedding stopped (run it again to go on): cannot reach" in err
    code, out, _ = hearth("http://127.0.0.1:9", "kb", "search", "note")
    assert code == 0 and "found by text" in out


@needs_vec
def test_an_embedder_answering_vectors_too_wide_is_refused_in_one_line_and_text_search_goes_on(
    state_dir: Path,
) -> None:
    reason = (
        "embed-a answered 20000-dimension vectors; the vector index holds at most 8192: "
        "use an embedding model with fewer dimensions (HEARTH_EMBED_MODEL)"
    )
    with FakeOllama(embedders={"embed-a": concept_vectors(CONCEPTS, 20_000)}) as fake:
        code, out, err = hearth(
            fake, "kb", "add", "--text", "The backup job needs the NAS mounted first.", "--source", "b"
        )
        assert (code, err.strip()) == (0, f"(by text only: {reason})") and "stored (1 chunks added" in out
        code, out, err = hearth(fake, "kb", "embed")
        assert (code, err.strip()) == (2, f"hearth kb: nothing embedded: {reason}")
        code, out, err = hearth(fake, "kb", "reembed", "--model", "embed-a")
        assert code == 2 and err.strip() == f"hearth kb: re-embedding stopped (run it again to go on): {reason}"
        code, out, err = hearth(fake, "kb", "search", "backup job")
    assert code == 0 and "found by text" in out and err.strip() == f"(by text only: {reason})"
