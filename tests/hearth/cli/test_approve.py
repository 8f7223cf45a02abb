"""Approvals across real processes: a headless `hearth-loop` waits on a dangerous call and another
process decides it with `hearth approve` / `hearth deny`; silence is a deny; a pty is asked in
place. Also the operator's auto-approved heads and `sandbox = none`, end to end."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, run_cli
from tests.fake_ollama import FakeOllama, final_answer, tool_call

COMMAND = "echo approved > proof.txt"


def start_loop(
    fake: FakeOllama, workspace: Path, *args: str, env: dict[str, str] | None = None, tty: int | None = None
) -> subprocess.Popen[str]:
    """`hearth-loop` as a real background process; with no tty its stdin is /dev/null (headless)."""
    full_env = {**os.environ, **(env or {}), "PYTHONPATH": str(ROOT)}
    stdin = tty if tty is not None else subprocess.DEVNULL
    stdout = tty if tty is not None else subprocess.PIPE
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hearth.cli.loop",
            "--ollama-host",
            fake.url,
            "--workspace",
            str(workspace),
            *args,
            "do the thing",
        ],
        stdin=stdin,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env=full_env,
        cwd=ROOT,
    )


def pending(within_s: float = 20, *listing: str) -> dict[str, Any]:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        rows = json.loads(run_cli("hearth", "approvals", "--json", *listing).stdout or "[]")
        if rows:
            return rows[0]
        time.sleep(0.1)
    raise AssertionError("no approval became pending")


def db_rows(state_dir: Path, query: str, *params: Any) -> list[dict[str, Any]]:
    conn = sqlite3.connect(state_dir / "audit.db")
    conn.row_factory = sqlite3.Row
    return [dict(r) for r in conn.execute(query, params)]


def tool_results(fake: FakeOllama) -> list[str]:
    return [m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "tool"]


@pytest.fixture
def scripted() -> Iterator[FakeOllama]:
    with FakeOllama([tool_call("run_command", {"command": COMMAND}), final_answer("finished")]) as fake:
        yield fake


def test_a_headless_run_waits_and_runs_once_another_process_approves(
    state_dir: Path, tmp_path: Path, scripted: FakeOllama
) -> None:
    loop = start_loop(scripted, tmp_path / "ws")
    waiting = pending()
    state = json.loads((state_dir / "state" / f"{waiting['run_id']}.json").read_text())
    assert state["state"] == "waiting_approval" and waiting["id"] in state["detail"]
    assert waiting["tool"] == "run_command" and waiting["arguments"] == {"command": COMMAND}
    assert not (tmp_path / "ws" / "proof.txt").exists()
    # the time left in the words an alert and the page use
    assert re.search(r"  (11 h 59 min|12 h 0 min) left$", run_cli("hearth", "approvals").stdout, re.M)
    approved = run_cli("hearth", "approve", waiting["id"])
    assert approved.returncode == 0 and approved.stdout.startswith(f"approved {waiting['id']}: run_command")
    out, err = loop.communicate(timeout=30)
    assert loop.returncode == 0, err
    assert (tmp_path / "ws" / "proof.txt").read_text() == "approved\n"
    [row] = db_rows(state_dir, "select * from approvals")
    assert row["status"] == "approved" and row["decided_by"].startswith("cli:") and row["timeout_s"] == 12 * 3600
    [decided] = run_cli("hearth", "approvals", "--all").stdout.splitlines()[1:]
    assert re.search(r" approved .* - +cli:", decided) and "left" not in decided and "expired" not in decided
    [tool] = db_rows(state_dir, "select * from steps where kind = 'tool'")
    assert tool["verdict"] == "approved" and json.loads(tool["detail"])["approval"] == waiting["id"]
    assert [s["kind"] for s in db_rows(state_dir, "select kind from steps order by seq")] == [
        "model",
        "tool",  # recorded when it started (issue 17), so before the approval it waited for
        "approval",
        "model",
    ]
    again = run_cli("hearth", "approve", waiting["id"])
    assert again.returncode == 1 and "was already approved" in again.stderr
    shown = run_cli("hearth", "show", waiting["run_id"]).stdout
    assert f'approval run_command {{"command":"{COMMAND}"}} -> approved by cli:' in shown
    assert "timeout 43200.0s)" in shown


def test_a_deny_from_another_process_is_what_the_model_reads(
    state_dir: Path, tmp_path: Path, scripted: FakeOllama
) -> None:
    loop = start_loop(scripted, tmp_path / "ws")
    waiting = pending()
    denied = run_cli("hearth", "deny", waiting["id"], "--reason", "not on a Friday")
    assert denied.returncode == 0
    loop.communicate(timeout=30)
    assert loop.returncode == 0 and not (tmp_path / "ws" / "proof.txt").exists()
    [result] = tool_results(scripted)
    assert result.startswith("Denied: run_command was not run (denied by cli:")
    assert "not on a Friday" in result and "Do not retry it" in result


def test_nobody_deciding_in_time_is_a_deny_and_a_late_approve_is_refused(
    state_dir: Path, tmp_path: Path, scripted: FakeOllama
) -> None:
    loop = start_loop(scripted, tmp_path / "ws", env={"HEARTH_APPROVAL_TIMEOUT_S": "1"})
    waiting = pending(20, "--all")  # --all: it may already have expired when we first look
    loop.communicate(timeout=30)
    assert loop.returncode == 0 and not (tmp_path / "ws" / "proof.txt").exists()
    assert "nobody approved it within 1s" in tool_results(scripted)[0]
    [row] = db_rows(state_dir, "select * from approvals")
    assert (row["status"], row["decided_by"], row["timeout_s"]) == ("expired", "timeout", 1)
    late = run_cli("hearth", "approve", waiting["id"])
    assert late.returncode == 1 and "expired" in late.stderr and "nothing changed" in late.stderr
    assert json.loads(run_cli("hearth", "approvals", "--all", "--json").stdout)[0]["status"] == "expired"


def test_a_run_stopped_while_waiting_leaves_no_open_approval(
    state_dir: Path, tmp_path: Path, scripted: FakeOllama
) -> None:
    loop = start_loop(scripted, tmp_path / "ws", "--json")
    waiting = pending()
    loop.send_signal(signal.SIGTERM)
    out, _ = loop.communicate(timeout=30)
    assert loop.returncode == 130
    events = [json.loads(line)["event"] for line in out.splitlines()]
    assert events[-2:] == ["tool_started", "approval_pending"]
    [row] = db_rows(state_dir, "select * from approvals")
    assert row["status"] == "cancelled"
    late = run_cli("hearth", "approve", waiting["id"])
    assert late.returncode == 1 and "already cancelled" in late.stderr
    assert not (tmp_path / "ws" / "proof.txt").exists()


def test_approvals_commands_on_nothing_are_clear(state_dir: Path) -> None:
    assert run_cli("hearth", "approvals").stdout == "no approvals waiting\n"
    missing = run_cli("hearth", "approve", "abcdef")
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1


def test_a_person_at_a_terminal_is_asked_in_place(state_dir: Path, tmp_path: Path, scripted: FakeOllama) -> None:
    master, slave = pty.openpty()
    loop = start_loop(scripted, tmp_path / "ws", tty=slave)
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 30
    while b"[d]eny?" not in seen and time.monotonic() < deadline:
        if select.select([master], [], [], 1)[0]:
            seen += os.read(master, 4096)
    os.write(master, b"o\n")
    loop.wait(timeout=30)
    os.close(master)
    assert b"approval needed: run_command is dangerous" in seen and loop.returncode == 0
    assert (tmp_path / "ws" / "proof.txt").read_text() == "approved\n"
    [row] = db_rows(state_dir, "select * from approvals")
    assert row["via"] == "terminal" and row["status"] == "approved" and row["decided_by"].startswith("terminal:")


def test_operator_heads_run_in_auto_without_an_approval(state_dir: Path, tmp_path: Path) -> None:
    # a simple command (COMMAND's redirection would ask since issue 17: only simple commands are auto-approved)
    script = [tool_call("run_command", {"command": "touch proof.txt"}), final_answer("done")]
    with FakeOllama(script) as fake:
        loop = start_loop(fake, tmp_path / "ws", env={"HEARTH_AUTO_COMMANDS": "git, touch"})
        loop.communicate(timeout=30)
    assert loop.returncode == 0 and (tmp_path / "ws" / "proof.txt").exists()
    assert db_rows(state_dir, "select * from approvals") == []
    [tool] = db_rows(state_dir, "select * from steps where kind = 'tool'")
    assert tool["verdict"] == "run" and "auto-approved" in tool["detail"]


def test_sandbox_none_is_warned_about_and_recorded_on_the_run(
    state_dir: Path, tmp_path: Path, scripted: FakeOllama
) -> None:
    loop = start_loop(scripted, tmp_path / "ws", "--mode", "bypass", env={"HEARTH_SANDBOX": "none"})
    out, err = loop.communicate(timeout=30)
    assert loop.returncode == 0
    assert "hearth: warning: HEARTH_SANDBOX=none: run_command runs with no OS sandbox" in err
    [run] = db_rows(state_dir, "select * from runs")
    assert run["sandbox"] == "none"
    [warning] = db_rows(state_dir, "select * from steps where kind = 'warning'")
    assert "unsafe" in warning["detail"]
    assert "sandbox none" in run_cli("hearth", "show", run["id"]).stdout


@pytest.mark.parametrize(
    ("env", "reason"),
    [
        ({"HEARTH_SANDBOX": "docker"}, "HEARTH_SANDBOX must be one of auto, bwrap, landlock, none, got 'docker'"),
        ({"HEARTH_APPROVAL_TIMEOUT_S": "soon"}, "HEARTH_APPROVAL_TIMEOUT_S must be a number of seconds"),
        ({"HEARTH_APPROVAL_WAIT": "soon"}, "HEARTH_APPROVAL_WAIT: 'soon' is not a duration"),
        ({"HEARTH_AUTO_COMMANDS": "git,rm -rf"}, "HEARTH_AUTO_COMMANDS lists program names"),
    ],
    ids=["sandbox", "timeout", "wait", "heads"],
)
def test_bad_settings_are_one_line_errors(state_dir: Path, env: dict[str, str], reason: str) -> None:
    proc = run_cli("hearth-loop", "go", env=env)
    assert proc.returncode == 2 and reason in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
