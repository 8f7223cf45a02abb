"""The knowledge page and /api/knowledge say how each hit was found (text, meaning or both), and
why a search was by text only when the embedder is away."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx

from hearth.knowledge import open_knowledge
from hearth.settings import Settings
from tests.agent.knowledge.test_semantic import CONCEPTS, needs_vec
from tests.fake_ollama import FakeOllama, concept_vectors
from tests.web_support import Center


def seed(settings: Settings) -> None:
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    with open_knowledge(settings) as kb:
        kb.add("The backup job needs the NAS mounted first.", title="Backups", source="ops/backups.md")
        kb.add("Copy the nightly report to the wiki.", title="Report", source="ops/report.md")


@needs_vec
def test_the_knowledge_page_shows_how_each_hit_was_found(state_dir: Path) -> None:
    with FakeOllama(embedders={"nomic-embed-text": concept_vectors(CONCEPTS)}) as fake:
        settings = replace(Settings.from_env(), model_host=fake.url)
        seed(settings)
        with Center(settings) as center:
            page = httpx.get(center.url + "/knowledge", params={"q": "nightly copy"}).text
            api = httpx.get(center.url + "/api/knowledge", params={"q": "nightly copy"}).json()
    assert {(h["source"], h["way"]) for h in api["hits"]} == {("ops/report.md", "text"), ("ops/backups.md", "meaning")}
    assert api["lexical"] is None
    assert 'found by <span class="way">meaning</span>' in page and 'found by <span class="way">text</span>' in page
    assert "Found by text only" not in page


def test_the_knowledge_page_says_why_it_searched_by_text_only(state_dir: Path) -> None:
    settings = replace(Settings.from_env(), model_host="http://127.0.0.1:9")
    seed(settings)
    with Center(settings) as center:
        page = httpx.get(center.url + "/knowledge", params={"q": "nightly copy"}).text
    assert "Found by text only: cannot reach http://127.0.0.1:9/api/embed: connection refused" in page
    assert 'found by <span class="way">text</span>' in page


@needs_vec
def test_the_ways_read_well_at_both_widths_and_pass_axe(state_dir: Path, browser: Any) -> None:
    with FakeOllama(embedders={"nomic-embed-text": concept_vectors(CONCEPTS)}) as fake:
        settings = replace(Settings.from_env(), model_host=fake.url)
        seed(settings)
        with Center(settings) as center:
            for width, height in ((1280, 900), (390, 844)):
                page = browser.page(width, height)
                page.goto(center.url + "/knowledge?q=nightly+copy")
                assert "found by meaning" in page.inner_text(".hits")
                browser.shot(page, f"knowledge-ways-{width}")
                assert browser.axe(page) == []
