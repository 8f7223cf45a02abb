"""The fleet page and /api/fleet: a hub's workers, up or lost, with their models and runs, the requests
waiting in the broker and why, and adding or removing a worker (its token shown once, nowhere else)."""

from __future__ import annotations

import html
import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hearth.audit.store import AuditStore
from hearth.remote import hub
from hearth.settings import Settings
from tests.browser_support import Browser
from tests.hearth.web.operate_support import OPERATOR, VIEWER, looked_at, signed_in
from tests.queue_support import rows
from tests.web_support import Center

TOKENS = {"operator": OPERATOR, "viewer": VIEWER}
NO_MODEL = "waits for a worker with the model llama3.3:70b: no worker's Ollama hosts have it pulled"


def seed_fleet(state_dir: Path) -> None:
    """gpu1 up with a run thinking, gpu2 lost five minutes ago, a request no worker can take, and a
    redelivery of gpu1's run refused to gpu2."""
    state_dir.mkdir(parents=True, exist_ok=True)
    with AuditStore(state_dir / "audit.db") as audit:
        first = hub.identify(audit, "Bearer " + hub.add_worker(audit, "gpu1", ["gpu"], "test"))
        second = hub.identify(audit, "Bearer " + hub.add_worker(audit, "gpu2", ["gpu", "big"], "test"))
        hub.sent(audit, "fleet-run-1", "general", None, None)
        assert hub.claim(audit, first, "fleet-run-1") == {"go": "run"}
        assert hub.claim(audit, second, "fleet-run-1")["go"] == "drop"
        state = {"run_id": "fleet-run-1", "state": "thinking", "detail": "asking qwen2.5-coder:7b", "iteration": 2}
        hub.heartbeat(audit, first, ["qwen2.5-coder:7b", "llama3.2:latest"], [state])
        hub.heartbeat(audit, second, ["qwen2.5-coder:32b"], [])
        audit.conn.execute("update fleet_workers set seen_at = ? where name = 'gpu2'", [time.time() - 300])
        hub.sent(audit, "waits-1", "model.llama3.3:70b", "llama3.3:70b", None)


@pytest.fixture
def hub_center(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Center]:
    """The command center of a hub (HEARTH_LAUNCHER=celery), with an operator and a viewer token."""
    monkeypatch.setenv("HEARTH_LAUNCHER", "celery")
    with Center(Settings.from_env(), tokens=TOKENS) as served:
        yield served


def _identify(state_dir: Path, token: str) -> hub.Worker:
    with AuditStore(state_dir / "audit.db") as audit:
        return hub.identify(audit, "Bearer " + token)


def _alert(page: str) -> str:
    found = re.search(r'<p class="alert" id="fleet-error" role="alert">(.*?)</p>', page, re.S)
    assert found, page
    return html.unescape(found.group(1))


def test_each_worker_is_up_or_lost_with_its_models_and_runs_and_the_waiting_request_says_why(
    hub_center: Center, state_dir: Path
) -> None:
    seed_fleet(state_dir)
    viewer = hub_center.client(Authorization=f"Bearer {VIEWER}")
    answer = viewer.get("/api/fleet").json()
    gpu1, gpu2 = answer["workers"]
    assert (gpu1["name"], gpu1["labels"], gpu1["up"], gpu1["state"]) == ("gpu1", ["gpu"], True, "up")
    assert gpu1["models"] == ["llama3.2:latest", "qwen2.5-coder:7b"] and gpu1["seen_s_ago"] < 60
    [run] = gpu1["runs"]
    assert (run["run_id"], run["state"], run["detail"]) == ("fleet-run-1", "thinking", "asking qwen2.5-coder:7b")
    assert (gpu2["name"], gpu2["up"], gpu2["state"], gpu2["seen"]) == ("gpu2", False, "lost", "5 min ago")
    assert gpu2["labels"] == ["gpu", "big"] and gpu2["runs"] == []
    [waiting] = answer["waiting"]
    assert (waiting["run_id"], waiting["queue"], waiting["waits"]) == ("waits-1", "model.llama3.3:70b", NO_MODEL)
    assert answer["refused"] == 1 and answer["hub"] is True and answer["lost_after_s"] == hub.LOST_S
    assert "digest" not in gpu1 and "digest" not in str(answer)
    page = viewer.get("/operate/fleet").text
    assert '<span class="pill st-done">up</span>' in page and '<span class="pill st-failed">lost</span>' in page
    assert 'href="/runs/fleet-run-1"' in page and "asking qwen2.5-coder:7b" in page and "5 min ago" in page
    assert "qwen2.5-coder:32b" in page and NO_MODEL in html.unescape(page)
    assert "<dt>Redeliveries refused</dt><dd>1 " in page and "1 of 2 workers up" in page


