"""The command center in a real Chromium (Debian's, driven by Playwright): what an operator does.

Each test saves screenshots of the pages it visits under its tmp dir (and into
$HEARTH_SCREENSHOTS when that is set, for a person to look at). Skipped only when chromium or
Playwright is missing, and never as root in CI, where the project's own set-up installs both.
"""

from __future__ import annotations

import http.server
import json
import re
import threading
from pathlib import Path

from agent.knowledge.store import KnowledgeStore
from hearth.evolve import Proposal, record_proposal
from hearth.settings import Settings
from tests.browser_support import Browser
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.queue_support import Gate, rows, wait_for
from tests.web_support import Center, run_status, seed_runs

OPERATOR = "operator-token-0123456789abcdef"
PAYLOAD = '<script>window.__xss=1;alert(1)</script><img src=x onerror="window.__xss=2;alert(2)"> javascript:alert(3)'


def test_launch_from_the_form_shows_the_run_on_the_live_map_until_it_is_done(
    center: Center, browser: Browser, state_dir: Path
) -> None:
    gate = Gate()
    with FakeOllama([gate]) as fake:
        center.start_watch(fake.url)
        overview = browser.page()
        overview.goto(center.url + "/")
        form = browser.page()
        form.goto(center.url + "/launch")
        browser.shot(form, "launch")
        form.fill("textarea[name=goal]", "Summarise NOTES.md in three lines")
        form.check("input[name=mode][value=plan]")
        form.check("input[name=tools][value=read_file]")
        form.click("#launch")
        form.wait_for_url(re.compile(r"/runs/[^/?]+\?queued=1$"))
        run_id = form.url.split("/runs/")[1].split("?")[0]
        assert gate.reached.wait(30)
        overview.wait_for_selector(f'.run-card[data-run="{run_id}"] .st-thinking', timeout=10_000)
        browser.shot(overview, "overview-live")
        gate.opened.set()
        overview.wait_for_selector(f'#runs-table tr:has(a:text-is("{run_id}")) .st-done', timeout=15_000)
        assert overview.locator(f'.run-card[data-run="{run_id}"]').count() == 0
        browser.shot(overview, "overview-done")
    [request] = rows(state_dir, "select source, requested_by, body from requests where id = ?", run_id)
    assert request["source"] == "command-center" and request["requested_by"] == "local"
    assert json.loads(request["body"])["allowed_tools"] == ["read_file"]


def test_a_refused_launch_says_why_beside_the_field(center: Center, browser: Browser) -> None:
    page = browser.page()
    page.goto(center.url + "/launch")
    page.fill("textarea[name=goal]", "count to ten")
    page.fill("input[name=max_iterations]", "500")
    page.click("#launch")
    error = page.wait_for_selector("#error-max_iterations")
    assert error.inner_text() == "Max iterations must be at most 100, got 500"  # in the form's words, once
    assert page.inner_text("#launch-error") == "Not launched: 1 field below to fix."
    assert page.input_value("textarea[name=goal]") == "count to ten"
    browser.shot(page, "launch-refused")


def test_an_auto_run_waits_for_approval_approve_runs_the_exact_call_deny_tells_the_model(
    center: Center, browser: Browser, state_dir: Path
) -> None:
    script = [
        tool_call("run_command", {"command": "echo approved-marker"}),
        final_answer("it printed approved-marker"),
        tool_call("run_command", {"command": "rm -rf notes"}),
        final_answer("understood, I left the notes alone"),
    ]
    with FakeOllama(script) as fake:
        center.start_watch(fake.url)
        client = center.client()
        phone = browser.page(390, 844)
        phone.goto(center.url + "/approvals")
        client.post_json("/api/enqueue", {"goal": "print a marker", "id": "asks-1", "mode": "auto"})
        card = phone.wait_for_selector(".approval", timeout=15_000)
        assert '"command": "echo approved-marker"' in card.inner_text()
        browser.shot(phone, "approvals-phone")
        phone.click("[data-approve]")
        wait_for(lambda: run_status(state_dir, "asks-1") == "done", what="the approved run to finish")
        client.post_json("/api/enqueue", {"goal": "clean up", "id": "asks-2", "mode": "auto"})
        phone.wait_for_selector(".approval", timeout=15_000)
        phone.fill(".approval input[name=reason]", "not on a Friday")
        phone.click("[data-deny]")
        wait_for(lambda: run_status(state_dir, "asks-2") == "done", what="the denied run to finish")
        assert "not on a Friday" in json.dumps(fake.requests[-1]["messages"])
        # the decided call stays listed (the "just decided" mark lasts only until the next live refresh)
        phone.wait_for_selector("#decisions tr:has-text('not on a Friday')")
        browser.shot(phone, "approvals-decided-phone")
    [approved] = rows(state_dir, "select * from steps where run_id = 'asks-1' and kind = 'tool'")
    assert approved["verdict"] == "approved" and "approved-marker" in approved["output"]
    decided = rows(state_dir, "select run_id, status, decided_by from approvals order by run_id")
    assert [(d["run_id"], d["status"], d["decided_by"]) for d in decided] == [
        ("asks-1", "approved", "web:local"),
        ("asks-2", "denied", "web:local"),
    ]


