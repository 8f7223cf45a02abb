"""Alerts through apprise to real loopback receivers (ntfy's format and a JSON webhook's)."""

from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hearth.credentials import CredentialStore
from hearth.errors import ConfigError
from hearth.leash import actions
from hearth.leash.alerts import load_destinations
from hearth.queue.directory import Queue
from hearth.queue.request import Request
from tests.alert_support import Receiver
from tests.alert_support import write_alerts_toml as _alerts
from tests.cli_support import start_watch, stop_watch
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, Raw, final_answer, tool_call
from tests.queue_support import drop, rows, wait_for


@pytest.fixture
def ntfy() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture
def hook() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pending(state_dir: Path) -> list[dict[str, Any]]:
    try:
        return rows(state_dir, "select * from approvals where status = 'pending'")
    except Exception:  # the run has not created the audit yet
        return []


def test_an_approval_waiting_produces_an_alert_at_a_loopback_receiver_within_a_second(
    state_dir: Path, tmp_path: Path, ntfy: Receiver, hook: Receiver
) -> None:
    _alerts(
        tmp_path / "config",
        ("phone", f"ntfy://127.0.0.1:{ntfy.port}/hearth", ["approval"]),
        ("hook", f"json://127.0.0.1:{hook.port}/alerts", None),
    )
    env = {"HEARTH_WEB_URL": "http://hearth.lan:8770", "HEARTH_APPROVAL_TIMEOUT_S": "120"}
    with FakeOllama([tool_call("run_command", {"command": "echo hi"}), final_answer("denied, fine")]) as fake:
        watch = start_watch({**env, "OLLAMA_HOST": fake.url})
        try:
            Queue(state_dir / "queue").ensure().enqueue(Request(id="asks", goal="run echo", mode="auto"))
            [approval] = wait_for(lambda: _pending(state_dir), what="the approval")
            wait_for(lambda: ntfy.got and hook.got, timeout=60, what="the alert at both receivers")
            assert run_cli("hearth", "deny", approval["id"]).returncode == 0
            wait_for(lambda: rows(state_dir, "select status from runs where status = 'done'"), what="the run")
            wait_for(  # each send is recorded once its sender is done, after the receiver has it
                lambda: len(rows(state_dir, "select id from alerts where event = 'approval'")) == 2,
                what="both approval alerts recorded",
            )
        finally:
            stop_watch(watch)
    [sent] = ntfy.got
    assert sent["path"] == "/" and sent["body"]["topic"] == "hearth"
    assert sent["body"]["title"] == f"hearth: approval {approval['id']} waits"
    message = sent["body"]["message"]
    assert f'run asks waits for approval {approval["id"]}: run_command {{"command": "echo hi"}}' in message
    assert "s left (until " in message and f"hearth approve {approval['id']}" in message
    assert "http://hearth.lan:8770/approvals" in message
    # with a base URL: ntfy gets Approve and Deny buttons, a webhook the same two as links in its text
    assert "http, Approve, http://hearth.lan:8770/act/" in sent["headers"]["X-Actions"]
    assert "Approve or Deny with the buttons below" in message
    hooked = hook.got[0]["body"]["message"]
    assert hook.got[0]["path"] == "/alerts" and hooked.startswith(message.rsplit("\n", 1)[0])
    hook_field = re.escape(actions.name_field("hook"))  # each link names its destination: this one "hook"
    assert re.search(rf"approve: http://hearth.lan:8770/act/{approval['id']}\.a\.\d+\.{hook_field}\.", hooked)
    assert re.search(rf"deny: http://hearth.lan:8770/act/{approval['id']}\.d\.\d+\.{hook_field}\.", hooked)
    assert hook.got[0]["body"]["version"] == "1.0" and hook.got[0]["body"]["type"] == "info"
    recorded = rows(state_dir, "select event, run_id, destination, status, attempts from alerts order by id")
    assert {(r["destination"], r["status"]) for r in recorded if r["event"] == "approval"} == {
        ("phone", "sent"),
        ("hook", "sent"),
    }


def test_a_failed_run_is_alerted_and_each_destination_gets_only_its_events(
    state_dir: Path, tmp_path: Path, ntfy: Receiver, hook: Receiver
) -> None:
    _alerts(
        tmp_path / "config",
        ("phone", f"ntfy://127.0.0.1:{ntfy.port}/hearth", ["failed"]),
        ("hook", f"json://127.0.0.1:{hook.port}/alerts", ["done"]),
    )
    with FakeOllama([Raw(200, "not json"), final_answer("fine")]) as fake:
        env = {"OLLAMA_HOST": fake.url, "HEARTH_OLLAMA_BACKOFF_S": "0"}
        assert run_cli("hearth-loop", "break", env=env).returncode == 1
        assert run_cli("hearth-loop", "work", env=env).returncode == 0
    assert [g["body"]["title"].split()[-1] for g in ntfy.got] == ["failed"]
    assert [g["body"]["title"].split()[-1] for g in hook.got] == ["done"]
    assert ntfy.got[0]["body"]["message"].startswith("default: break\n")


