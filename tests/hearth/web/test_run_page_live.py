"""The run page and the map card while a run waits for a person, in a real Chromium: the header
and the numbers are live, the waiting call is pilled as waiting, an operator decides right there
(with a reason, and a confirmation after), and the steps read in the order they happened."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from tests.browser_support import Browser
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.queue_support import rows, wait_for
from tests.web_support import Center, run_status


def test_an_approval_is_decided_on_the_run_page_and_the_steps_read_in_order(
    center: Center, browser: Browser, state_dir: Path
) -> None:
    script = [tool_call("run_command", {"command": "echo page-marker"}), final_answer("it printed page-marker")]
    with FakeOllama(script) as fake:
        center.start_watch(fake.url)
        center.client().post_json("/api/enqueue", {"goal": "print a marker", "id": "page-1", "mode": "auto"})
        page = browser.page()
        page.goto(center.url + "/runs/page-1")
        page.wait_for_selector("#run-approvals form.decide-here", timeout=20_000)
        page.wait_for_selector("#run-status .st-waiting_approval, #run-status .st-waiting", timeout=10_000)
        # the header reads the steps so far, not the row's zeros
        assert page.inner_text("#run-tokens") != "0 in / 0 out"
        assert page.inner_text("#run-iterations").startswith("1")
        assert page.inner_text("#run-sandbox") not in ("-", "")
        tool_step = page.locator("li.step.kind-tool")
        assert tool_step.locator(".pill").inner_text() == "waiting for approval"
        assert page.locator("li.step .st-failed").count() == 0
        assert "web tools may reach any public host" in page.inner_text("#run-network")
        browser.shot(page, "run-waiting")
        assert browser.axe(page) == []
        page.fill("#run-approvals input[name=reason]", "looks harmless")
        page.click("#run-approvals [data-approve]")
        page.wait_for_url(re.compile(r"/runs/page-1\?decided="))
        assert "Approved run_command in run page-1 as web:local (looks harmless)" in page.inner_text("#decided-notice")
        wait_for(lambda: run_status(state_dir, "page-1") == "done", what="the approved run to finish")
        page.goto(center.url + "/runs/page-1")
        kinds = page.eval_on_selector_all("#steps > li.step", "els => els.map(e => e.className)")
        at = [k for k in kinds if "kind-approval" in k or "kind-tool" in k]
        assert ["approval" in at[0], "tool" in at[1]] == [True, True], kinds
        assert re.match(r"approved by web:local after \d+\.\d s: looks harmless", page.inner_text("p.decision"))
        assert tool_step.locator(".pill").inner_text() == "ok"
        assert "waiting for a person" in tool_step.locator(".right").inner_text()
        assert "call_hash" not in page.inner_text("#steps")
        browser.shot(page, "run-decided")
    [approval] = rows(state_dir, "select status, decided_by, note from approvals where run_id = 'page-1'")
    assert approval == {"status": "approved", "decided_by": "web:local", "note": "looks harmless"}


def test_on_a_phone_the_waiting_calls_approve_is_on_the_first_screen(
    center: Center, browser: Browser, state_dir: Path
) -> None:
    script = [tool_call("run_command", {"command": "echo phone-marker"}), final_answer("it printed")]
    with FakeOllama(script) as fake:
        center.start_watch(fake.url, HEARTH_SUSPEND_AFTER_S="600")
        center.client().post_json("/api/enqueue", {"goal": "print a marker on the phone", "id": "ph-1", "mode": "auto"})
        phone = browser.page(390, 844)
        phone.goto(center.url + "/runs/ph-1")
        approve = phone.wait_for_selector("#run-approvals [data-approve]", timeout=20_000)
        box = approve.bounding_box()
        browser.shot(phone, "run-waiting-phone")
        assert box is not None and box["y"] + box["height"] <= 844, box  # no scrolling to decide
        assert browser.axe(phone) == []


def test_a_call_stopped_while_it_waits_is_shown_as_not_run(center: Center, browser: Browser, state_dir: Path) -> None:
    with FakeOllama([tool_call("run_command", {"command": "echo never"})]) as fake:
        center.start_watch(fake.url)
        client = center.client()
        client.post_json("/api/enqueue", {"goal": "print a marker", "id": "stopped-1", "mode": "auto"})
        wait_for(lambda: run_status(state_dir, "stopped-1") == "waiting", what="the call to ask")
        assert client.post_json("/api/runs/stopped-1/stop", {}).status_code == 200
        wait_for(lambda: run_status(state_dir, "stopped-1") == "interrupted", what="the run to be stopped")
    page = browser.page(390, 844)
    page.goto(center.url + "/runs/stopped-1")
    assert page.locator("li.step.kind-tool .pill").inner_text() == "not run"
    assert page.locator("li.step .st-failed").count() == 0
    browser.shot(page, "run-stopped-phone")
    assert browser.axe(page) == []
    metrics = client.get("/metrics").text
    assert 'hearth_tool_calls_total{tool="run_command",verdict="not_run"} 1.0' in metrics


def test_a_call_is_denied_on_its_map_card_with_a_reason(center: Center, browser: Browser, state_dir: Path) -> None:
    script = [tool_call("run_command", {"command": "rm -rf notes"}), final_answer("I left the notes alone")]
    with FakeOllama(script) as fake:
        center.start_watch(fake.url)
        page = browser.page(390, 844)
        page.goto(center.url + "/")
        center.client().post_json("/api/enqueue", {"goal": "clean up", "id": "card-1", "mode": "auto"})
        page.wait_for_selector('.run-card[data-run="card-1"] .card-approval form', timeout=20_000)
        page.wait_for_selector('.run-card[data-run="card-1"] .numbers')
        assert "tok" in page.inner_text('.run-card[data-run="card-1"] .numbers')
        browser.shot(page, "overview-asks-phone")
        assert browser.axe(page) == []
        page.fill('.run-card[data-run="card-1"] input[name=reason]', "not today")
        page.click('.run-card[data-run="card-1"] [data-deny]')
        page.wait_for_url(re.compile(r"/\?decided="))
        assert "Denied run_command in run card-1" in page.inner_text("#decided-notice")
        wait_for(lambda: run_status(state_dir, "card-1") == "done", what="the denied run to finish")
        assert "not today" in str(fake.requests[-1]["messages"])
        browser.shot(page, "overview-decided-phone")


def test_the_overviews_row_of_a_run_waiting_for_a_person_says_what_its_card_says(
    center: Center, state_dir: Path
) -> None:
    script = [tool_call("run_command", {"command": "echo row-marker"}), final_answer("it printed")]
    with FakeOllama(script) as fake:
        center.start_watch(fake.url, HEARTH_SUSPEND_AFTER_S="600")  # it waits in its process: its row says running
        center.client().post_json("/api/enqueue", {"goal": "print a marker", "id": "row-1", "mode": "auto"})
        wait_for(lambda: run_status(state_dir, "row-1") == "running" and pending(state_dir), what="the call to ask")
        page = center.client().get("/").text
    [row] = re.findall(r"<tr>(?:(?!</tr>).)*>row-1<(?:(?!</tr>).)*</tr>", page, re.S)
    assert "waiting for approval" in row and 'data-label="Iter." class="num">1<' in row, row
    assert 'data-label="Tokens" class="num">120<' in row  # the card's numbers, not the row's zeros


def pending(state_dir: Path) -> list[dict[str, object]]:
    try:
        return rows(state_dir, "select id from approvals where status = 'pending'")
    except sqlite3.OperationalError:  # the run has not made its tables yet
        return []