def test_a_finished_run_replays_step_by_step_with_the_arrow_keys(
    center: Center, browser: Browser, state_dir: Path
) -> None:
    [run_id] = seed_runs(state_dir, 1, steps=5)
    page = browser.page()
    page.goto(f"{center.url}/runs/{run_id}")
    browser.shot(page, "run")
    visible = "document.querySelectorAll('#steps > li.step:not([hidden])').length"
    assert page.evaluate(visible) == 5
    page.keyboard.press("ArrowRight")
    assert page.inner_text("#replay-counter") == "step 1 of 5" and page.evaluate(visible) == 1
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert page.inner_text("#replay-counter") == "step 3 of 5" and page.evaluate(visible) == 3
    page.keyboard.press("ArrowLeft")
    assert page.evaluate(visible) == 2 and page.locator("li.step.current").get_attribute("data-seq") == "2"
    browser.shot(page, "run-replay")
    page.click("[data-replay=all]")
    assert page.evaluate(visible) == 5


def test_the_report_page_draws_its_charts(center: Center, browser: Browser, state_dir: Path) -> None:
    seed_runs(state_dir, 80, steps=1)
    page = browser.page()
    page.goto(center.url + "/report?since=")
    assert page.locator("#charts figure.chart > svg").count() == 2  # runs and tokens per day
    assert page.locator("#charts figure.chart > ul.hbars").count() == 3  # duration, tools, failures
    assert page.locator("#charts svg rect").count() > 20
    assert "Runs per day, by status" in page.inner_text("#charts")
    browser.shot(page, "report")


def test_payloads_in_a_goal_a_file_name_and_tool_output_render_as_text_and_nothing_runs(
    center: Center, browser: Browser, state_dir: Path
) -> None:
    script = [
        tool_call("write_file", {"path": "<img src=x onerror=alert(4)>.txt", "content": PAYLOAD}),
        tool_call("read_file", {"path": "<img src=x onerror=alert(4)>.txt"}),
        final_answer(f"done: {PAYLOAD}"),
    ]
    with FakeOllama(script) as fake:
        center.start_watch(fake.url)
        center.client().post_json("/api/enqueue", {"goal": PAYLOAD, "id": "xss", "mode": "bypass"})
        wait_for(lambda: run_status(state_dir, "xss") == "done", what="the run to finish")
    page = browser.page()
    for path in ("/", "/runs", "/runs/xss", "/runs?q=script", "/report?since="):
        page.goto(center.url + path)
        page.wait_for_load_state("networkidle")
        injected = page.evaluate(
            "[window.__xss, document.querySelectorAll('script:not([src]), img[src=x], a[href^=javascript]').length]"
        )
        assert injected == [None, 0], path
    page.goto(center.url + "/runs/xss")
    assert page.inner_text("#goal") == PAYLOAD
    assert "<script>window.__xss=1" in page.inner_text("#steps")
    assert "<img src=x onerror=alert(4)>.txt" in page.inner_text("#diff")
    browser.shot(page, "run-with-payloads")
    assert browser.dialogs == []


def test_posts_without_the_csrf_token_or_from_another_origin_are_refused(
    center: Center, browser: Browser, state_dir: Path, tmp_path: Path
) -> None:
    page = browser.page()
    page.goto(center.url + "/")
    same_origin = page.evaluate(
        "fetch('/api/enqueue', {method: 'POST', headers: {'Content-Type': 'application/json'},"
        " body: JSON.stringify({goal: 'no token'})}).then(r => r.status)"
    )
    assert same_origin == 403
    attacker = _attacker_site(tmp_path, center.url)
    try:
        page.goto(attacker)
        page.wait_for_url(center.url + "/launch")
        assert "must come from" in page.inner_text("body")
    finally:
        attacker_server.shutdown()
    assert not list((state_dir / "queue").glob("*.json")) if (state_dir / "queue").exists() else True


attacker_server: http.server.ThreadingHTTPServer


def _attacker_site(tmp: Path, target: str) -> str:
    """Another origin whose page posts the launch form to the command center on load."""
    global attacker_server
    site = tmp / "attacker"
    site.mkdir()
    (site / "index.html").write_text(
        f'<form id="f" method="post" action="{target}/launch"><input name="goal" value="pwned">'
        '<input name="csrf" value="guessed"></form><script>document.getElementById("f").submit()</script>'
    )
    handler = lambda *a: http.server.SimpleHTTPRequestHandler(*a, directory=str(site))  # noqa: E731
    attacker_server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=attacker_server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{attacker_server.server_address[1]}/index.html"


