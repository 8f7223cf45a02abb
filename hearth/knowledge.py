"""The knowledge base as the appliance opens it: with the embedder and fusion weights its settings name.

One place for the CLI, the command center, `hearth watch` and every run, so they all search the
same way (hybrid when HEARTH_EMBED_MODEL names a model Ollama has, by text otherwise) and embed
with the same model. `embed_backlog` is the background half of "nothing is lost": chunks stored
while the embedder was down get their vectors when it is back.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from hearth.settings import Settings

if TYPE_CHECKING:
    from agent.knowledge.embedding import Embedder
    from agent.knowledge.semantic import Fusion
    from agent.knowledge.store import KnowledgeStore


def embedder_for(settings: Settings) -> Embedder | None:
    """The model server's embedder (of its kind), or None when semantic recall is off (HEARTH_EMBED_MODEL=off)."""
    if not settings.embed_model:
        return None
    from agent.model.backends import HostEmbedder

    return HostEmbedder(settings.model_host)


def fusion_for(settings: Settings) -> Fusion:
    from agent.knowledge.semantic import Fusion

    return Fusion(text_weight=settings.recall_text_weight, meaning_weight=settings.recall_meaning_weight)


def open_knowledge(settings: Settings, on_lexical: Callable[[str], None] | None = None) -> KnowledgeStore:
    from agent.knowledge.store import KnowledgeStore

    return KnowledgeStore(
        settings.knowledge_path,
        embedder=embedder_for(settings),
        embed_model=settings.embed_model,
        fusion=fusion_for(settings),
        on_lexical=on_lexical,
    )


BACKLOG_EVERY_S = 60.0  # how often `hearth watch` and `serve` look for rows without vectors
log = logging.getLogger(__name__)


def embed_backlog(settings: Settings, budget_s: float = 10.0) -> int:
    """Embed what was stored without vectors, for at most budget_s (a pass of `hearth watch`, `serve`)."""
    if not settings.embed_model or not settings.knowledge_path.exists():
        return 0
    with open_knowledge(settings) as store:
        done = store.embed_pending(budget_s)
        if store.semantic.enabled:
            store.semantic.sweep()  # vectors of removed or rewritten chunks, which search skips anyway
        return done


class Backlog:
    """A daemon thread embedding the backlog now and every `every_s`; `stop` ends it."""

    def __init__(self, settings: Settings, every_s: float = BACKLOG_EVERY_S) -> None:
        self.settings, self.every_s = settings, every_s
        self.passes = 0  # passes made, for a test to wait on
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="hearth-embed-backlog", daemon=True)

    def start(self) -> Backlog:
        if self.settings.embed_model:
            self.thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while True:
            try:
                embed_backlog(self.settings)
            except Exception as exc:  # a pass that failed is tried again next time; the watch goes on
                log.warning("embedding the knowledge backlog failed: %s", exc)
            self.passes += 1
            if self._stop.wait(self.every_s):
                return
