"""The doctor's recall check: off, not pulled, vectors from another model, rows waiting; never an error."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from agent.knowledge.store import KnowledgeStore
from agent.model.backends import HostEmbedder
from hearth.doctor.recall import check_recall
from hearth.settings import Settings
from tests.agent.knowledge.test_semantic import CONCEPTS, needs_vec
from tests.fake_ollama import FakeOllama, concept_vectors


def settings_for(state_dir: Path, model: str) -> Settings:
    return replace(Settings.from_env(), embed_model=model)


def test_recall_off_says_how_to_turn_it_on(state_dir: Path) -> None:
    found = check_recall(settings_for(state_dir, ""), lambda host: [])
    assert [(f.status, f.message) for f in found] == [
        (
            "info",
            "semantic recall is off (HEARTH_EMBED_MODEL=off); to turn it on: ollama pull nomic-embed-text, "
            "or on NixOS: services.hearth.settings.embedModel (the module pulls it)",
        )
    ]


@needs_vec
def test_an_embedding_model_not_pulled_is_a_warning_naming_the_pull(state_dir: Path) -> None:
    found = check_recall(settings_for(state_dir, "nomic-embed-text"), lambda host: ["qwen2.5-coder:latest"])
    assert [f.status for f in found] == ["warn"]
    assert "the embedding model nomic-embed-text is not pulled; ollama pull nomic-embed-text" in found[0].message


@needs_vec
def test_vectors_from_another_model_and_rows_waiting_are_reported(state_dir: Path) -> None:
    settings = settings_for(state_dir, "embed-b")
    state_dir.mkdir(parents=True)
    with FakeOllama(embedders={"embed-a": concept_vectors(CONCEPTS)}) as fake:
        with KnowledgeStore(settings.knowledge_path, embedder=HostEmbedder(fake.url), embed_model="embed-a") as kb:
            kb.add("The backup job needs the NAS mounted first.", title="b", source="b")
        with KnowledgeStore(settings.knowledge_path) as kb:  # stored while the embedder was away
            kb.add("Bread needs flour.", title="bread", source="bread")
    found = check_recall(settings, lambda host: ["embed-b:latest"])
    assert [(f.status, f.message) for f in found] == [
        ("ok", "semantic recall with embed-b"),
        (
            "warn",
            "the knowledge base's vectors are from embed-a, HEARTH_EMBED_MODEL says embed-b; run: hearth kb reembed --model embed-b",
        ),
        ("info", "1 of 2 chunks and lessons wait for vectors; run: hearth kb embed"),
    ]
