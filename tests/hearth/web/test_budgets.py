"""The budgets page and /api/budgets: today's spend per profile, and limits changed as the file's own check allows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hearth.settings import Settings
from tests.browser_support import Browser
from tests.hearth.web.operate_support import OPERATOR, VIEWER, looked_at, signed_in, spend
from tests.queue_support import rows
from tests.web_support import Center


@pytest.fixture
def guarded(state_dir: Path) -> Iterator[Center]:
    with Center(Settings.from_env(), tokens={"operator": OPERATOR, "viewer": VIEWER}) as served:
        yield served


def test_healthz_answers_ok_to_anyone_and_tells_nothing(guarded: Center) -> None:
    answer = guarded.client().get("/healthz")
    assert answer.status_code == 200 and answer.text == "ok\n"
    assert guarded.client().get("/api/budgets").status_code == 401
    schema = guarded.client(Authorization=f"Bearer {VIEWER}").get("/api/openapi.json").json()
    assert "/healthz" in schema["paths"] and {"get", "put"} <= set(schema["paths"]["/api/budgets"])
    twins = {
        "/api/missions": "get",
        "/api/missions/{name}/{action}": "post",
        "/api/missions/{name}": "put",
        "/api/router": "get",
        "/api/router/try": "get",
        "/api/security": "get",
        "/api/alerts": "get",
        "/api/alerts/test": "post",
        "/api/models": "get",
        "/api/proposals/{proposal_id}": "get",
        "/api/proposals/{proposal_id}/decision": "post",
    }
    assert {path: method for path, method in twins.items() if method not in schema["paths"].get(path, {})} == {}


def test_the_budget_shows_todays_spend_per_profile_against_the_limits(guarded: Center, state_dir: Path) -> None:
    config = Path(guarded.config.settings.config_dir)
    config.mkdir(parents=True, exist_ok=True)
    (config / "budget.toml").write_text("daily = 5000\n[per_agent]\ndemo = 1000\n")
    spend(state_dir, "r1", "demo", 600, 100)
    spend(state_dir, "r2", "default", 200, 50)
    answer = guarded.client(Authorization=f"Bearer {VIEWER}").get("/api/budgets").json()
    assert answer["box"] == {"limit": 5000, "spent": 950, "remaining": 4050}
    by_agent = {a["agent"]: a for a in answer["agents"]}
    assert by_agent["demo"] == {"agent": "demo", "limit": 1000, "spent": 700, "remaining": 300}
    assert by_agent["default"]["limit"] is None and by_agent["default"]["spent"] == 250
    assert answer["resets_at"] > answer["since"] and answer["problem"] == ""


def test_an_operator_changes_the_limits_and_the_file_reads_back_as_hearth_reads_it(
    guarded: Center, state_dir: Path
) -> None:
    client = guarded.client(Authorization=f"Bearer {OPERATOR}")
    answer = client.put("/api/budgets", json={"daily": 200000, "per_agent": {"demo": 1000}})
    assert answer.status_code == 200, answer.text
    assert answer.json()["box"]["limit"] == 200000
    from hearth.leash.budget import load_budget

    saved = load_budget(guarded.config.settings.config_dir)
    assert saved.daily == 200000 and saved.per_agent == {"demo": 1000}
    [row] = rows(state_dir, "select by, area, ok, detail from operator_actions")
    assert row["by"] == "web:token:operator" and row["ok"] == 1 and "daily = 200000" in row["detail"]


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"daily": "lots"}, "daily", "daily must be a whole number of tokens from 0 to"),
        ({"daily": 10, "per_agent": {"demo": -5}}, "per_agent.demo", "per_agent.demo must be a whole number"),
    ],
)
def test_a_limit_the_file_would_refuse_is_refused_with_its_field_and_nothing_changes(
    guarded: Center, state_dir: Path, body: dict[str, object], field: str, words: str
) -> None:
    config = Path(guarded.config.settings.config_dir)
    config.mkdir(parents=True, exist_ok=True)
    (config / "budget.toml").write_text("daily = 7\n")
    answer = guarded.client(Authorization=f"Bearer {OPERATOR}").put("/api/budgets", json=body)
    assert answer.status_code == 422 and answer.json()["field"] == field and words in answer.json()["error"]
    assert str(config / "budget.toml") in answer.json()["error"]
    assert (config / "budget.toml").read_text() == "daily = 7\n"
    [row] = rows(state_dir, "select ok, detail from operator_actions")
    assert row["ok"] == 0 and words in row["detail"]


def test_a_viewer_cannot_change_the_limits(guarded: Center) -> None:
    answer = guarded.client(Authorization=f"Bearer {VIEWER}").put("/api/budgets", json={"daily": 1})
    assert answer.status_code == 403
    assert not (Path(guarded.config.settings.config_dir) / "budget.toml").exists()


def test_the_budgets_page_saves_from_the_form_and_shows_a_refusal_beside_the_field(
    guarded: Center, browser: Browser, state_dir: Path
) -> None:
    spend(state_dir, "r1", "demo", 600, 100)
    page = signed_in(guarded, browser, OPERATOR)
    looked_at(browser, page, guarded.url + "/operate", "operate")
    looked_at(browser, page, guarded.url + "/operate/budgets", "budgets")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.fill("input[name=daily]", "12x")
    page.click("#save-budgets")
    error = page.wait_for_selector("#error-daily")
    assert "daily must be a whole number of tokens" in error.inner_text()
    assert page.input_value("input[name=daily]") == "12x"
    browser.shot(page, "budgets-refused")
    assert browser.axe(page) == []
    page.fill("input[name=daily]", "50,000")
    page.fill("input[name='agent.demo']", "900")
    page.click("#save-budgets")
    page.wait_for_selector("#saved")
    assert "50,000" in page.inner_text("#budgets-table") and "900" in page.inner_text("#budgets-table")
    browser.shot(page, "budgets-saved")
    viewer = signed_in(guarded, browser, VIEWER)
    viewer.goto(guarded.url + "/operate/budgets")
    assert viewer.locator("#save-budgets").count() == 0 and viewer.is_disabled("input[name=daily]")
    assert "read-only" in viewer.inner_text("main")


def test_the_operator_forms_refuse_a_post_without_the_csrf_token_and_change_nothing(
    center: Center, state_dir: Path
) -> None:
    config = Path(center.config.settings.config_dir)
    (config / "missions").mkdir(parents=True)
    (config / "missions" / "nightly.toml").write_text('schedule = "daily"\ngoal = "x"\n')
    client = center.client()
    for path, data in (
        ("/operate/budgets", {"daily": "5"}),
        ("/operate/missions/nightly/pause", {}),
        ("/operate/missions/new", {"name": "other", "schedule": "daily", "goal": "y"}),
        ("/operate/alerts/test", {}),
    ):
        refused = client.post(path, data=data)
        assert refused.status_code == 403 and "CSRF" in refused.text, path
    assert not (config / "budget.toml").exists() and not (config / "missions" / "other.toml").exists()
    assert not (state_dir / "missions" / "nightly.paused.json").exists()
    assert client.post_form("/operate/budgets", {"daily": "5"}).status_code == 303
    assert (config / "budget.toml").read_text() == "daily = 5\n"
