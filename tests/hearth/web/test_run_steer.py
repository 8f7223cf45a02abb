"""The run page's steer form: a working run's page has it for whoever may approve the run's calls,
in a real Chromium at a desktop's and a phone's width (axe); what is typed survives the live page
swapping itself; a posted steer reaches the model after the next tool result, recorded as from
`web:USER`; a run that ended shows no form; a viewer, an operator without `approve` in the run's
profile, an ended run and an unknown one are refused, with nothing left for a run."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from agent.steer import STEER_MARK
from hearth.audit.store import AuditStore
from hearth.settings import Settings
from hearth.users import roster
from tests.browser_support import Browser
from tests.fake_ollama import FakeOllama, Gated, assert_every_request_legal, final_answer, tool_call
from tests.queue_support import rows, wait_for
from tests.web_support import Center, run_status

TOKENS = {"operator": "operator-token-0123456789", "viewer": "viewer-token-0123456789"}


def swap(page: Any) -> None:
    """A state event arrives (another run, an approval elsewhere): the live run page swaps itself."""
    swapped = page.evaluate(
        """() => new Promise(done => {
             document.body.addEventListener("htmx:afterSettle", () => done(true), { once: true });
             document.body.dispatchEvent(new CustomEvent("hearth:state", { detail: {} }));
           })"""
    )
    assert swapped is True


def test_a_steer_typed_on_the_run_page_survives_a_refresh_and_reaches_the_model_after_the_next_tool_result(
    center: Center, browser: Browser, state_dir: Path
) -> None:
    first = Gated(tool_call("list_files", {"path": "."}))
    with FakeOllama([first, final_answer("Listed the top level.")]) as fake:
        try:
            center.start_watch(fake.url)
            center.client().post_json("/api/enqueue", {"goal": "list the workspace", "id": "steer-1"})
            wait_for(lambda: bool(fake.requests), what="the run to ask its model")
            _steer_in_the_browser(center, browser)
        finally:
            first.release.set()
        wait_for(lambda: run_status(state_dir, "steer-1") == "done", what="the steered run to finish")
    told = fake.requests[1]["messages"]
    assert told[-2]["role"] == "tool"
    assert told[-1] == {
        "role": "user",
        "content": f"{STEER_MARK}web:local: a person watching this run, not a tool result]\nOnly the top level.",
    }
    assert_every_request_legal(fake.requests)
    [step] = rows(state_dir, "select detail from steps where run_id = 'steer-1' and kind = 'steer'")
    assert step["detail"] == "from web:local: Only the top level."
    page = browser.page()
    page.goto(center.url + "/runs/steer-1")
    assert page.locator("#steer").count() == 0, "a run that ended shows no steer form"
    assert "from web:local: Only the top level." in page.inner_text("li.step.kind-steer")


def _steer_in_the_browser(center: Center, browser: Browser) -> None:
    page = browser.page()
    page.goto(center.url + "/runs/steer-1")
    page.fill("#steer-text", "Only the top")
    swap(page)
    assert page.input_value("#steer-text") == "Only the top", "the live refresh kept what is being typed"
    page.fill("#steer-text", "Only the top level.")
    page.click("#steer-run")
    page.wait_for_url(re.compile(r"/runs/steer-1\?steered=1"))
    assert "waits for the run's next tool result" in page.inner_text("#steered-notice")
    assert "web:local" in page.inner_text("#steers-waiting") and "Only the top level." in page.inner_text(
        "#steers-waiting"
    )
    browser.shot(page, "run-steer-1280")
    assert browser.axe(page) == []
    phone = browser.page(390, 844)
    phone.goto(center.url + "/runs/steer-1")
    # measured inside the page once the button is laid out: the live page swaps its run section
    # while the run works, and a button caught mid-swap has no box
    right = phone.wait_for_function(
        """() => {
             const button = document.querySelector("#steer-run");
             const box = button && button.getBoundingClientRect();
             return box && box.width > 0 ? box.right : false;
           }"""
    ).json_value()
    assert right <= 390, right
    browser.shot(phone, "run-steer-390")
    assert browser.axe(phone) == []
    assert browser.errors == []


def test_the_form_is_for_those_who_may_approve_and_a_refused_steer_leaves_nothing(state_dir: Path) -> None:
    settings = Settings.from_env()
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    with AuditStore(settings.audit_path) as audit:
        lena = roster.add(audit, "lena", "operator", by="test")
        roster.grant(audit, "lena", "default", "launch", by="test")  # launches there, may not approve
    with Center(settings, tokens=TOKENS) as center:
        operator = center.client(Authorization=f"Bearer {TOKENS['operator']}")
        assert operator.post_json("/api/enqueue", {"goal": "wait in the queue", "id": "queued-1"}).status_code == 201
        page = operator.get("/runs/queued-1").text
        assert 'id="steer-text"' in page, "a run still in the queue takes a steer at its first boundary"
        for who in (TOKENS["viewer"], lena):
            client = center.client(Authorization=f"Bearer {who}")
            assert 'id="steer-text"' not in client.get("/runs/queued-1").text
            refused = client.post_json("/api/runs/queued-1/steer", {"text": "use staging"})
            assert refused.status_code == 403, refused.text
        assert "lena" in refused.json()["error"] and "approve" in refused.json()["error"]
        empty = operator.post_json("/api/runs/queued-1/steer", {"text": "  "})
        assert empty.status_code == 400 and "the steer is empty" in empty.json()["error"]
        unknown = operator.post_json("/api/runs/no-such-run/steer", {"text": "hi"})
        assert unknown.status_code == 404 and "no run 'no-such-run'" in unknown.json()["error"]
        given = operator.post_form("/runs/queued-1/steer", {"text": "Use staging."})
        assert given.status_code == 303 and given.headers["location"] == "/runs/queued-1?steered=1"
        waiting = list((settings.state_dir / "state" / "steers" / "queued-1").iterdir())
        assert len(waiting) == 1, "the viewer's, lena's and the empty steer left nothing; the operator's one file"
        _ended(center, operator, settings)


def _ended(center: Center, operator: Any, settings: Settings) -> None:
    from tests.web_support import seed_runs

    [ended] = seed_runs(settings.state_dir, 1, prefix="ended")
    assert 'id="steer-text"' not in operator.get(f"/runs/{ended}").text
    refused = operator.post_json(f"/api/runs/{ended}/steer", {"text": "and the docs?"})
    assert refused.status_code == 409 and f"run {ended} has ended (done)" in refused.json()["error"]
    assert not (settings.state_dir / "state" / "steers" / ended).exists()
