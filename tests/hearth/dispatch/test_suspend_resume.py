"""The absent operator: a queued run that waits for a person holds nothing and goes on once decided.

Real processes throughout: `hearth spawn --local` and `hearth watch` (the local launcher), `hearth
agent`, `hearth approve`, the fake Ollama recording every request it was sent.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from agent.loop import INVALID_CALL
from hearth.audit.store import AuditStore, RunRecord
from hearth.dispatch.launchers.local import LocalLauncher
from hearth.dispatch.spawner import Spawner
from hearth.queue.directory import Queue
from hearth.queue.request import Request
from hearth.settings import Settings
from tests.cli_support import start_watch, stop_watch
from tests.conftest import ROOT, run_cli
from tests.fake_ollama import FakeOllama, assert_every_request_legal, final_answer, tool_call
from tests.queue_support import listing, rows, wait_for
from tests.web_support import Center

ECHO = tool_call("run_command", {"command": "echo approved-and-ran"})
ENV = {"HEARTH_SUSPEND_AFTER_S": "0", "HEARTH_SANDBOX": "none"}


def enqueue(state_dir: Path, run_id: str, **fields: Any) -> Queue:
    queue = Queue(state_dir / "queue").ensure()
    queue.enqueue(Request(id=run_id, goal="say hello with a command", **{"mode": "auto", **fields}))
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
        [live] = json.loads(run_cli("hearth", "state", "--json").stdout)["active"]
        assert (live["id"], live["state"], live["alive"]) == ("asker", "waiting", False)

        approved = run_cli("hearth", "approve", pending["id"])
        assert approved.returncode == 0, approved.stderr
        assert "asker.resume" in listing(queue.root)  # the decision woke it
        second = run_cli("hearth", "spawn", "--local", env=env)
        assert second.returncode == 0, second.stderr
        assert "resumed asker" in second.stdout, second.stdout
    run = run_of(state_dir, "asker")
    assert (run["status"], run["summary"]) == ("done", "said hello")
    assert len(fake.requests) == 2 and prefix_identical(fake.requests[0], fake.requests[1])
    assert_every_request_legal(fake.requests)
    assert fake.requests[1]["messages"][-1]["content"].startswith("approved-and-ran")
    steps = kinds(state_dir, "asker")
    assert steps.count("model") == 2 and steps.count("tool") == 1  # no step recorded twice
    assert steps.index("suspend") < steps.index("resume") < steps.index("approval")
    [tool] = rows(state_dir, "select * from steps where run_id = 'asker' and kind = 'tool'")
    assert (tool["verdict"], tool["ok"]) == ("approved", 1)
    [decided] = rows(state_dir, "select * from approvals")
    assert decided["status"] == "approved" and decided["decided_by"].startswith("cli:")
    assert listing(queue.claimed) == [] and listing(queue.root) == ["claimed", "failed", "locks", "rejected"]


def test_a_resumed_runs_steps_read_in_the_order_they_happened(state_dir: Path, center: Center) -> None:
    """The call ran after the suspend, the resume and the approval: `hearth show` and the run page say so."""
    enqueue(state_dir, "asker")
    with FakeOllama([ECHO, final_answer("said hello")]) as fake:
        env = {"OLLAMA_HOST": fake.url, **ENV}
        assert run_cli("hearth", "spawn", "--local", env=env).returncode == 0
        [pending] = json.loads(run_cli("hearth", "approvals", "--json").stdout)
        assert run_cli("hearth", "approve", pending["id"]).returncode == 0
        assert run_cli("hearth", "spawn", "--local", env=env).returncode == 0
    assert run_of(state_dir, "asker")["status"] == "done"
    [approval] = rows(state_dir, "select iteration from steps where run_id = 'asker' and kind = 'approval'")
    assert approval["iteration"] == 1  # the iteration it decided, though its process had not begun one
    shown = run_cli("hearth", "show", "asker").stdout
    happened = ["] suspend ", "] resume ", "] approval run_command", "] tool run_command", "] model"]
    at = [shown.index(marker) for marker in happened[:4]] + [shown.rindex(happened[4])]
    assert at == sorted(at), shown
    page = center.client().get("/runs/asker").text
    order = re.findall(r'<li class="step kind-(\w+)"', page)
    assert order[order.index("suspend") :] == ["suspend", "resume", "approval", "tool", "model"], order


HOLDER = """
import sys
from hearth.run.liveness import hold_run
from hearth.settings import Settings
with hold_run(Settings.from_env(), sys.argv[1]):
    print("held", flush=True)
    sys.stdin.read()