def test_a_wrong_token_is_refused_and_the_right_one_signs_in(state_dir: Path, browser: Browser) -> None:
    with Center(Settings.from_env(), tokens={"operator": OPERATOR}) as guarded:
        page = browser.page()
        page.goto(guarded.url + "/runs")
        page.wait_for_url(re.compile(r"/signin\?next=/runs$"))
        page.fill("input[name=name]", "ana")
        page.fill("input[name=token]", "not-the-token-at-all")
        page.click("button.primary")
        assert page.inner_text("#signin-error") == "wrong token"
        browser.shot(page, "signin-refused")
        page.fill("input[name=token]", OPERATOR)
        page.click("button.primary")
        page.wait_for_url(guarded.url + "/runs")
        assert "ana · operator" in page.inner_text("header.top")


def test_knowledge_proposals_and_errors_render_and_a_document_can_be_removed(
    center: Center, browser: Browser, state_dir: Path
) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    with KnowledgeStore(state_dir / "knowledge.db") as store:
        store.add(
            "Releases are cut on Tuesdays after the tests pass.", title="Release process", source="docs/release.md"
        )
        store.remember("Run pytest before reporting success.", tags="tests")
    diff = "diff --git a/flake.nix b/flake.nix\n--- a/flake.nix\n+++ b/flake.nix\n@@ -1 +1 @@\n-old\n+new\n"
    record_proposal(
        Settings.from_env(),
        Proposal(
            "evolve-1",
            "tidy flake",
            "/etc/nixos",
            "hearth/evolve-1",
            "abc123",
            "proposed",
            diff=diff,
            check_passed=True,
        ),
    )
    page = browser.page()
    page.goto(center.url + "/knowledge?q=tuesdays")
    assert "Release process" in page.inner_text(".hits")
    browser.shot(page, "knowledge")
    page.click("form[action='/knowledge/document/1/remove'] button")
    page.wait_for_url(center.url + "/knowledge")
    assert "The knowledge base is empty" in page.inner_text("body")
    page.goto(center.url + "/proposals")
    page.click("details summary")
    assert "+new" in page.inner_text(".diff")
    browser.shot(page, "proposals")
    page.goto(center.url + "/runs/no-such-run")
    assert "no run with id 'no-such-run'" in page.inner_text("#reason")
    browser.shot(page, "error")
    page.goto(center.url + "/runs")
    browser.shot(page, "runs")


def test_approve_and_always_allow_makes_a_standing_rule_that_the_page_lists_and_removes(
    center: Center, browser: Browser, state_dir: Path
) -> None:
    with FakeOllama([tool_call("run_command", {"command": "echo rule-marker"}), final_answer("printed it")]) as fake:
        center.start_watch(fake.url)
        phone = browser.page(390, 844)
        phone.goto(center.url + "/approvals")
        center.client().post_json("/api/enqueue", {"goal": "print a marker", "id": "always-1", "mode": "auto"})
        button = phone.wait_for_selector("[data-always]", timeout=15_000)
        assert button.inner_text() == "Approve and always allow in default"
        browser.shot(phone, "approvals-always-phone")
        button.click()
        wait_for(lambda: run_status(state_dir, "always-1") == "done", what="the approved run to finish")
        row = phone.wait_for_selector("#rules tr:has-text('run_command: echo rule-marker')")
        assert "web:local" in row.inner_text()
        browser.shot(phone, "approvals-rule-phone")
        phone.click("[data-remove-rule]")
        phone.wait_for_selector("#standing-rules p.empty")
    [rule] = rows(state_dir, "select profile, head, arguments, made_by, removed_by from standing_rules")
    assert rule == {
        "profile": "default",
        "head": "echo",
        "arguments": '["rule-marker"]',
        "made_by": "web:local",
        "removed_by": "web:local",
    }


def test_the_countdown_of_a_waiting_call_keeps_the_servers_words(
    center: Center, browser: Browser, state_dir: Path
) -> None:
    """`11 h 59 min left` counts down as `11 h 58 min left`, not as `718 min 59 s left`."""
    from hearth.audit import approvals
    from hearth.audit.store import AuditStore, RunRecord

    state_dir.mkdir(parents=True, exist_ok=True)
    with AuditStore(state_dir / "audit.db") as audit:
        # suspended while it waits (no process, by design): nothing settles it
        audit.start_run(
            RunRecord(id="run1", agent_name="builder", model="m", goal="deploy", mode="auto", status="waiting")
        )
        approvals.ask(audit, "run1", "run_command", {"command": "make deploy"}, "dangerous", timeout_s=12 * 3600)
    page = browser.page(390, 844)
    page.clock.install()  # the page's own clock, moved on below: its timers run, no test waits on time
    page.goto(center.url + "/approvals")
    left = page.locator(".approval [data-expires]")
    assert re.fullmatch(r"11 h 59 min left|12 h 0 min left", left.inner_text())
    page.clock.run_for(61_000)
    assert re.fullmatch(r"11 h 58 min left|11 h 59 min left", left.inner_text()), left.inner_text()
    page.clock.run_for(12 * 3600 * 1000)
    assert left.inner_text() == "expired"