def test_a_failing_or_slow_destination_never_blocks_or_fails_a_run(state_dir: Path, tmp_path: Path) -> None:
    slow = Receiver(hold=True)
    try:
        _alerts(
            tmp_path / "config",
            ("gone", f"json://127.0.0.1:{_closed_port()}/x", ["done"]),
            ("slow", f"json://127.0.0.1:{slow.port}/x?rto=1", ["done"]),
        )
        with FakeOllama([final_answer("finished")]) as fake:
            run = run_cli_background(fake.url)
            wait_for(lambda: slow.got, what="the slow destination to be reached")
            # the slow destination still holds its answer, and the run is already recorded done
            assert rows(state_dir, "select status from runs") == [{"status": "done"}]
            slow.release()
            assert run.wait(60) == 0
    finally:
        slow.close()
    recorded = {r["destination"]: r for r in rows(state_dir, "select * from alerts")}
    assert recorded["gone"]["status"] == "failed" and recorded["gone"]["attempts"] == 3
    assert "Connection refused" in recorded["gone"]["error"]
    assert recorded["slow"]["status"] in ("sent", "failed")  # a timeout is a failure, recorded like any


def run_cli_background(ollama: str) -> Any:
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    env = {**os.environ, "OLLAMA_HOST": ollama, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "hearth.cli.loop", "finish"], env=env, cwd=ROOT, stdout=subprocess.DEVNULL
    )


def test_alerts_test_sends_to_each_destination_and_reports_each(
    state_dir: Path, tmp_path: Path, ntfy: Receiver
) -> None:
    _alerts(
        tmp_path / "config",
        ("phone", f"ntfy://127.0.0.1:{ntfy.port}/hearth", None),
        ("gone", f"json://127.0.0.1:{_closed_port()}/x", None),
    )
    proc = run_cli("hearth", "alerts", "test")
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[0] == "phone: sent" and lines[1].startswith("gone: failed (cannot connect to 127.0.0.1:")
    assert ntfy.got[0]["body"]["title"] == "hearth: test alert"
    listed = run_cli("hearth", "alerts").stdout
    assert "phone" in listed and "failed" in listed


def test_a_secret_in_an_alert_url_comes_from_the_credential_store_and_is_never_recorded(
    state_dir: Path, tmp_path: Path, hook: Receiver
) -> None:
    store = CredentialStore(state_dir / "credentials.json")
    store.set("hook-pass", ["127.0.0.1"], "s3cret-value-123")
    _alerts(
        tmp_path / "config",
        ("hook", f"json://user:{{cred:hook-pass}}@127.0.0.1:{hook.port}/a", None),
        ("nocred", "json://user:{cred:missing}@127.0.0.1:9/a", None),
    )
    assert run_cli("hearth", "alerts", "test").returncode == 1
    assert hook.got[0]["headers"]["Authorization"].startswith("Basic ")
    text = json.dumps(rows(state_dir, "select * from alerts"))
    assert "s3cret-value-123" not in text
    assert "credential 'missing', which hearth's store does not have" in text


def test_a_refused_request_is_alerted(state_dir: Path, tmp_path: Path, ntfy: Receiver) -> None:
    _alerts(tmp_path / "config", ("phone", f"ntfy://127.0.0.1:{ntfy.port}/hearth", ["rejected"]))
    drop(state_dir / "queue", "bad.json", {"id": "bad", "goal": "g", "sudo": True})
    assert run_cli("hearth", "spawn", "--local").returncode == 0
    assert "unknown field" in ntfy.got[0]["body"]["message"]


DOCS_EXAMPLE = ["failed", "budget_exceeded", "approval"]  # docs/leash.md's alerts.toml


def titles(receiver: Receiver) -> list[str]:
    return [g["body"]["title"] for g in receiver.got]


