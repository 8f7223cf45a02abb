"""The appliance's knowledge base: the background pass of `hearth watch`/`serve` embeds what was
stored while the embedder was away."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from hearth.knowledge import Backlog, open_knowledge
from hearth.settings import Settings
from tests.agent.knowledge.test_semantic import CONCEPTS, needs_vec
from tests.fake_ollama import FakeOllama, concept_vectors


@needs_vec
def test_the_background_pass_embeds_what_was_stored_while_the_embedder_was_away(state_dir: Path) -> None:
    away = replace(Settings.from_env(), model_host="http://127.0.0.1:9")
    away.state_dir.mkdir(parents=True)
    with open_knowledge(away) as kb:
        kb.add("The backup job needs the NAS mounted first.", title="b", source="b")
        assert [h.way for h in kb.search("why does the nightly copy fail")] == []
    with FakeOllama(embedders={"nomic-embed-text": concept_vectors(CONCEPTS)}) as fake:
        back = replace(away, model_host=fake.url)
        backlog = Backlog(back, every_s=3600).start()
        deadline = time.monotonic() + 60
        while backlog.passes < 1 and time.monotonic() < deadline:  # wait on the pass, not the clock
            time.sleep(0.05)
        backlog.stop()
        with open_knowledge(back) as kb:
            hits = kb.search("why does the nightly copy fail")
    assert backlog.passes >= 1
    assert [(h.source, h.way) for h in hits] == [("b", "meaning")]
    assert fake.embeds[0]["input"] == ["search_document: b\nThe backup job needs the NAS mounted first."]
