"""The doctor's check of semantic recall: is it on, can it be, and are the vectors current?

Its own room because it reads the knowledge base and asks Ollama for one model, which neither the
host checks (host.py) nor the file checks (files.py) do. Semantic recall is optional: nothing here
is an error, since without it search is lexical and runs go on; each finding that is not `ok` says
how to turn it on.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agent.model.tags import resolve_tag
from hearth.doctor.finding import Finding
from hearth.settings import Settings

HOW = "ollama pull {m}, or on NixOS: services.hearth.settings.embedModel (the module pulls it)"


def check_recall(settings: Settings, probe: Callable[[str], list[str] | None]) -> list[Finding]:
    model = settings.embed_model
    if not model:
        how = HOW.format(m="nomic-embed-text")
        return [Finding("recall", "info", f"semantic recall is off (HEARTH_EMBED_MODEL=off); to turn it on: {how}")]
    from agent.knowledge.vectors import VecUnavailable, open_vec

    try:
        open_vec(Path(":memory:")).close()  # loading the extension is the question, not the file
    except (VecUnavailable, OSError) as exc:
        return [Finding("recall", "warn", f"semantic recall cannot work here, search is by text only: {exc}")]
    pulled = probe(settings.embedder_host)
    if pulled is None:
        where = f"the embedding host {settings.embed_host}" if settings.embed_host else "the model host"
        return [Finding("recall", "info", f"semantic recall not checked: {where} does not answer")]
    tagged = resolve_tag(model, pulled)  # the embedder asks for the tag the server has (agent/model/backends.py)
    if tagged is None:
        how = HOW.format(m=model)
        return [Finding("recall", "warn", f"search is by text only: the embedding model {model} is not pulled; {how}")]
    shown = model if tagged in (model, f"{model}:latest") else f"{model} (pulled as {tagged})"
    return [Finding("recall", "ok", f"semantic recall with {shown}"), *_vectors(settings, model)]


def _vectors(settings: Settings, model: str) -> list[Finding]:
    """What the knowledge base holds: whose vectors, and how many rows still wait for one."""
    if not settings.knowledge_path.exists():
        return []
    from agent.knowledge.store import KnowledgeStore

    with KnowledgeStore(settings.knowledge_path, embed_model=model) as store:
        active = store.semantic.active()
        if active is None:
            return [Finding("recall", "info", "nothing is embedded yet; run: hearth kb embed")]
        have, total = store.semantic.counts(active)
    found = []
    if active.model != model:
        found.append(
            Finding(
                "recall",
                "warn",
                f"the knowledge base's vectors are from {active.model}, HEARTH_EMBED_MODEL says {model}; "
                f"run: hearth kb reembed --model {model}",
            )
        )
    if have < total:
        found.append(
            Finding(
                "recall", "info", f"{total - have} of {total} chunks and lessons wait for vectors; run: hearth kb embed"
            )
        )
    return found