def test_a_box_that_is_not_a_hub_says_so_in_one_line_instead_of_an_empty_table(state_dir: Path) -> None:
    with Center(Settings.from_env(), tokens=TOKENS) as center:
        viewer = center.client(Authorization=f"Bearer {VIEWER}")
        answer = viewer.get("/api/fleet").json()
        page = viewer.get("/operate/fleet").text
    assert answer == {"hub": False, "lost_after_s": hub.LOST_S, "workers": [], "waiting": [], "refused": 0}
    [line] = re.findall(r'<p class="notice" id="solo">(.*?)</p>', page)
    assert "runs every request itself" in line and "docs/fleet.md" in line
    assert "<table" not in page and 'id="add-form"' not in page


def test_an_audit_without_the_fleet_tables_reads_as_no_fleet(hub_center: Center, state_dir: Path) -> None:
    viewer = hub_center.client(Authorization=f"Bearer {VIEWER}")
    assert viewer.get("/api/fleet").json()["workers"] == []  # no audit yet
    state_dir.mkdir(parents=True, exist_ok=True)
    with AuditStore(state_dir / "audit.db"):
        pass
    with sqlite3.connect(state_dir / "audit.db") as conn:  # an audit whose fleet tables are not there
        conn.execute("drop table fleet_workers")
        conn.execute("drop table fleet_runs")
    answer = viewer.get("/api/fleet")
    assert answer.status_code == 200 and answer.json()["workers"] == [] and answer.json()["refused"] == 0
    page = viewer.get("/operate/fleet")
    assert page.status_code == 200 and 'id="no-workers"' in page.text


def test_adding_a_worker_shows_its_token_once_and_that_token_names_the_worker(
    hub_center: Center, state_dir: Path
) -> None:
    operator = hub_center.client(Authorization=f"Bearer {OPERATOR}")
    answer = operator.post_form("/operate/fleet/add", {"name": "gpu3", "labels": " gpu, big ,"})
    assert answer.status_code == 200, answer.text
    [token] = re.findall(r'<pre class="text token" id="token">(hw-[^<]+)</pre>', answer.text)
    assert "HEARTH_FLEET_TOKEN_FILE" in answer.text and answer.headers["cache-control"] == "no-store"
    worker = _identify(state_dir, token)
    assert (worker.name, worker.labels) == ("gpu3", ("gpu", "big"))
    [action] = rows(state_dir, "select * from operator_actions where area = 'fleet'")
    assert (action["action"], action["subject"], action["ok"], action["detail"]) == (
        "add",
        "gpu3",
        1,
        "labels: gpu, big",
    )
    assert token not in str(action)
    shown = operator.get("/operate/fleet").text + operator.get("/api/fleet").text
    assert "gpu3" in shown and token not in shown
    kept = b"".join(path.read_bytes() for path in state_dir.rglob("*") if path.is_file())
    assert token.encode() not in kept  # the audit (and its WAL) keep only the token's digest


def test_a_worker_added_through_the_api_gets_its_token_in_the_answer(hub_center: Center, state_dir: Path) -> None:
    operator = hub_center.client(Authorization=f"Bearer {OPERATOR}")
    answer = operator.post_json("/api/fleet/workers", {"name": "gpu4", "labels": ["gpu"]})
    assert answer.status_code == 201 and answer.json()["name"] == "gpu4" and answer.json()["labels"] == ["gpu"]
    assert _identify(state_dir, answer.json()["token"]).name == "gpu4"
    taken = operator.post_json("/api/fleet/workers", {"name": "gpu4"})
    assert taken.status_code == 422 and "there is a worker gpu4 already" in taken.json()["error"]


@pytest.mark.parametrize(
    ("name", "labels", "words"),
    [
        ("GPU One", "", "a worker's name is 1-63 of a-z 0-9 . _ - starting with a letter or digit, got 'GPU One'"),
        ("gpu1", "fast gpu", "'fast gpu' is not a label (a-z 0-9 . _ -)"),
        ("gpu1", "", "there is a worker gpu1 already; `hearth fleet rm gpu1` first to make a new token"),
    ],
)
def test_a_bad_or_taken_name_is_one_line_kept_in_the_form_and_recorded_refused(
    hub_center: Center, state_dir: Path, name: str, labels: str, words: str
) -> None:
    seed_fleet(state_dir)
    operator = hub_center.client(Authorization=f"Bearer {OPERATOR}")
    answer = operator.post_form("/operate/fleet/add", {"name": name, "labels": labels})
    assert answer.status_code == 422
    line = _alert(answer.text)
    assert "\n" not in line and line == f"Not added: {words}"
    assert f'value="{name}"' in answer.text and "hw-" not in answer.text
    [action] = rows(state_dir, "select action, subject, ok, detail from operator_actions")
    assert (action["action"], action["subject"], action["ok"]) == ("add", name, 0) and words in action["detail"]
    assert [w.name for w in _workers(state_dir)] == ["gpu1", "gpu2"]


