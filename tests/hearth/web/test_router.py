"""The router page and /api/router: the rules as the router reads them, and "try a goal" answered by the router itself."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hearth.settings import Settings
from tests.browser_support import Browser
from tests.fake_ollama import FakeOllama
from tests.hearth.web.operate_support import VIEWER, looked_at, signed_in
from tests.web_support import Center

ROUTER = """default = "llama3.2"
fallbacks = ["qwen2.5-coder"]

[[rule]]
name = "tests"
model = "qwen2.5-coder:7b"
goal = "(?i)\\\\btests?\\\\b"

[[rule]]
name = "short"
model = "llama3.2:1b"
goal_max_chars = 20
"""


@pytest.fixture
def routed(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Center]:
    config = Path(Settings.from_env().config_dir)
    config.mkdir(parents=True)
    (config / "router.toml").write_text(ROUTER)
    with FakeOllama(models=("qwen2.5-coder:7b", "llama3.2:latest", "qwen2.5-coder:latest")) as fake:
        monkeypatch.setenv("OLLAMA_HOST", fake.url)
        with Center(Settings.from_env(), tokens={"operator": "operator-token-0123456789abcdef", "viewer": VIEWER}) as c:
            yield c


def _try(center: Center, **params: str) -> dict[str, object]:
    answer = center.client(Authorization=f"Bearer {VIEWER}").get("/api/router/try", params=params)
    assert answer.status_code == 200, answer.text
    found: dict[str, object] = answer.json()
    return found


def test_the_rules_are_listed_as_the_router_reads_them(routed: Center) -> None:
    answer = routed.client(Authorization=f"Bearer {VIEWER}").get("/api/router").json()
    assert [(r["name"], r["model"]) for r in answer["rules"]] == [
        ("tests", "qwen2.5-coder:7b"),
        ("short", "llama3.2:1b"),
    ]
    assert answer["default"] == "llama3.2" and answer["fallbacks"] == ["qwen2.5-coder"] and answer["problem"] == ""


def test_a_goal_gets_the_first_matching_rules_model_and_says_which_rules_matched(routed: Center) -> None:
    answer = _try(routed, goal="Make the tests pass for the parser module, please")
    assert answer["model"] == "qwen2.5-coder:7b" and answer["reason"] == "tests"
    assert answer["why"] == "rule 'tests' matched first"
    assert answer["rules"] == [
        {"name": "tests", "model": "qwen2.5-coder:7b", "matched": True},
        {"name": "short", "model": "llama3.2:1b", "matched": False},
    ]


def test_a_goal_no_rule_matches_gets_the_default_resolved_to_its_pulled_tag(routed: Center) -> None:
    answer = _try(routed, goal="Write a long summary of the design notes in the docs folder")
    assert answer["model"] == "llama3.2:latest" and answer["reason"] == "tag"
    assert answer["fallbacks"] == ["qwen2.5-coder:latest"]


def test_a_rules_model_that_is_not_pulled_gives_way_to_the_fallback(routed: Center) -> None:
    answer = _try(routed, goal="hi there")
    assert answer["rules"][1]["matched"] is True and answer["reason"] == "fallback"
    assert answer["model"] == "qwen2.5-coder:latest" and "next fallback" in str(answer["why"])


def test_a_named_model_and_an_unknown_profile_are_answered_in_the_routers_and_profiles_words(routed: Center) -> None:
    named = _try(routed, goal="tests", model="qwen2.5-coder:7b")
    assert named["reason"] == "request" and named["why"] == "the request names this model"
    unknown = _try(routed, goal="tests", agent="ghost")
    assert unknown["field"] == "agent" and "unknown agent profile 'ghost'" in str(unknown["error"])


def test_a_broken_router_file_is_one_line_and_the_goal_gets_the_default(routed: Center) -> None:
    (Path(routed.config.settings.config_dir) / "router.toml").write_text('[[rule]]\nname = "x"\n')
    rules = routed.client(Authorization=f"Bearer {VIEWER}").get("/api/router").json()
    assert "model" in rules["problem"] and rules["rules"] == []
    answer = _try(routed, goal="tests")
    assert answer["reason"] == "tag" and answer["model"] == "qwen2.5-coder:latest" and answer["warning"]


def test_without_a_default_the_page_names_where_the_hosts_model_comes_from(
    routed: Center, monkeypatch: pytest.MonkeyPatch
) -> None:
    (Path(routed.config.settings.config_dir) / "router.toml").write_text("")
    page = routed.client(Authorization=f"Bearer {VIEWER}").get("/operate/router").text
    assert 'Default: <span class="mono">qwen2.5-coder</span> (hearth&#39;s default; HEARTH_MODEL sets another)' in page
    assert "(HEARTH_MODEL)" not in page  # it is not set here: naming it would send a person looking for it
    monkeypatch.setenv("HEARTH_MODEL", "llama3.2")
    with Center(Settings.from_env(), tokens={"viewer": VIEWER}) as other:
        named = other.client(Authorization=f"Bearer {VIEWER}").get("/operate/router").text
    assert 'Default: <span class="mono">llama3.2</span> (HEARTH_MODEL)' in named


def test_the_router_page_answers_a_tried_goal(routed: Center, browser: Browser) -> None:
    page = signed_in(routed, browser, VIEWER)
    looked_at(browser, page, routed.url + "/operate/router", "router")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.fill("textarea[name=goal]", "add tests for the cache")
    page.click("#try")
    answer = page.wait_for_selector("#try-answer")
    assert "qwen2.5-coder:7b" in answer.inner_text() and "rule 'tests' matched first" in answer.inner_text()
    assert page.input_value("textarea[name=goal]") == "add tests for the cache"
    looked_at(browser, page, page.url, "router-tried")
