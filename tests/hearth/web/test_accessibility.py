"""Every existing page of the command center, in a real Chromium at a desktop's and a phone's
width: axe-core finds no serious or critical violation, every action is reachable with the
keyboard, and the screenshots are saved for a person to look at."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.knowledge.store import KnowledgeStore
from hearth.audit.store import AuditStore
from hearth.evolve import Proposal, record_proposal
from hearth.fleet import hub
from hearth.settings import Settings
from tests.browser_support import Browser
from tests.web_support import Center, seed_runs

WIDTHS = {"desktop": (1280, 900), "phone": (390, 844)}
PAGES = (
    "/",
    "/launch",
    "/runs",
    "/runs?status=done&q=tests",
    "/runs/seed-00000",
    "/approvals",
    "/report",
    "/report?since=",
    "/knowledge",
    "/knowledge?q=tuesdays",
    "/proposals",
    "/runs/no-such-run",
    "/operate/fleet",
)


def _furnish(state_dir: Path) -> None:
    seed_runs(state_dir, 60, steps=3)
    with KnowledgeStore(state_dir / "knowledge.db") as store:
        store.add("Releases are cut on Tuesdays after the tests pass.", title="Release process", source="docs/r.md")
        store.remember("Run pytest before reporting success.", tags="tests")
    diff = "diff --git a/flake.nix b/flake.nix\n--- a/flake.nix\n+++ b/flake.nix\n@@ -1 +1 @@\n-old\n+new\n"
    proposal = Proposal("evolve-1", "tidy flake", "/etc/nixos", "hearth/evolve-1", "abc123", "proposed", diff=diff)
    record_proposal(Settings.from_env(), proposal)
    with AuditStore(state_dir / "audit.db") as audit:  # a worker with a run, so the fleet's page is not empty
        gpu1 = hub.identify(audit, "Bearer " + hub.add_worker(audit, "gpu1", ["gpu"], "test"))
        hub.heartbeat(audit, gpu1, ["qwen2.5-coder:7b"], [{"run_id": "seed-00001", "state": "thinking"}])


@pytest.mark.parametrize("width", WIDTHS)
def test_every_page_passes_axe_at_each_width(center: Center, browser: Browser, state_dir: Path, width: str) -> None:
    _furnish(state_dir)
    page = browser.page(*WIDTHS[width])
    found = {}
    for path in PAGES:
        page.goto(center.url + path)
        page.wait_for_load_state("networkidle")
        found[path] = browser.axe(page)
        name = path.strip("/").replace("/", "-").replace("?", "-").replace("=", "-").replace("&", "-") or "overview"
        browser.shot(page, f"a11y-{width}-{name}")
        assert page.evaluate("document.documentElement.lang") == "en" and page.title().endswith("hearth"), path
        # nothing sideways: a phone shows every page within its width
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), path
    assert found == {path: [] for path in PAGES}


def test_an_empty_audit_still_renders_every_page(center: Center, browser: Browser) -> None:
    page = browser.page(390, 844)
    for path in ("/", "/runs", "/approvals", "/report", "/report?since=", "/knowledge", "/proposals", "/operate/fleet"):
        answer = page.goto(center.url + path)
        assert answer is not None and answer.status == 200, path
        assert browser.axe(page) == [], path


def test_the_replay_and_stop_are_reached_with_the_tab_key(center: Center, browser: Browser, state_dir: Path) -> None:
    [run_id] = seed_runs(state_dir, 1, steps=3)
    page = browser.page()
    page.goto(f"{center.url}/runs/{run_id}")
    reached = []
    for _ in range(60):
        page.keyboard.press("Tab")
        reached.append(page.evaluate("document.activeElement.dataset.replay || document.activeElement.id || ''"))
    assert {"first", "prev", "next", "all", "stop-all"} <= set(reached)
    page.keyboard.press("Escape")
    # every control is a native one (a link, a button, a field): no click handler on a bare element
    bare = page.evaluate(
        "document.querySelectorAll('[onclick], div[tabindex]:not(.table-wrap), span[tabindex]').length"
    )
    assert bare == 0
