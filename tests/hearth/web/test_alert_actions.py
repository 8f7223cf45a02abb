"""Answer from the alert, end to end over real sockets: the pending-approval alert reaches a
loopback ntfy receiver with Approve and Deny `http` actions; POSTing the recorded action's URL to a
real `hearth serve` app decides the approval once, as `alert:<the destination's name>`, and wakes the run. A GET only
shows; forged, replayed, expired, cross-approval and rotated-away links get a clear 4xx page and
change nothing; no session, CSRF token or Origin is needed, but the Host check stands."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from hearth.audit import approvals
from hearth.audit.approvals import utc_clock
from hearth.audit.store import AuditStore, RunRecord
from hearth.leash import actions, alerts
from hearth.queue.directory import Queue
from hearth.queue.request import Request as QueueRequest
from hearth.settings import Settings
from tests.alert_support import Receiver, write_alerts_toml
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.queue_support import rows, wait_for
from tests.web_support import Center

OPERATOR = "operator-token-0123456789abcdef"


@pytest.fixture
def ntfy() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture
def center(state_dir: Path, tmp_path: Path) -> Iterator[Center]:
    # a guarded center (tokens configured): the link works for someone who never signed in
    settings = Settings.from_env()
    settings.queue_dir.mkdir(parents=True, exist_ok=True)
    with AuditStore(settings.audit_path) as audit:
        audit.start_run(
            RunRecord(id="run1", agent_name="builder", model="m", goal="deploy the site", mode="auto", status="waiting")
        )
    with Center(settings, tokens={"operator": OPERATOR}) as served:
        yield served


def _ask(command: str = "make deploy", timeout_s: float = 600) -> approvals.Approval:
    with AuditStore(Settings.from_env().audit_path) as audit:
        return approvals.ask(audit, "run1", "run_command", {"command": command}, "dangerous", timeout_s=timeout_s)


def _state() -> list[dict[str, Any]]:
    path = Settings.from_env().state_dir
    return rows(path, "select * from approvals order by id") + rows(path, "select * from alert_actions")


def _alerted(center: Center, ntfy: Receiver, tmp_path: Path, approval: approvals.Approval) -> dict[str, str]:
    """Send the pending alert as a run does; the ntfy actions it carried, by label."""
    write_alerts_toml(tmp_path / "config", ("phone", f"ntfy://127.0.0.1:{ntfy.port}/hearth", ["approval"]))
    with (tmp_path / "config" / "alerts.toml").open("a") as toml:
        toml.write(f'[approval]\npublic_url = "{center.url}"\n')
    alerts.pending_alert(Settings.from_env())(approval, 'run_command {"command": "make deploy"}')
    alerts.flush()
    wait_for(lambda: ntfy.got, timeout=10, what="the alert at the ntfy receiver")
    header = ntfy.got[-1]["headers"]["X-Actions"]
    found = dict(re.findall(r"http, (\w+), (\S+), method=POST, clear=true", header))
    assert set(found) == {"Approve", "Deny"}, header
    return found


def test_the_ntfy_alerts_approve_action_posted_to_hearth_serve_approves_once_as_its_destination_and_wakes_the_run(
    center: Center, ntfy: Receiver, tmp_path: Path
) -> None:
    approval = _ask()
    found = _alerted(center, ntfy, tmp_path, approval)
    sent = ntfy.got[-1]["body"]
    assert sent["title"] == f"hearth: approval {approval.id} waits"
    assert "run run1 waits for approval" in sent["message"] and "make deploy" in sent["message"]
    # as the link's page says it: the phone reading it may be in another time zone than hearth
    until = r"\(until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)"
    assert re.search(r"(9 min \d+ s|10 min 0 s) left " + until, sent["message"]) and "buttons" in sent["message"]
    assert "\nprofile builder: deploy the site\n" in sent["message"]  # what the run is for, before deciding
    # what a phone's ntfy app does: a bare POST, no cookie, no CSRF token, no Origin
    answer = httpx.post(found["Approve"], timeout=10)
    assert answer.status_code == 200 and "approved" in answer.text
    [row] = rows(center.config.settings.state_dir, "select status, decided_by from approvals")
    assert (row["status"], row["decided_by"]) == ("approved", "alert:phone")
    assert (center.config.settings.queue_dir / "run1.resume").exists()
    recorded = rows(center.config.settings.state_dir, "select destination, status, body from alerts")
    assert [(r["destination"], r["status"]) for r in recorded] == [("phone", "sent")]
    assert "/act/" not in recorded[0]["body"]  # a link is a capability: never kept in the audit
    before = _state()
    replay = httpx.post(found["Approve"], timeout=10)
    assert replay.status_code == 409 and "used already" in replay.text
    other = httpx.post(found["Deny"], timeout=10)
    assert other.status_code == 409 and "approved already" in other.text
    assert _state() == before


def test_a_get_of_the_link_shows_the_call_the_run_and_the_time_left_and_never_decides(
    center: Center, ntfy: Receiver, tmp_path: Path
) -> None:
    approval = _ask()
    found = _alerted(center, ntfy, tmp_path, approval)
    before = _state()
    for _ in range(3):  # a link preview, a scanner, the person
        page = httpx.get(found["Deny"], timeout=10)
        assert page.status_code == 200
        assert "Deny this call?" in page.text and "run1" in page.text and "make deploy" in page.text
        assert re.search(r"(9 min \d+ s|10 min 0 s) left", page.text) and '<form method="post"' in page.text
        assert '<dd id="goal">deploy the site</dd>' in page.text and '<dd id="profile">builder</dd>' in page.text
        assert '<input name="reason"' in page.text
    assert _state() == before
    assert not (center.config.settings.queue_dir / "run1.resume").exists()
    # the page's own button: a browser's form POST, with its Origin, and no session
    said = {"reason": "not on a Friday"}
    answer = httpx.post(found["Deny"], headers={"Origin": center.url}, data=said, timeout=10)
    assert answer.status_code == 200 and "denied" in answer.text
    assert '<a href="/runs/run1" id="run-link">run1</a>' in answer.text  # the confirmation leads to the run
    [row] = rows(center.config.settings.state_dir, "select status, decided_by, note from approvals")
    assert (row["status"], row["decided_by"]) == ("denied", "alert:phone")
    assert row["note"] == "decided from an alert link: not on a Friday"  # told to the model with the denial


def _link(center: Center, token: str) -> str:
    return f"{center.url}/act/{token}"


def test_forged_cross_approval_expired_and_rotated_links_get_a_clear_page_and_change_nothing(
    center: Center, tmp_path: Path
) -> None:
    first, second = _ask("make a"), _ask("make b", timeout_s=60)
    state = center.config.settings.state_dir
    good = actions.for_approval(state, first, "ntfy")["approve"]
    expired = actions.sign(state, second.id, "approve", int((utc_clock() - timedelta(seconds=1)).timestamp()), "ntfy")
    refused = {
        "forged": (good[:-2] + "xx", 403, "signature is wrong"),
        "cross-approval": (good.replace(first.id, second.id), 403, "signature is wrong"),
        "truncated": (good[:20], 400, "not a hearth link"),
        "garbage": ("%00%ff<script>", 400, "not a hearth link"),
        "huge": ("a" * 10_000, 400, "too long"),
        "expired": (expired, 410, "expired"),
    }
    before = _state()
    for name, (token, status, reason) in refused.items():
        for method in ("GET", "POST"):
            answer = httpx.request(method, _link(center, token), timeout=10)
            assert answer.status_code == status, (name, method, answer.text)
            assert reason in answer.text and "nothing changed" in answer.text, (name, method)
    actions.rotate_key(state)
    rotated = httpx.post(_link(center, good), timeout=10)
    assert rotated.status_code == 403 and "since rotated" in rotated.text
    assert _state() == before
    assert not list(center.config.settings.queue_dir.glob("*.resume"))


def test_the_link_keeps_the_host_check_and_the_body_limit(center: Center) -> None:
    approval = _ask()
    token = actions.for_approval(center.config.settings.state_dir, approval, "ntfy")["approve"]
    before = _state()
    foreign = httpx.post(_link(center, token), headers={"Host": "evil.example"}, timeout=10)
    assert foreign.status_code == 400 and "Host" in foreign.text
    big = httpx.post(_link(center, token), content=b"x" * (32 * 1024), timeout=10)
    assert big.status_code == 413
    assert _state() == before


def test_hearth_serve_sends_a_due_reminder_once_by_itself(state_dir: Path, tmp_path: Path, ntfy: Receiver) -> None:
    write_alerts_toml(tmp_path / "config", ("phone", f"ntfy://127.0.0.1:{ntfy.port}/hearth", ["approval"]))
    with (tmp_path / "config" / "alerts.toml").open("a") as toml:
        toml.write('[approval]\nremind_after = "1m"\nremind_before = false\n')
    settings = Settings.from_env()
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    with AuditStore(settings.audit_path) as audit:
        audit.start_run(
            RunRecord(id="run1", agent_name="builder", model="m", goal="deploy the site", mode="auto", status="waiting")
        )
        asked = utc_clock() - timedelta(minutes=2)
        approval = approvals.ask(audit, "run1", "run_command", {"command": "x"}, "x", timeout_s=3600, now=lambda: asked)
    with Center(settings):
        wait_for(lambda: ntfy.got, timeout=20, what="the reminder")
    assert [g["body"]["title"] for g in ntfy.got] == [f"hearth: approval {approval.id} still waits"]
    assert rows(settings.state_dir, "select approval_id, kind from alert_reminders") == [
        {"approval_id": approval.id, "kind": "after"}
    ]


def test_a_suspended_run_decided_from_its_ntfy_alert_resumes_and_ends_done_with_the_same_conversation(
    state_dir: Path, tmp_path: Path, ntfy: Receiver
) -> None:
    settings = Settings.from_env()
    queue = Queue(settings.queue_dir).ensure()
    queue.enqueue(QueueRequest(id="asker", goal="say hello with a command", mode="auto"))
    env = {"HEARTH_SUSPEND_AFTER_S": "0", "HEARTH_SANDBOX": "none"}
    with (
        Center(settings) as center,
        FakeOllama([tool_call("run_command", {"command": "echo ok"}), final_answer("hi")]) as fake,
    ):
        write_alerts_toml(tmp_path / "config", ("phone", f"ntfy://127.0.0.1:{ntfy.port}/hearth", ["approval"]))
        with (tmp_path / "config" / "alerts.toml").open("a") as toml:
            toml.write(f'[approval]\npublic_url = "{center.url}"\n')
        first = run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url, **env})
        assert first.returncode == 0 and "waiting asker.json" in first.stdout, first.stdout + first.stderr
        wait_for(lambda: ntfy.got, timeout=10, what="the approval alert")
        found = dict(re.findall(r"http, (\w+), (\S+), method=POST, clear=true", ntfy.got[0]["headers"]["X-Actions"]))
        assert httpx.post(found["Approve"], timeout=10).status_code == 200
        assert (settings.queue_dir / "asker.resume").exists()
        second = run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url, **env})
        assert "resumed asker" in second.stdout, second.stdout + second.stderr
    [run] = rows(settings.state_dir, "select status, summary from runs")
    assert (run["status"], run["summary"]) == ("done", "hi")
    [decided] = rows(settings.state_dir, "select status, decided_by from approvals")
    assert (decided["status"], decided["decided_by"]) == ("approved", "alert:phone")
    before, after = fake.requests[0], fake.requests[1]
    assert after["messages"][: len(before["messages"])] == before["messages"]
