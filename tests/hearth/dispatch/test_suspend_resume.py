"""The absent operator: a queued run that waits for a person holds nothing and goes on once decided.

Real processes throughout: `hearth spawn --local` and `hearth watch` (the local launcher), `hearth
agent`, `hearth approve`, the fake Ollama recording every request it was sent.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from pathlib import Path
from typing import Any

from hearth.queue.directory import Queue
from hearth.queue.request import Request
from tests.cli_support import start_watch, stop_watch
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.queue_support import listing, rows, wait_for

ECHO = tool_call("run_command", {"command": "echo approved-and-ran"})
ENV = {"HEARTH_SUSPEND_AFTER_S": "0", "HEARTH_SANDBOX": "none"}


def enqueue(state_dir: Path, run_id: str, **fields: Any) -> Queue:
    queue = Queue(state_dir / "queue").ensure()
    queue.enqueue(Request(id=run_id, goal="say hello with a command", mode="auto", **fields))
    return queue


def run_of(state_dir: Path, run_id: str) -> dict[str, Any]:
    try:
        found = rows(state_dir, "select * from runs where id = ?", run_id)
    except sqlite3.OperationalError:  # the audit is not made yet
        return {}
    return found[0] if found else {}


def kinds(state_dir: Path, run_id: str) -> list[str]:
    return [s["kind"] for s in rows(state_dir, "select kind from steps where run_id = ? order by seq", run_id)]


def descendants(pid: int) -> list[tuple[int, str]]:
    """Every process below `pid` now, with its command line (the process table, read from /proc)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        for child, ppid in parents.items():
            if ppid == parent:
                try:
                    cmdline = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                except OSError:
                    continue
                found.append((child, cmdline))
                frontier.append(child)
    return found


def prefix_identical(before: dict[str, Any], after: dict[str, Any]) -> bool:
    sent = before["messages"]
    return after["messages"][: len(sent)] == sent and after["tools"] == before["tools"]


def test_a_waiting_run_suspends_then_goes_on_once_approved_with_the_same_conversation(state_dir: Path) -> None:
    queue = enqueue(state_dir, "asker")
    with FakeOllama([ECHO, final_answer("said hello")]) as fake:
        env = {"OLLAMA_HOST": fake.url, **ENV}
        first = run_cli("hearth", "spawn", "--local", env=env)
        assert first.returncode == 0, first.stderr
        # the spawner waited for its runs and ended: the run suspended, nothing of it is left
        assert "waiting asker.json" in first.stdout
        assert run_of(state_dir, "asker")["status"] == "waiting"
        assert listing(queue.claimed) == ["asker.json"] and listing(queue.locks) == []
        assert not (state_dir / "state" / "asker.json").exists()
        [pending] = json.loads(run_cli("hearth", "approvals", "--json").stdout)
        assert pending["status"] == "pending" and pending["timeout_s"] == 12 * 3600  # the host's default wait
        shown = run_cli("hearth", "runs", "--json")
        assert [r["status"] for r in json.loads(shown.stdout)] == ["waiting"]

        approved = run_cli("hearth", "approve", pending["id"])
        assert approved.returncode == 0, approved.stderr
        assert "asker.resume" in listing(queue.root)  # the decision woke it
        second = run_cli("hearth", "spawn", "--local", env=env)
        assert second.returncode == 0, second.stderr
        assert "resumed asker" in second.stdout, second.stdout
    run = run_of(state_dir, "asker")
    assert (run["status"], run["summary"]) == ("done", "said hello")
    assert len(fake.requests) == 2 and prefix_identical(fake.requests[0], fake.requests[1])
    assert fake.requests[1]["messages"][-1]["content"].startswith("approved-and-ran")
    steps = kinds(state_dir, "asker")
    assert steps.count("model") == 2 and steps.count("tool") == 1  # no step recorded twice
    assert steps.index("suspend") < steps.index("resume") < steps.index("approval")
    [tool] = rows(state_dir, "select * from steps where run_id = 'asker' and kind = 'tool'")
    assert (tool["verdict"], tool["ok"]) == ("approved", 1)
    [decided] = rows(state_dir, "select * from approvals")
    assert decided["status"] == "approved" and decided["decided_by"].startswith("cli:")
    assert listing(queue.claimed) == [] and listing(queue.root) == ["claimed", "failed", "locks", "rejected"]


def test_a_denied_call_goes_on_and_the_model_reads_the_denial(state_dir: Path) -> None:
    enqueue(state_dir, "refused")
    with FakeOllama([ECHO, final_answer("could not")]) as fake:
        env = {"OLLAMA_HOST": fake.url, **ENV}
        run_cli("hearth", "spawn", "--local", env=env)
        [pending] = json.loads(run_cli("hearth", "approvals", "--json").stdout)
        assert run_cli("hearth", "deny", pending["id"], "--reason", "not today").returncode == 0
        run_cli("hearth", "spawn", "--local", env=env)
    assert run_of(state_dir, "refused")["status"] == "done"
    told = fake.requests[1]["messages"][-1]["content"]
    assert "not today" in told and prefix_identical(fake.requests[0], fake.requests[1])


def test_a_request_s_approval_wait_sets_how_long_it_waits(state_dir: Path) -> None:
    enqueue(state_dir, "brief", approval_wait="90m")
    with FakeOllama([ECHO]) as fake:
        run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url, **ENV})
    [pending] = json.loads(run_cli("hearth", "approvals", "--json").stdout)
    assert pending["timeout_s"] == 5400


def test_stop_ends_a_waiting_run_and_cancels_its_approval(state_dir: Path) -> None:
    queue = enqueue(state_dir, "halted")
    with FakeOllama([ECHO]) as fake:
        run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url, **ENV})
    assert run_of(state_dir, "halted")["status"] == "waiting"
    stopped = run_cli("hearth", "stop", "halted")
    assert stopped.returncode == 0, stopped.stderr
    run = run_of(state_dir, "halted")
    assert run["status"] == "interrupted" and "stopped by" in run["error"]
    [approval] = rows(state_dir, "select * from approvals")
    assert approval["status"] == "cancelled"
    assert listing(queue.failed) == ["halted.json", "halted.json.error.json"]


def test_under_watch_a_waiting_run_has_no_process_and_an_approval_resumes_it(state_dir: Path) -> None:
    enqueue(state_dir, "watched")
    with FakeOllama([ECHO, final_answer("done waiting")]) as fake:
        watch = start_watch({"OLLAMA_HOST": fake.url, **ENV})
        try:
            wait_for(lambda: run_of(state_dir, "watched").get("status") == "waiting", what="the run to suspend")
            server = [pid for pid, cmd in descendants(watch.pid) if "forkserver" in cmd]
            runs = [p for p in descendants(watch.pid) if p[0] not in server and "resource_tracker" not in p[1]]
            assert runs == [], runs  # no process of the run: only the launcher's fork server
            [pending] = json.loads(run_cli("hearth", "approvals", "--json").stdout)
            assert run_cli("hearth", "approve", pending["id"]).returncode == 0
            wait_for(lambda: run_of(state_dir, "watched").get("status") == "done", what="the run to go on and end")
        finally:
            watch.send_signal(signal.SIGTERM)
            stop_watch(watch)
    assert len(fake.requests) == 2 and prefix_identical(fake.requests[0], fake.requests[1])
