"""Every page of the command center, the operator's included, in a real Chromium at a desktop's and
a phone's width, with real data (tests/hearth/web/furnished.py) and with none: axe-core finds no
serious or critical violation, every table reads (nothing scrolls sideways, no cell squeezed to a
sliver), the console stays clean, every action is reachable with the keyboard, and the screenshots
are saved for a person to look at (HEARTH_SCREENSHOTS keeps them)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hearth.leash import actions
from hearth.settings import Settings
from tests.browser_support import Browser
from tests.fake_ollama import FakeOllama
from tests.hearth.web.furnished import WAITS, furnish, reply, run_of
from tests.hearth.web.operate_support import OPERATOR
from tests.queue_support import rows
from tests.web_support import Center, seed_runs

WIDTHS = {"desktop": (1280, 900), "phone": (390, 844)}
PAGES = (
    "/",
    "/launch",
    "/runs",
    "/runs?status=done&q=tests",
    "/approvals",
    "/report",
    "/report?since=",
    "/knowledge",
    "/knowledge?q=tuesdays",
    "/proposals",
    "/proposals/evolve-1",
    "/evals",
    "/operate",
    "/operate/alerts",
    "/operate/budgets",
    "/operate/fleet",
    "/operate/mcp",
    "/operate/mcp/toy/review",
    "/operate/missions",
    "/operate/missions/new",
    "/operate/missions/nightly/edit",
    "/operate/models",
    "/operate/router",
    "/operate/security",
    "/operate/users",
    "/runs/no-such-run",
)
FURNISHED_ONLY = ("/proposals/evolve-1", "/operate/missions/nightly/edit", "/operate/mcp/toy/review")
EMPTY = tuple(p for p in PAGES if "?" not in p and p not in FURNISHED_ONLY)
MODELS = ("qwen2.5-coder:7b", "llama3.1:8b", "nomic-embed-text:latest")
DETAILS = {
    "qwen2.5-coder:7b": {
        "size": 4_683_087_332,
        "details": {"family": "qwen2", "parameter_size": "7.6B", "quantization_level": "Q4_K_M"},
    },
    "llama3.1:8b": {
        "size": 4_920_753_328,
        "details": {"family": "llama", "parameter_size": "8.0B", "quantization_level": "Q4_K_M"},
    },
}
LOADED = [
    {
        "name": "qwen2.5-coder:7b",
        "size": 6_000_000_000,
        "size_vram": 6_000_000_000,
        "expires_at": "2026-12-07T20:00:00Z",
    }
]
# a table reads when nothing in it scrolls sideways and no cell holding words is squeezed to a sliver
# (the runs list's goal was once 53 px wide beside long run ids), a chart when none of its words
# falls outside it (a phone cut the axis's 1000 to 000): what the page shows that does not
UNREADABLE = """() => {
  const found = [];
  for (const table of document.querySelectorAll("main table")) {
    if (!table.offsetParent) continue;
    const where = (table.closest("section") || table).querySelector("h1, h2")?.innerText || table.id || "a table";
    const box = table.closest(".table-wrap") || table.parentElement;
    if (box.scrollWidth > box.clientWidth + 1) found.push(`${where}: scrolls sideways`);
    for (const cell of table.querySelectorAll("td")) {
      const text = cell.innerText.trim();
      if (cell.offsetParent && text.length > 16 && cell.clientWidth < 96) found.push(`${where}: "${text.slice(0, 30)}" in ${cell.clientWidth} px`);
    }
  }
  for (const svg of document.querySelectorAll("main figure.chart > svg")) {
    const box = svg.getBoundingClientRect();
    for (const text of svg.querySelectorAll("text")) {
      const word = text.getBoundingClientRect();
      if (word.left < box.left - 1 || word.right > box.right + 1) found.push(`a chart's "${text.textContent}" is cut`);
    }
  }
  return found;
}"""


@pytest.fixture(scope="module")
def furnished(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The state made once for the module, and the fake model server (its models page) kept up."""
    root = tmp_path_factory.mktemp("furnished")
    with FakeOllama([reply], repeat_last=True, models=MODELS, tag_details=DETAILS, loaded=LOADED) as fake:
        yield furnish(root, fake.url)


def visited(browser: Browser, page: Any, url: str, name: str) -> list[str]:
    page.goto(url)
    return looked_at(browser, page, name)


def looked_at(browser: Browser, page: Any, name: str) -> list[str]:
    """The page as it is: its screenshot saved, and what is wrong with it (axe, its tables, its
    width, its language and title), one line each."""
    page.wait_for_load_state("networkidle")
    browser.shot(page, name)
    found = [f"axe: {v}" for v in browser.axe(page)] + list(page.evaluate(UNREADABLE))
    if not page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"):
        found.append("the page scrolls sideways")
    if page.evaluate("document.documentElement.lang") != "en" or not page.title().endswith("hearth"):
        found.append("no lang=en or no title")
    if page.locator("main h1").count() != 1:
        found.append(f"{page.locator('main h1').count()} h1 headings")
    if page.locator("nav[aria-label=main] [aria-current=page]").count() > 1:
        found.append("two navigation items marked current")
    return found


def pages_of(env: dict[str, str]) -> tuple[str, ...]:
    """Every page, with a run that waits for a person, a marathon and an alert's signed link."""
    state = Path(env["HEARTH_STATE_DIR"])
    [pending] = rows(state, "select id, expires_at from approvals where status = 'pending'")
    token = actions.sign(state, pending["id"], "approve", int(time.time()) + 3600, "phone")
    [marathon] = rows(state, "select id from runs where kind = 'marathon'")
    return (*PAGES, f"/runs/{run_of(env, WAITS)}", f"/runs/{marathon['id']}", f"/act/{token}")


@pytest.mark.parametrize("width", WIDTHS)
def test_every_page_with_real_data_passes_axe_and_its_tables_read(
    furnished: dict[str, str], browser: Browser, width: str
) -> None:
    with Center(Settings.from_env(furnished), tokens={"operator": OPERATOR}) as center:
        page = browser.page(*WIDTHS[width])
        console: list[str] = []
        page.on(
            "console", lambda m: console.append(f"{m.location.get('url')}: {m.text}") if m.type == "error" else None
        )
        found = {"/signin": visited(browser, page, center.url + "/signin", f"a11y-{width}-signin")}
        page.fill("input[name=token]", OPERATOR)
        page.click("form button.primary")
        page.wait_for_url(center.url + "/")
        for path in pages_of(furnished):
            name = "act" if path.startswith("/act/") else path.strip("/").split("?")[0].replace("/", "-") or "overview"
            found[path] = visited(browser, page, center.url + path, f"a11y-{width}-{name}{'-q' if '?' in path else ''}")
    assert {path: lines for path, lines in found.items() if lines} == {}
    assert [line for line in console if not line.startswith(f"{center.url}/runs/no-such-run:")] == []  # a favicon too
    assert not browser.errors


@pytest.mark.parametrize("width", WIDTHS)
def test_every_page_with_an_empty_audit_passes_axe(center: Center, browser: Browser, width: str) -> None:
    page = browser.page(*WIDTHS[width])
    found = {}
    for path in EMPTY:
        answer = page.goto(center.url + path)
        expected = 404 if path.startswith("/runs/") else 200
        assert answer is not None and answer.status == expected, path
        found[path] = looked_at(browser, page, f"a11y-empty-{width}-{path.strip('/').replace('/', '-') or 'overview'}")
    assert {path: lines for path, lines in found.items() if lines} == {}


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
