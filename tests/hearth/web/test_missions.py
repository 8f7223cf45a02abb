"""The missions page and /api/missions: listed as `hearth missions`, run now, paused, added and edited as files hearth loads."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hearth.audit.store import AuditStore, RunRecord
from hearth.leash.missions import find_mission
from hearth.settings import Settings
from tests.browser_support import Browser
from tests.hearth.web.operate_support import OPERATOR, VIEWER, looked_at, signed_in
from tests.queue_support import rows
from tests.web_support import Center

NIGHTLY = 'schedule = "*-*-* 06:00:00"\ngoal = "Summarise the notes"\nmax_iterations = 5\n'


@pytest.fixture
def guarded(state_dir: Path) -> Iterator[Center]:
    missions = Path(Settings.from_env().config_dir) / "missions"
    missions.mkdir(parents=True)
    (missions / "nightly.toml").write_text(NIGHTLY)
    with Center(Settings.from_env(), tokens={"operator": OPERATOR, "viewer": VIEWER}) as served:
        yield served


def test_the_list_gives_the_next_fire_and_the_last_run_of_each_mission(guarded: Center, state_dir: Path) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    with AuditStore(state_dir / "audit.db") as audit:
        run = RunRecord("nightly-1", "default", "m", "g", "plan", requested_by="mission:nightly")
        audit.start_run(run)
        audit.finish_run("nightly-1", status="done")
    answer = guarded.client(Authorization=f"Bearer {VIEWER}").get("/api/missions").json()
    [mission] = answer["missions"]
    assert mission["name"] == "nightly" and mission["schedule"] == "*-*-* 06:00:00"
    assert mission["next"].endswith("T06:00:00") and mission["fired_by"] == "hearth watch"
    assert (mission["last_run"], mission["last_status"]) == ("nightly-1", "done")
    assert [(r["id"], r["status"]) for r in mission["runs"]] == [("nightly-1", "done")]
    assert answer["problems"] == []


def test_run_now_enqueues_the_missions_request_and_pause_and_resume_are_recorded(
    guarded: Center, state_dir: Path
) -> None:
    client = guarded.client(Authorization=f"Bearer {OPERATOR}")
    fired = client.post("/api/missions/nightly/run")
    assert fired.status_code == 200, fired.text
    queued = json.loads((state_dir / "queue" / f"{fired.json()['enqueued']}.json").read_text())
    assert queued["goal"] == "Summarise the notes" and queued["max_iterations"] == 5
    assert queued["requested_by"] == "mission:nightly" and queued["source"] == "command-center"
    assert client.post("/api/missions/nightly/pause").json()["paused"]["by"] == "web:token:operator"
    assert client.get("/api/missions").json()["missions"][0]["paused"].endswith("by web:token:operator")
    assert client.post("/api/missions/nightly/resume").json() == {"mission": "nightly", "resumed": True}
    assert client.get("/api/missions").json()["missions"][0]["paused"] is None
    actions = rows(state_dir, "select action, subject, ok from operator_actions order by id")
    assert [(a["action"], a["subject"], a["ok"]) for a in actions] == [
        ("run", "nightly", 1),
        ("pause", "nightly", 1),
        ("resume", "nightly", 1),
    ]
    assert client.post("/api/missions/nope/run").status_code == 404


def test_a_mission_put_through_the_api_is_a_file_hearth_loads(guarded: Center) -> None:
    body = {"schedule": "daily", "goal": "Tidy the workspace", "agent": "demo", "allowed_tools": ["read_file"]}
    answer = guarded.client(Authorization=f"Bearer {OPERATOR}").put("/api/missions/tidy", json=body)
    assert answer.status_code == 201 and answer.json() == {"mission": "tidy", "created": True}
    mission = find_mission(guarded.config.settings, "tidy")
    assert mission.schedule == "daily" and mission.fields["agent_name"] == "demo"
    assert mission.fields["allowed_tools"] == ["read_file"]


@pytest.mark.parametrize(
    ("name", "body", "field", "words"),
    [
        ("late", {"schedule": "whenever", "goal": "x"}, "schedule", "schedule:"),
        ("late", {"schedule": "daily", "goal": "x", "agent": "ghost"}, "agent", "agent 'ghost' is not a profile"),
        (
            "late",
            {"schedule": "daily", "goal": "x", "max_iterations": 500},
            "max_iterations",
            "must be at most 100, got 500",
        ),
        ("late", {"schedule": "daily"}, "goal", "goal"),
        ("-bad", {"schedule": "daily", "goal": "x"}, "name", "is not allowed"),
    ],
)
def test_a_mission_the_file_check_refuses_is_not_written_and_names_its_field(
    guarded: Center, state_dir: Path, name: str, body: dict[str, object], field: str, words: str
) -> None:
    answer = guarded.client(Authorization=f"Bearer {OPERATOR}").put(f"/api/missions/{name}", json=body)
    assert answer.status_code == 422, answer.text
    assert answer.json()["field"] == field and words in answer.json()["error"]
    assert sorted(p.name for p in (Path(guarded.config.settings.config_dir) / "missions").iterdir()) == ["nightly.toml"]
    [row] = rows(state_dir, "select ok, detail from operator_actions")
    assert row["ok"] == 0 and words in row["detail"]


def test_a_viewer_sees_the_missions_but_cannot_run_pause_or_change_them(guarded: Center, state_dir: Path) -> None:
    viewer = guarded.client(Authorization=f"Bearer {VIEWER}")
    assert viewer.post("/api/missions/nightly/run").status_code == 403
    assert viewer.put("/api/missions/nightly", json={"schedule": "daily", "goal": "x"}).status_code == 403
    assert not (state_dir / "queue").exists() or not list((state_dir / "queue").glob("*.json"))
    assert (Path(guarded.config.settings.config_dir) / "missions" / "nightly.toml").read_text() == NIGHTLY


def test_the_missions_page_adds_edits_runs_and_pauses(guarded: Center, browser: Browser, state_dir: Path) -> None:
    page = signed_in(guarded, browser, OPERATOR)
    looked_at(browser, page, guarded.url + "/operate/missions", "missions")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.click("#new-mission")
    page.fill("input[name=name]", "weekly")
    page.fill("input[name=schedule]", "every tuesday-ish")
    page.fill("textarea[name=goal]", "Check the links in README.md")
    page.click("#save-mission")
    error = page.wait_for_selector("#error-schedule")
    assert (
        "schedule:" in error.inner_text() and page.input_value("textarea[name=goal]") == "Check the links in README.md"
    )
    browser.shot(page, "mission-refused")
    assert browser.axe(page) == []
    page.fill("input[name=schedule]", "Tue *-*-* 09:00:00")
    page.click("#save-mission")
    page.wait_for_selector("#done")
    assert find_mission(guarded.config.settings, "weekly").schedule == "Tue *-*-* 09:00:00"
    page.click("a[aria-label='Edit weekly']")
    page.fill("input[name=max_iterations]", "7")
    browser.shot(page, "mission-edit")
    assert browser.axe(page) == []
    page.click("#save-mission")
    browser.shot(page, "mission-edit-saved")
    page.wait_for_selector("#done")
    assert find_mission(guarded.config.settings, "weekly").fields["max_iterations"] == 7
    page.click("button[aria-label='Pause nightly']")
    page.wait_for_selector("button[aria-label='Resume nightly']")
    page.click("button[aria-label='Run now nightly']")
    assert "enqueued nightly-" in page.wait_for_selector("#done").inner_text()
    looked_at(browser, page, page.url, "missions-acted")
    viewer = signed_in(guarded, browser, VIEWER)
    viewer.goto(guarded.url + "/operate/missions")
    assert viewer.locator("#missions-table button").count() == 0 and "read-only" in viewer.inner_text("main")