"""


def test_a_suspending_run_whose_process_has_not_ended_yet_is_shown_waiting(state_dir: Path) -> None:
    """Its audit row says `waiting` and its state file is gone, while its process still holds its lock
    for a moment: the live map (the run page's pill, hearth state) says waiting, never `starting`."""
    queue = enqueue(state_dir, "asker")
    assert queue.claim("asker.json") is not None
    with AuditStore(state_dir / "audit.db") as audit:
        audit.start_run(RunRecord(id="asker", agent_name="default", model="m", goal="g", mode="auto", source="cli"))
        audit.update_run("asker", status="waiting")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, "asker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        [live] = json.loads(run_cli("hearth", "state", "--json").stdout)["active"]
    finally:
        holder.communicate("", timeout=30)
    assert (live["id"], live["state"], live["alive"]) == ("asker", "waiting", True)


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

            def others() -> list[tuple[int, str]]:
                below = descendants(watch.pid)
                server = [pid for pid, cmd in below if "forkserver" in cmd]
                return [p for p in below if p[0] not in server and "resource_tracker" not in p[1]]

            # the run's process exits once it has recorded `waiting`, and the launcher reaps it:
            # then nothing of it is left, only the launcher's fork server
            wait_for(lambda: others() == [], what="the suspended run's process to be gone")
            [pending] = json.loads(run_cli("hearth", "approvals", "--json").stdout)
            assert run_cli("hearth", "approve", pending["id"]).returncode == 0
            wait_for(lambda: run_of(state_dir, "watched").get("status") == "done", what="the run to go on and end")
        finally:
            watch.send_signal(signal.SIGTERM)
            stop_watch(watch)
    assert len(fake.requests) == 2 and prefix_identical(fake.requests[0], fake.requests[1])


# -- runs that survive a restart ------------------------------------------------------------------


class Blocked:
    """A model reply that never comes: the run is held inside the model's answer until killed."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        self.bodies.append(body)
        self.reached.set()
        time.sleep(30)  # the server thread outlives the killed client; its answer goes nowhere
        return final_answer("nobody reads this")


def claimed(state_dir: Path, run_id: str, **fields: Any) -> Queue:
    queue = enqueue(state_dir, run_id, **fields)
    queue.claim(f"{run_id}.json")
    return queue


def kill(agent: subprocess.Popen[str]) -> None:
    """SIGKILL the run's process and everything in its process group (its commands too)."""
    try:
        os.killpg(agent.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    agent.wait(30)


def start_agent(run_id: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "hearth.cli.main", "agent", run_id],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
        start_new_session=True,  # its own process group: the kill takes its commands with it
    )


def test_killed_while_the_model_answers_the_run_goes_on_once_and_asks_the_same_question(state_dir: Path) -> None:
    queue = claimed(state_dir, "answering")
    blocked = Blocked()
    with FakeOllama([tool_call("list_files", {}), blocked, final_answer("listed")]) as fake:
        env = {"OLLAMA_HOST": fake.url, **ENV}
        agent = start_agent("answering", env)
        assert blocked.reached.wait(60)
        kill(agent)
        assert run_of(state_dir, "answering")["status"] == "running"  # the process is gone, the row does not know
        sweep = run_cli("hearth", "spawn", "--local", env=env)
        assert "resumed answering" in sweep.stdout, sweep.stdout + sweep.stderr
    run = run_of(state_dir, "answering")
    assert (run["status"], run["summary"]) == ("done", "listed")
    asked_again = fake.requests[-1]
    assert asked_again["messages"] == blocked.bodies[0]["messages"]  # the same question, byte for byte
    steps = kinds(state_dir, "answering")
    assert steps.count("model") == 2 and steps.count("tool") == 1 and steps.count("resume") == 1
    [resume] = rows(state_dir, "select * from steps where run_id = 'answering' and kind = 'resume'")
    assert json.loads(resume["data"])["cause"] == "restart" and "iteration 1" in resume["detail"]
    assert listing(queue.claimed) == []


def test_killed_while_a_command_runs_the_call_is_not_run_again_and_the_model_is_told(state_dir: Path) -> None:
    claimed(state_dir, "commanding", mode="bypass")
    marker = state_dir / "agents" / "commanding" / "ran-once"
    command = tool_call("run_command", {"command": "touch ran-once; sleep 60"})
    with FakeOllama([command, final_answer("checked the workspace")]) as fake:
        env = {"OLLAMA_HOST": fake.url, **ENV}
        agent = start_agent("commanding", env)
        wait_for(marker.exists, timeout=60, what="the command to start")
        kill(agent)
        marker.unlink()
        sweep = run_cli("hearth", "spawn", "--local", env=env)
        assert "resumed commanding" in sweep.stdout, sweep.stdout + sweep.stderr
    assert run_of(state_dir, "commanding")["status"] == "done"
    assert not marker.exists()  # not run again blindly
    told = fake.requests[-1]["messages"][-1]
    assert told["role"] == "tool" and "outcome of this call is unknown" in told["content"]
    [tool] = rows(state_dir, "select * from steps where run_id = 'commanding' and kind = 'tool'")
    assert tool["verdict"] == "unknown" and "unknown" in tool["output"]
    assert kinds(state_dir, "commanding").count("model") == 2


def test_killed_between_steps_the_kept_result_is_not_asked_for_again(state_dir: Path) -> None:
    claimed(state_dir, "between")
    blocked = Blocked()
    (state_dir.parent / "seen.txt").write_text("x")
    with FakeOllama([tool_call("list_files", {}), tool_call("list_files", {"path": "."}), blocked]) as fake:
        env = {"OLLAMA_HOST": fake.url, **ENV}
        agent = start_agent("between", env)
        assert blocked.reached.wait(60)  # both tools ran and were kept; the next reply is awaited
        kill(agent)
        fake.add(final_answer("two listings"))
        run_cli("hearth", "spawn", "--local", env=env)
    assert run_of(state_dir, "between")["status"] == "done"
    assert fake.requests[-1]["messages"] == blocked.bodies[0]["messages"]
    steps = kinds(state_dir, "between")
    assert steps.count("tool") == 2 and steps.count("model") == 3


def test_killed_after_a_nudge_the_run_goes_on_from_the_nudge_with_no_user_message_made_up(state_dir: Path) -> None:
    claimed(state_dir, "nudged")
    blocked = Blocked()
    with FakeOllama([{"content": ""}, {"content": ""}, blocked]) as fake:  # empty, and empty again when asked again
        env = {"OLLAMA_HOST": fake.url, **ENV}
        agent = start_agent("nudged", env)
        assert blocked.reached.wait(60)  # the nudge was kept; the next reply is awaited
        kill(agent)
        fake.add(final_answer("nothing to do"))
        run_cli("hearth", "spawn", "--local", env=env)
    assert run_of(state_dir, "nudged")["status"] == "done"
    resumed = fake.requests[-1]["messages"]
    assert resumed == blocked.bodies[0]["messages"] and resumed[-1]["tool_name"] == INVALID_CALL
    assert_every_request_legal(fake.requests)
    assert kinds(state_dir, "nudged").count("nudge") == 1


def test_a_run_that_dies_again_after_going_on_once_is_settled_interrupted_saying_so(state_dir: Path) -> None:
    queue = claimed(state_dir, "twice")
    first, second = Blocked(), Blocked()
    with FakeOllama([first, second]) as fake:
        env = {"OLLAMA_HOST": fake.url, **ENV}
        agent = start_agent("twice", env)
        assert first.reached.wait(60)
        kill(agent)
        agent = start_agent("twice", env)  # what the sweep starts: the run goes on, once
        assert second.reached.wait(60)
        kill(agent)
        sweep = run_cli("hearth", "spawn", "--local", env=env)
    assert "settled twice.json: interrupted" in sweep.stdout
    run = run_of(state_dir, "twice")
    assert run["status"] == "interrupted" and "not resumed a second time" in run["error"]
    assert listing(queue.failed) == ["twice.json", "twice.json.error.json"]
    assert len(fake.requests) == 2


def test_pause_holds_a_decided_run_from_going_on_until_hearth_is_resumed(state_dir: Path) -> None:
    enqueue(state_dir, "held")
    with FakeOllama([ECHO, final_answer("went on after the pause")]) as fake:
        env = {"OLLAMA_HOST": fake.url, **ENV}
        run_cli("hearth", "spawn", "--local", env=env)
        [pending] = json.loads(run_cli("hearth", "approvals", "--json").stdout)
        assert run_cli("hearth", "pause", "--reason", "maintenance").returncode == 0
        assert run_cli("hearth", "approve", pending["id"]).returncode == 0
        seen: list[tuple[str, str, str]] = []
        settings = Settings.from_env({**os.environ, **env})
        with Spawner(settings, LocalLauncher(settings), report=lambda *said: seen.append(said)) as spawner:
            spawner.sweep()
            step = spawner.drain()
        assert step.paused and ("paused", "held.resume") in [(what, name) for what, name, _ in seen]
        assert run_of(state_dir, "held")["status"] == "waiting" and len(fake.requests) == 1
        assert run_cli("hearth", "resume").returncode == 0
        run_cli("hearth", "spawn", "--local", env=env)
    assert run_of(state_dir, "held")["status"] == "done" and len(fake.requests) == 2


def test_a_resumed_run_counts_its_earlier_tokens_once_against_the_daily_budget(state_dir: Path) -> None:
    # 100 + 20 tokens a turn: a day of 250 allows a third turn after two (240) and stops the fourth,
    # whichever process makes them; counted twice after the resume (480), it would stop at the third
    enqueue(state_dir, "capped")
    with FakeOllama([tool_call("list_files", {}), ECHO, tool_call("list_files", {}), final_answer("x")]) as fake:
        env = {"OLLAMA_HOST": fake.url, **ENV, "HEARTH_DAILY_TOKENS": "250"}
        run_cli("hearth", "spawn", "--local", env=env)
        [pending] = json.loads(run_cli("hearth", "approvals", "--json").stdout)
        run_cli("hearth", "approve", pending["id"])
        run_cli("hearth", "spawn", "--local", env=env)
    run = run_of(state_dir, "capped")
    assert run["status"] == "budget_exceeded" and "250" in run["error"], run["error"]
    assert len(fake.requests) == 3 and (run["tokens_in"], run["tokens_out"]) == (300, 60)
