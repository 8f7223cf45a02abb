"""The alerts page and /api/alerts: destinations with their URLs redacted, a test send, and what was sent or failed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hearth.settings import Settings
from tests.alert_support import Receiver, write_alerts_toml
from tests.browser_support import Browser
from tests.hearth.web.operate_support import OPERATOR, VIEWER, looked_at, signed_in
from tests.queue_support import rows
from tests.web_support import Center, free_port

SECRET = "hook-secret-path-0123456789"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    got = Receiver()
    yield got
    got.close()


@pytest.fixture
def guarded(state_dir: Path, receiver: Receiver) -> Iterator[Center]:
    config = Path(Settings.from_env().config_dir)
    closed = f"json://127.0.0.1:{free_port()}/nobody-answers"  # a port nothing listens on: refused
    write_alerts_toml(
        config, ("desk", f"json://127.0.0.1:{receiver.port}/{SECRET}", ["failed"]), ("dead", closed, None)
    )
    with Center(Settings.from_env(), tokens={"operator": OPERATOR, "viewer": VIEWER}) as served:
        yield served


def test_the_destinations_are_listed_with_their_secrets_left_out(guarded: Center) -> None:
    answer = guarded.client(Authorization=f"Bearer {VIEWER}").get("/api/alerts")
    assert answer.status_code == 200 and SECRET not in answer.text
    desk, dead = answer.json()["destinations"]
    assert desk["name"] == "desk" and desk["url"].startswith("json://127.0.0.1:") and "/h...9" in desk["url"]
    assert desk["events"] == ["failed"] and desk["local"] is True and dead["name"] == "dead"
    assert answer.json()["problem"] == "" and answer.json()["recent"] == []


def test_a_test_send_reaches_the_destination_and_a_failing_one_is_recorded_failed(
    guarded: Center, receiver: Receiver, state_dir: Path
) -> None:
    sent = guarded.client(Authorization=f"Bearer {OPERATOR}").post("/api/alerts/test")
    assert sent.status_code == 200, sent.text
    by_name = {r["destination"]: r for r in sent.json()}
    assert by_name["desk"]["status"] == "sent" and by_name["dead"]["status"] == "failed" and by_name["dead"]["error"]
    [got] = receiver.got
    assert got["path"] == f"/{SECRET}" and got["body"]["title"] == "hearth: test alert"
    assert "sent by web:token:operator" in got["body"]["message"]
    listed = guarded.client(Authorization=f"Bearer {VIEWER}").get("/api/alerts").json()
    assert {(a["destination"], a["event"], a["status"]) for a in listed["recent"]} == {
        ("desk", "test", "sent"),
        ("dead", "test", "failed"),
    }
    assert [f["destination"] for f in listed["failures"]] == ["dead"]
    [action] = rows(state_dir, "select area, action, detail from operator_actions")
    assert action["detail"] == "desk: sent; dead: failed"


def test_a_test_to_one_destination_sends_only_there_and_a_viewer_cannot_send(
    guarded: Center, receiver: Receiver
) -> None:
    assert guarded.client(Authorization=f"Bearer {VIEWER}").post("/api/alerts/test").status_code == 403
    one = guarded.client(Authorization=f"Bearer {OPERATOR}").post("/api/alerts/test", params={"destination": "desk"})
    assert [r["destination"] for r in one.json()] == ["desk"] and len(receiver.got) == 1
    missing = guarded.client(Authorization=f"Bearer {OPERATOR}").post("/api/alerts/test", params={"destination": "x"})
    assert missing.status_code == 404 and "destinations: desk, dead" in missing.json()["error"]


def test_the_alerts_page_sends_a_test_and_shows_the_failure(
    guarded: Center, browser: Browser, receiver: Receiver
) -> None:
    page = signed_in(guarded, browser, OPERATOR)
    looked_at(browser, page, guarded.url + "/operate/alerts", "alerts")
    assert SECRET not in page.content()
    page.click("button[aria-label='Send a test to desk']")
    assert "desk sent" in page.wait_for_selector("#tested").inner_text() and len(receiver.got) == 1
    page.click("#test-all")
    page.wait_for_selector("#failures")
    assert "FAILED" in page.inner_text("#recent")
    looked_at(browser, page, page.url, "alerts-tested")