def _workers(state_dir: Path) -> list[hub.Worker]:
    with AuditStore(state_dir / "audit.db") as audit:
        return hub.workers(audit)


def test_a_viewer_sees_the_fleet_but_cannot_add_or_remove_a_worker(hub_center: Center, state_dir: Path) -> None:
    seed_fleet(state_dir)
    viewer = hub_center.client(Authorization=f"Bearer {VIEWER}")
    page = viewer.get("/operate/fleet").text
    assert "gpu1" in page and 'id="add-form"' not in page and "/remove" not in page and "read-only" in page
    assert viewer.post_form("/operate/fleet/add", {"name": "gpu9", "labels": ""}).status_code == 403
    assert viewer.post_form("/operate/fleet/gpu1/remove", {}).status_code == 403
    assert viewer.post_json("/api/fleet/workers", {"name": "gpu9"}).status_code == 403
    assert viewer.post_json("/api/fleet/workers/gpu1/remove", {}).status_code == 403
    assert [w.name for w in _workers(state_dir)] == ["gpu1", "gpu2"]
    assert rows(state_dir, "select * from operator_actions") == []


def test_removing_a_worker_makes_its_token_refused_and_is_recorded(hub_center: Center, state_dir: Path) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    with AuditStore(state_dir / "audit.db") as audit:
        token = hub.add_worker(audit, "gpu1", [], "test")
    operator = hub_center.client(Authorization=f"Bearer {OPERATOR}")
    answer = operator.post_form("/operate/fleet/gpu1/remove", {})
    assert answer.status_code == 303 and answer.headers["location"] == "/operate/fleet?removed=gpu1"
    with pytest.raises(hub.WorkerRefused, match="no worker has this token"):
        _identify(state_dir, token)
    assert 'Removed worker <span class="mono">gpu1</span>' in operator.get(answer.headers["location"]).text
    again = operator.post_json("/api/fleet/workers/gpu1/remove", {})
    assert again.status_code == 404 and again.json()["error"] == "no worker gpu1; `hearth fleet list` shows them"
    actions = rows(state_dir, "select action, subject, ok from operator_actions order by id")
    assert [(a["action"], a["subject"], a["ok"]) for a in actions] == [("remove", "gpu1", 1), ("remove", "gpu1", 0)]


def test_the_fleet_page_at_desktop_and_phone_width_adds_and_removes_a_worker(
    hub_center: Center, browser: Browser, state_dir: Path
) -> None:
    seed_fleet(state_dir)
    page = signed_in(hub_center, browser, OPERATOR)
    looked_at(browser, page, hub_center.url + "/operate/fleet", "fleet")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")  # at 390 px
    cell = "document.querySelector('#workers td[data-label=\"Models pulled\"]')"
    assert page.evaluate(f"getComputedStyle({cell}, '::before').content") == '"Models pulled"'  # a card's label
    page.fill("input[name=name]", "gpu3")
    page.fill("input[name=labels]", "gpu")
    page.click("#add-worker")
    token = page.inner_text("#token")
    assert _identify(state_dir, token).name == "gpu3"
    browser.shot(page, "fleet-added-390")
    assert browser.axe(page) == []
    page.goto(hub_center.url + "/operate/fleet")
    page.click('#workers tr[data-worker="gpu3"] button')
    page.wait_for_selector("#removed")
    assert browser.dialogs == [
        "confirm: Remove worker gpu3? Its token is refused from now on, and a run it holds is lost."
    ]
    assert token not in page.content()
    with pytest.raises(hub.WorkerRefused):
        _identify(state_dir, token)
    page.fill("input[name=name]", "GPU One")
    page.click("#add-worker")
    assert page.inner_text("#fleet-error").startswith("Not added: a worker's name is 1-63 of a-z")
    assert page.input_value("input[name=name]") == "GPU One"
    browser.shot(page, "fleet-refused-390")
    assert browser.axe(page) == []