def test_every_failure_reaches_a_destination_that_wants_failed(state_dir: Path, tmp_path: Path, ntfy: Receiver) -> None:
    """A failed swarm, a mistyped model and a refused request each reach `failed` (once each)."""
    _alerts(tmp_path / "config", ("phone", f"ntfy://127.0.0.1:{ntfy.port}/hearth", DOCS_EXAMPLE))
    with FakeOllama([final_answer("no plan here")], repeat_last=True, models=("qwen2.5-coder:7b",)) as fake:
        env = {"OLLAMA_HOST": fake.url}
        assert run_cli("hearth", "enqueue", "split this", "--id", "sw", "--swarm", "2").returncode == 0
        assert run_cli("hearth", "spawn", "--local", env=env).returncode == 0
        assert run_cli("hearth-loop", "--model", "qwen2.5-codr", "do it", env=env).returncode == 4
    drop(state_dir / "queue", "bad.json", {"id": "bad", "goal": "g", "sudo": True})
    assert run_cli("hearth", "spawn", "--local").returncode == 0
    said = titles(ntfy)
    assert "hearth: run sw failed" in said
    assert any(t.endswith(" model unavailable") for t in said)
    assert "hearth: run bad.json rejected" in said  # it never parsed: the file is named
    assert len(said) == 3, said
    [typo] = [g["body"]["message"] for g in ntfy.got if g["body"]["title"].endswith(" model unavailable")]
    assert "did you mean qwen2.5-coder:7b?" in typo


def test_a_request_the_daily_budget_refuses_is_alerted_as_budget_exceeded(
    state_dir: Path, tmp_path: Path, ntfy: Receiver, hook: Receiver
) -> None:
    _alerts(
        tmp_path / "config",
        ("phone", f"ntfy://127.0.0.1:{ntfy.port}/hearth", ["budget_exceeded"]),
        ("hook", f"json://127.0.0.1:{hook.port}/alerts", ["failed"]),
    )
    env = {"HEARTH_DAILY_TOKENS": "100"}
    with FakeOllama([final_answer("spent it")], tokens=(100, 20)) as fake:
        assert run_cli("hearth-loop", "spend", env={**env, "OLLAMA_HOST": fake.url}).returncode == 0
    drop(state_dir / "queue", "late.json", {"id": "late", "goal": "one more"})
    assert run_cli("hearth", "spawn", "--local", env=env).returncode == 0
    assert titles(ntfy) == titles(hook) == ["hearth: run late budget exceeded"]
    assert "not started: the daily token budget of 100 tokens is spent" in ntfy.got[0]["body"]["message"]
    [late] = rows(state_dir, "select status from runs where id = 'late'")
    assert late["status"] == "rejected"  # the run is refused as any request is; the alert says why


def test_a_run_killed_outright_is_alerted_by_the_next_command_that_finds_it_dead(
    state_dir: Path, tmp_path: Path, ntfy: Receiver
) -> None:
    from tests.cli_support import start_blocked_run
    from tests.fake_ollama import Held

    _alerts(tmp_path / "config", ("phone", f"ntfy://127.0.0.1:{ntfy.port}/hearth", ["interrupted"]))
    release = threading.Event()
    with FakeOllama([Held(final_answer("never sent"), 1, release)]) as fake:
        loop, run_id = start_blocked_run(state_dir, fake, tmp_path)
        loop.kill()  # SIGKILL: the run cannot alert for itself
        loop.wait()
        release.set()
    assert ntfy.got == []
    assert run_cli("hearth", "runs").returncode == 0  # it looks, finds the run dead, settles and alerts it
    [got] = ntfy.got
    assert got["body"]["title"] == f"hearth: run {run_id} interrupted"
    assert "process is gone" in got["body"]["message"] and "wait here" in got["body"]["message"]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('[[destination]]\nurl = "nosuch://x"', "destination[0].url: apprise does not know the scheme 'nosuch://'"),
        ('[[destination]]\nname = "x"', "destination[0].url must be an apprise URL"),
        ('[[destination]]\nurl = "json://h"\nevents = ["fail"]', "destination[0].events: 'fail' is not one of"),
        ('[[destination]]\nurl = "json://h"\nlevel = 1', "destination[0]: unknown key 'level'"),
    ],
)
def test_a_bad_alerts_file_is_one_line_naming_the_file_and_the_field(tmp_path: Path, text: str, error: str) -> None:
    (tmp_path / "alerts.toml").write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_destinations(tmp_path)
    assert "alerts.toml: " + error in str(caught.value)


def test_hearth_alerts_lists_each_destination_without_the_secrets_in_its_url(state_dir: Path, tmp_path: Path) -> None:
    _alerts(
        tmp_path / "config",
        ("phone", "ntfy://ntfy.example.org/topic-s3cretabcdef", None),
        ("hook", "json://user:pa55word-xyz@hooks.example.org/path-t0ken-123456", None),
    )
    listed = run_cli("hearth", "alerts")
    shown = json.loads(run_cli("hearth", "alerts", "--json").stdout)["destinations"]
    assert listed.returncode == 0
    for secret in ("s3cretabcdef", "pa55word-xyz", "t0ken-123456"):
        assert secret not in listed.stdout and secret not in json.dumps(shown)
    assert [d["url"].split("://")[0] for d in shown] == ["ntfy", "json"] and "hooks.example.org" in shown[1]["url"]
