"""Delegation end to end: a queued run hands work to a child run under walls no wider than its own,
waits holding nothing, and goes on with the child's summary; stopping it stops the child.

Real processes throughout: `hearth spawn --local` and `hearth watch` (the local launcher), `hearth
agent`, `hearth stop`, real SQLite, the fake Ollama recording every request it was sent.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from hearth.audit.store import AuditStore, RunRecord
from hearth.queue.directory import Queue
from hearth.queue.request import Request
from tests.cli_support import start_watch, stop_watch
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, Held, assert_every_request_legal, final_answer, tool_call
from tests.queue_support import rows, wait_for
from tests.web_support import Center

CHILD_GOAL = "CHILD: look at the copied files"
TOOLS = ["delegate", "write_file", "read_file", "list_files"]


def wide_profile(tmp_path: Path) -> None:
    """A profile wider than the caller: bypass mode and run_command, which the caller may not use."""
    home = tmp_path / "config" / "agents" / "wide"
    home.mkdir(parents=True)
    (home / "agent.toml").write_text(
        'mode = "bypass"\nallowed_tools = ["run_command", "list_files", "read_file", "write_file"]\n'
    )


def enqueue(state_dir: Path, run_id: str, goal: str, **fields: Any) -> Queue:
    queue = Queue(state_dir / "queue").ensure()
    queue.enqueue(Request(id=run_id, goal=goal, mode="auto", allowed_tools=TOOLS, **fields))
    return queue


class Roles:
    """Answers as the caller or as its child, by the goal the conversation began with; turn by turn."""

    def __init__(self, caller: list[Any], child: list[Any]) -> None:
        self.turns = {"caller": caller, "child": child}
        self.seen: dict[str, list[dict[str, Any]]] = {"caller": [], "child": []}

    def __call__(self, body: dict[str, Any]) -> Any:
        who = "child" if CHILD_GOAL in body["messages"][1]["content"] else "caller"
        self.seen[who].append(body)
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return self.turns[who][turn]


def run_row(state_dir: Path, run_id: str) -> dict[str, Any]:
    found = rows(state_dir, "select * from runs where id = ?", run_id)
    return found[0] if found else {}


def steps_of(state_dir: Path, run_id: str, kind: str) -> list[dict[str, Any]]:
    return rows(state_dir, "select * from steps where run_id = ? and kind = ? order by seq", run_id, kind)


def test_a_child_under_a_wider_profile_gets_only_the_callers_walls_and_the_caller_goes_on_with_its_summary(
    state_dir: Path, tmp_path: Path, center: Center
) -> None:
    wide_profile(tmp_path)
    enqueue(state_dir, "boss", "BOSS: have a child look at src")
    roles = Roles(
        caller=[
            tool_call("write_file", {"path": "src/a.txt", "content": "alpha"}),
            tool_call("delegate", {"goal": CHILD_GOAL, "profile": "wide", "directory": "src"}),
            final_answer("boss done"),
        ],
        child=[
            tool_call("run_command", {"command": "echo escaped"}),
            tool_call("list_files", {"path": "."}),
            final_answer("the child saw a.txt"),
        ],
    )
    with FakeOllama([roles], repeat_last=True) as fake:
        spawned = run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url}, timeout=180)
    assert spawned.returncode == 0, spawned.stderr + spawned.stdout
    boss, child = run_row(state_dir, "boss"), run_row(state_dir, "boss-d1")
    assert (boss["status"], boss["summary"]) == ("done", "boss done")
    # the child: an ordinary run, linked to its caller, under the profile asked, inside the caller's walls
    assert (child["status"], child["parent_run"], child["link"], child["agent_name"]) == (
        "done",
        "boss",
        "child",
        "wide",
    )
    assert child["mode"] == "auto"  # the profile's bypass, narrowed to the caller's mode
    assert sorted(json.loads(child["allowed_tools"])) == ["list_files", "read_file", "write_file"]
    [denied, listed] = steps_of(state_dir, "boss-d1", "tool")
    assert (denied["tool"], denied["verdict"], denied["ok"]) == ("run_command", "denied", 0)
    assert "a.txt" in listed["output"]  # its workspace is a copy of the caller's src/
    assert all("run_command" not in json.dumps(b["tools"]) for b in roles.seen["child"])
    # the caller waited with no process, then went on with the child's summary, in the data envelope
    assert [json.loads(s["data"])["child"] for s in steps_of(state_dir, "boss", "child")] == ["boss-d1"]
    assert [json.loads(s["data"]).get("child") for s in steps_of(state_dir, "boss", "suspend")] == ["boss-d1"]
    assert [json.loads(s["data"])["cause"] for s in steps_of(state_dir, "boss", "resume")] == ["child"]
    [before, after] = roles.seen["caller"][1:]
    assert after["messages"][: len(before["messages"])] == before["messages"] and after["tools"] == before["tools"]
    result = after["messages"][-1]["content"]
    assert result.startswith("<<data ") and "child run boss-d1 (profile wide) ended done: the child saw a.txt" in result
    assert "mode: profile wide has bypass, the child gets yours, auto" in result
    assert "run_command" in result  # what was narrowed is said
    [delegated] = [s for s in steps_of(state_dir, "boss", "tool") if s["tool"] == "delegate"]
    assert (delegated["verdict"], delegated["ok"]) == ("run", 1)  # one step, completed by the new process
    assert_every_request_legal(fake.requests)
    # linked both ways on the run page, and the child shown as an ordinary run
    assert '<a class="mono" href="/runs/boss-d1">boss-d1</a>' in center.client().get("/runs/boss").text
    assert '<a class="mono" href="/runs/boss">boss</a>' in center.client().get("/runs/boss-d1").text
    listed = json.loads(run_cli("hearth", "runs", "--json").stdout)
    assert {r["id"]: r["status"] for r in listed} == {"boss": "done", "boss-d1": "done"}


def test_a_failed_child_resumes_its_caller_with_the_failure_and_the_caps_hold(state_dir: Path) -> None:
    """At the depth cap the child is not given the tool; past the fan-out cap the call is refused."""
    enqueue(state_dir, "boss", "BOSS: delegate a doomed part", max_iterations=5)  # the child gets the host's 2
    roles = Roles(
        caller=[
            tool_call("delegate", {"goal": CHILD_GOAL}),
            tool_call("delegate", {"goal": "CHILD: once more"}),
            final_answer("boss handled the failure"),
        ],
        child=[tool_call("list_files", {"path": "."}), tool_call("read_file", {"path": "x"})],
    )
    with FakeOllama([roles], repeat_last=True) as fake:
        env = {"OLLAMA_HOST": fake.url, "HEARTH_MAX_ITERATIONS": "2"}
        env |= {"HEARTH_DELEGATE_DEPTH": "1", "HEARTH_DELEGATE_CHILDREN": "1"}
        env |= {"HEARTH_TOOL_SET": "all"}  # the child's profile would give it delegate but for the cap
        spawned = run_cli("hearth", "spawn", "--local", env=env, timeout=180)
    assert spawned.returncode == 0, spawned.stderr
    child = run_row(state_dir, "boss-d1")
    assert child["status"] == "iteration_limit" and "delegate" not in json.loads(child["allowed_tools"])
    assert all("delegate" not in json.dumps(b["tools"]) for b in roles.seen["child"])
    assert run_row(state_dir, "boss")["status"] == "done" and not run_row(state_dir, "boss-d2")
    told = [m["content"] for m in roles.seen["caller"][-1]["messages"] if m["role"] == "tool"]
    assert "child run boss-d1 (profile default) ended iteration_limit" in told[0] and "It did not finish" in told[0]
    assert "delegate: the child is at the depth cap" in told[0]
    assert "has started 1 child runs, the most it may (HEARTH_DELEGATE_CHILDREN=1)" in told[1]


def test_stopping_a_caller_stops_the_child_it_waits_on(state_dir: Path) -> None:
    enqueue(state_dir, "boss", "BOSS: delegate and be stopped")
    release = threading.Event()
    roles = Roles(
        caller=[tool_call("delegate", {"goal": CHILD_GOAL})],
        child=[Held(final_answer("never said"), 1, release)],
    )
    with FakeOllama([roles], repeat_last=True) as fake:
        watch = start_watch({"OLLAMA_HOST": fake.url})
        try:
            wait_for(lambda: roles.seen["child"], what="the child to ask its model", timeout=120)
            assert run_row(state_dir, "boss")["status"] == "waiting"  # no process while its child works
            stopped = run_cli("hearth", "stop", "boss")
            assert stopped.returncode == 0, stopped.stderr
            assert "with it: boss-d1" in stopped.stdout
        finally:
            release.set()
            stop_watch(watch)
    assert run_row(state_dir, "boss")["status"] == "interrupted"
    child = run_row(state_dir, "boss-d1")
    assert child["status"] == "interrupted" and "with boss" in child["error"]


def test_a_caller_whose_process_died_has_its_children_stopped_by_the_next_sweep(state_dir: Path) -> None:
    """Killed (SIGKILL, OOM) where it cannot go on: nobody would wait for its child, so it is stopped."""
    queue = enqueue(state_dir, "boss", "BOSS: killed")
    assert queue.claim("boss.json") is not None
    queue.enqueue(Request(id="boss-d1", goal=CHILD_GOAL, child_of="boss"))
    with AuditStore(state_dir / "audit.db") as audit:
        audit.start_run(RunRecord(id="boss", agent_name="default", model="m", goal="g", mode="auto", source="cli"))
        audit.record_step("boss", "child", detail="boss-d1")  # what its delegate call recorded before queuing
    swept = run_cli("hearth", "spawn", "--local")  # its process is gone: no lock is held
    assert swept.returncode == 0, swept.stderr
    assert run_row(state_dir, "boss")["status"] == "interrupted"
    child = run_row(state_dir, "boss-d1")
    assert child["status"] == "interrupted" and "with boss, whose process was gone" in child["error"]
    assert (queue.root / "failed" / "boss-d1.json").exists()


def test_a_child_spends_from_its_callers_token_cap(state_dir: Path) -> None:
    """Each model call costs 120 tokens (the fake's 100 in, 20 out): of the caller's 300, the child is
    given the 180 left; it spends 240 before its cap stops it, and the caller, whose own 120 are
    already over the 60 left, stops before its next model call."""
    enqueue(state_dir, "boss", "BOSS: share the budget", max_tokens=300)
    roles = Roles(
        caller=[tool_call("delegate", {"goal": CHILD_GOAL}), final_answer("never asked")],
        child=[tool_call("list_files", {"path": "."}), tool_call("read_file", {"path": "x"}), final_answer("no")],
    )
    with FakeOllama([roles], repeat_last=True, tokens=(100, 20)) as fake:
        spawned = run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url}, timeout=180)
    assert spawned.returncode == 0, spawned.stderr
    [body] = rows(state_dir, "select body from requests where id = 'boss-d1'")
    assert json.loads(body["body"])["max_tokens"] == 180
    assert run_row(state_dir, "boss-d1")["status"] == "budget_exceeded"
    assert run_row(state_dir, "boss")["status"] == "budget_exceeded" and len(roles.seen["caller"]) == 1
