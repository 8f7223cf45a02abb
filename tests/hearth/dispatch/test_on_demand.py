"""The on-demand path end to end, as real processes against the fake Ollama:
`hearth enqueue` -> `hearth spawn --local` -> `hearth agent` -> audit rows; races; SIGKILL mid-run.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils

from hearth.queue.directory import Queue
from hearth.queue.request import Request
from hearth.run.suspend import AGAIN
from tests.cli_support import start_cli
from tests.conftest import ROOT, run_cli
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.queue_support import Gate, drop, listing, rows, runs_by_status, wait_for

SPEC = ROOT / "queue-spec" / "examples"
MODELS = ("qwen2.5-coder", "qwen2.5-coder:latest", "qwen2.5-coder:7b")


@pytest.fixture(autouse=True)
def profiles(state_dir: Path) -> None:
    """The agents these requests and the spec's examples name exist as profiles (unknown ones are refused)."""
    for name in ("scout", "writer", "builder"):
        (state_dir.parent / "config" / "agents" / name).mkdir(parents=True)


def queue_is_empty(state_dir: Path) -> bool:
    queue = state_dir / "queue"
    return all(listing(queue / d) == [] for d in ("claimed", "failed", "rejected", "locks")) and listing(queue) == [
        "claimed",
        "failed",
        "locks",
        "rejected",
    ]


def test_enqueue_then_spawn_local_runs_the_request_and_records_it(state_dir: Path) -> None:
    with FakeOllama([tool_call("list_files", {}), final_answer("The workspace is empty.")]) as fake:
        env = {"OLLAMA_HOST": fake.url}
        queued = run_cli(
            "hearth",
            "enqueue",
            "How many files are there?",
            "--tools",
            "list_files,read_file",
            "--requested-by",
            "ana",
            env=env,
        )
        assert queued.returncode == 0, queued.stderr
        request_id = queued.stdout.strip()
        spawned = run_cli("hearth", "spawn", "--local", env=env)
    assert spawned.returncode == 0, spawned.stderr
    assert f"started {request_id}" in spawned.stdout and f"ended {request_id}: exit 0" in spawned.stdout
    [run] = rows(state_dir, "select * from runs")
    assert (run["id"], run["status"], run["source"], run["requested_by"]) == (request_id, "done", "cli", "ana")
    assert run["summary"] == "The workspace is empty." and run["workspace"] == str(state_dir / "agents" / request_id)
    [accepted] = rows(state_dir, "select * from requests")
    assert json.loads(accepted["body"])["allowed_tools"] == ["list_files", "read_file"]
    assert accepted["shape"] == "v1" and len(accepted["sha256"]) == 64
    assert sorted(t["function"]["name"] for t in fake.requests[0]["tools"]) == ["list_files", "read_file"]
    assert queue_is_empty(state_dir)  # removed only after the final status was recorded
    log = (state_dir / "logs" / f"{request_id}.log").read_text().splitlines()
    assert log[0].startswith(f"== run {request_id} ") and log[1].startswith("[1] model replied")
    plain = sqlite_utils.Database(state_dir / "audit.db")  # what Datasette and sqlite-utils see
    assert {"runs", "steps", "requests", "rejections"} <= set(plain.table_names())
    assert plain["requests"].get(request_id)["requested_by"] == "ana"


def test_the_request_s_model_mode_agent_and_iteration_cap_reach_the_run(state_dir: Path) -> None:
    with FakeOllama([tool_call("list_files", {})], repeat_last=True) as fake:
        env = {"OLLAMA_HOST": fake.url}
        run_cli(
            "hearth",
            "enqueue",
            "look around",
            "--id",
            "scout-1",
            "--mode",
            "plan",
            "--max-iterations",
            "2",
            "--model",
            "qwen2.5-coder:latest",
            "--agent-name",
            "scout",
            env=env,
        )
        assert run_cli("hearth", "spawn", "--local", env=env).returncode == 0
    [run] = rows(state_dir, "select * from runs")
    assert (run["status"], run["iterations"], run["mode"], run["agent_name"]) == ("iteration_limit", 2, "plan", "scout")
    assert {body["model"] for body in fake.requests} == {"qwen2.5-coder:latest"} and len(fake.requests) == 2
    shown = {t["function"]["name"] for t in fake.requests[0]["tools"]}
    assert "write_file" not in shown and "read_file" in shown  # plan mode: read-only tools only


def test_every_example_dropped_in_the_queue_ends_where_its_label_says(state_dir: Path) -> None:
    queue = state_dir / "queue"
    queue.mkdir(parents=True)
    for path in [*SPEC.glob("valid/*.json"), *SPEC.glob("invalid/*.json")]:
        shutil.copyfile(path, queue / path.name)
    with FakeOllama([answer_as_asked], repeat_last=True, models=MODELS) as fake:
        spawned = run_cli("hearth", "spawn", "--local", "--concurrency", "4", env={"OLLAMA_HOST": fake.url})
    assert spawned.returncode == 0, spawned.stderr
    waits = {"research"}  # a research run's plan waits for a person, its process ended
    valid = sorted(p.stem for p in SPEC.glob("valid/*.json") if p.stem not in waits)
    top = "parent_run is null"  # a marathon's legs, a swarm's children and synthesis are linked runs
    assert sorted(r["id"] for r in rows(state_dir, f"select id from runs where status = 'done' and {top}")) == valid
    assert {r["id"] for r in rows(state_dir, "select id from runs where status = 'waiting'")} == waits
    assert rows(state_dir, "select tool, status from approvals where run_id = 'research'") == [
        {"tool": "research_plan", "status": "pending"}
    ]
    assert {r["status"] for r in rows(state_dir, f"select status from runs where not {top}")} == {"done"}
    for path in SPEC.glob("invalid/*.json"):
        record = json.loads((queue / "rejected" / f"{path.name}.error.json").read_text())
        assert record["reason"] == path.with_name(path.stem + ".expected-error.txt").read_text().rstrip("\n")
        [row] = rows(state_dir, "select * from rejections where file = ?", path.name)
        assert row["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    counted = rows(state_dir, f"select status, count(*) as n from runs where {top} group by status")
    assert {r["status"]: r["n"] for r in counted} == {
        "done": len(valid),
        "waiting": len(waits),
        "rejected": len(list(SPEC.glob("invalid/*.json"))),
    }
    assert listing(queue / "claimed") == [f"{name}.json" for name in sorted(waits)]  # kept until it goes on
    assert listing(queue / "failed") == []


def answer_as_asked(body: dict[str, Any]) -> dict[str, Any]:
    """ok, as a run's answer; as a marathon's judge, done; as a swarm's planner, two sub-goals; as a
    research run's planner, one sub-question (the plan then waits for a person)."""
    system = body["messages"][0]["content"]
    if system.startswith("You plan web research"):
        return final_answer(
            json.dumps({"sub_questions": [{"question": "What changed?", "queries": ["python 3.13 gc"]}]})
        )
    if system.startswith("You judge whether"):
        return final_answer(json.dumps({"done": True, "reason": "ok", "next": ""}))
    if system.startswith("You split a goal"):
        return final_answer(json.dumps(["the first half", "the second half"]))
    return final_answer("ok")


def test_two_spawners_racing_over_100_requests_start_each_exactly_once(state_dir: Path) -> None:
    queue = Queue(state_dir / "queue").ensure()
    for i in range(100):
        queue.enqueue(Request(id=f"race-{i:03}", goal=f"goal number {i}"))
    gate = Gate()  # held shut until both spawners have their three runs going: a real race
    with FakeOllama([gate], repeat_last=True) as fake:
        env = {"OLLAMA_HOST": fake.url}
        spawners = [start_cli("spawn", "--local", "--json", "--concurrency", "3", env=env) for _ in range(2)]
        try:
            wait_for(lambda: runs_by_status(state_dir).get("running") == 6, what="both spawners to be running")
        finally:
            gate.opened.set()
        outputs = [proc.communicate(timeout=120) for proc in spawners]
    events = [[json.loads(line) for line in out.splitlines()] for out, _ in outputs]
    started = [{e["name"] for e in part if e["event"] == "started"} for part in events]
    assert all(proc.returncode == 0 for proc in spawners), [err for _, err in outputs]
    assert not started[0] & started[1] and len(started[0] | started[1]) == 100
    assert len(started[0]) >= 3 and len(started[1]) >= 3
    assert runs_by_status(state_dir) == {"done": 100}
    goals = [body["messages"][1]["content"] for body in fake.requests]
    assert sorted(goals) == sorted(f"goal number {i}" for i in range(100))  # each goal sent once
    assert queue_is_empty(state_dir)


def test_a_run_killed_mid_way_goes_on_once_and_killed_again_is_interrupted_with_its_request_kept(
    state_dir: Path,
) -> None:
    gate = Gate()
    with FakeOllama([gate], repeat_last=True) as fake:
        env = {"OLLAMA_HOST": fake.url}
        run_cli("hearth", "enqueue", "a long job", "--id", "doomed", env=env)
        spawner = start_cli("spawn", "--local", env=env)
        live = state_dir / "state" / "doomed.json"
        try:
            assert gate.reached.wait(30), "the run never reached the model"
            first = json.loads(live.read_text())["pid"]
            os.kill(first, signal.SIGKILL)
            # the spawner reaps it and starts it again: a new process of the same run, at the model again
            again = wait_for(
                lambda: (
                    live.exists()
                    and json.loads(live.read_text() or "{}").get("state") == "thinking"
                    and json.loads(live.read_text())["pid"] != first
                    and json.loads(live.read_text())["pid"]
                ),
                what="the run to go on in a new process",
            )
            os.kill(again, signal.SIGKILL)
            out, err = spawner.communicate(timeout=30)
        finally:
            gate.opened.set()
    assert spawner.returncode == 0, err
    assert "resumed doomed" in out and "settled doomed.json: interrupted" in out
    [run] = rows(state_dir, "select * from runs")
    assert (run["status"], run["error"]) == ("interrupted", AGAIN)
    failed = state_dir / "queue" / "failed"
    assert json.loads((failed / "doomed.json").read_text())["goal"] == "a long job"  # the request, kept whole
    assert json.loads((failed / "doomed.json.error.json").read_text())["reason"] == AGAIN
    assert not live.exists()  # its live state died with it; the audit says how
    assert listing(state_dir / "queue" / "claimed") == [] and listing(state_dir / "queue" / "locks") == []


def test_a_run_killed_with_no_spawner_around_is_found_by_the_next_sweep_and_a_live_one_is_not(state_dir: Path) -> None:
    queue = Queue(state_dir / "queue").ensure()
    queue.enqueue(Request(id="orphan", goal="g"))
    queue.claim("orphan.json")  # as the spawner does before `systemctl start hearth-agent@orphan`
    gate = Gate()
    with FakeOllama([gate], repeat_last=True) as fake:
        env = {"OLLAMA_HOST": fake.url}
        agent = start_cli("agent", "orphan", env=env)
        try:
            assert gate.reached.wait(30)
            sweep = run_cli("hearth", "spawn", "--local", env=env)
            assert sweep.returncode == 0 and "settled" not in sweep.stdout  # alive: its lock is held
            assert listing(queue.claimed) == ["orphan.json"]
            agent.send_signal(signal.SIGKILL)
            agent.wait(30)
        finally:
            gate.opened.set()
        sweep = run_cli("hearth", "spawn", "--local", env=env)
    assert "resumed orphan" in sweep.stdout  # gone, found by the sweep, and it goes on from where it was
    assert runs_by_status(state_dir) == {"done": 1}
    assert listing(queue.claimed) == [] and listing(queue.failed) == []


def test_an_approval_left_waiting_by_a_killed_run_is_the_one_it_goes_on_with(state_dir: Path) -> None:
    queue = Queue(state_dir / "queue").ensure()
    queue.enqueue(Request(id="asker", goal="g", mode="auto"))
    queue.claim("asker.json")
    with FakeOllama([tool_call("run_command", {"command": "echo hi"}), final_answer("said hi")]) as fake:
        env = {"OLLAMA_HOST": fake.url, "HEARTH_SANDBOX": "none"}
        agent = start_cli("agent", "asker", env=env)
        try:
            waiting = wait_for(
                lambda: json.loads(run_cli("hearth", "approvals", "--json").stdout or "[]"),
                what="the run to ask for an approval",
            )
        finally:
            agent.send_signal(signal.SIGKILL)
            agent.wait(30)
        sweep = run_cli("hearth", "spawn", "--local", env={**env, "HEARTH_SUSPEND_AFTER_S": "0"})
        assert "resumed asker" in sweep.stdout and "waiting asker.json" in sweep.stdout
        [row] = rows(state_dir, "select * from approvals")
        assert (row["id"], row["status"]) == (waiting[0]["id"], "pending")  # still the question, asked once
        assert run_cli("hearth", "approve", row["id"]).returncode == 0
        run_cli("hearth", "spawn", "--local", env=env)
    assert runs_by_status(state_dir) == {"done": 1} and len(fake.requests) == 2
    assert rows(state_dir, "select count(*) as n from steps where kind = 'tool'")[0]["n"] == 1


def test_the_agent_refuses_a_request_that_is_already_running(state_dir: Path) -> None:
    queue = Queue(state_dir / "queue").ensure()
    queue.enqueue(Request(id="busy", goal="g"))
    queue.claim("busy.json")
    gate = Gate()
    with FakeOllama([gate], repeat_last=True) as fake:
        env = {"OLLAMA_HOST": fake.url}
        first = start_cli("agent", "busy", env=env)
        try:
            assert gate.reached.wait(30)
            second = run_cli("hearth", "agent", "busy", env=env)
        finally:
            gate.opened.set()
        first.communicate(timeout=30)
    assert second.returncode == 2
    assert second.stderr.strip() == f"hearth agent: request busy is already running (pid {first.pid})"
    assert first.returncode == 0 and runs_by_status(state_dir) == {"done": 1} and len(fake.requests) == 1


def test_the_agent_checks_the_claimed_file_again_and_rejects_a_tampered_one(state_dir: Path) -> None:
    queue = Queue(state_dir / "queue").ensure()
    drop(queue.claimed, "tampered.json", {"id": "tampered", "goal": "g", "mode": "root"})
    proc = run_cli("hearth", "agent", "tampered")
    assert proc.returncode == 2
    assert json.loads((queue.rejected / "tampered.json.error.json").read_text())["reason"] == (
        "mode must be 'plan', 'auto' or 'bypass', got \"root\""
    )
    assert runs_by_status(state_dir) == {"rejected": 1}


def test_the_agent_never_runs_a_request_twice(state_dir: Path, fake: FakeOllama) -> None:
    queue = Queue(state_dir / "queue").ensure()
    fake.add(final_answer("once"))
    queue.enqueue(Request(id="once", goal="g"))
    queue.claim("once.json")
    assert run_cli("hearth", "agent", "once", env={"OLLAMA_HOST": fake.url}).returncode == 0
    queue.enqueue(Request(id="once", goal="g"))
    queue.claim("once.json")  # claimed again behind the spawner's back
    again = run_cli("hearth", "agent", "once", env={"OLLAMA_HOST": fake.url})
    assert again.returncode == 2 and "already ran" in again.stderr
    assert len(fake.requests) == 1 and runs_by_status(state_dir) == {"done": 1}


def test_the_agent_says_so_when_nothing_is_claimed_under_that_id(state_dir: Path) -> None:
    cases = (("nothing", "no claimed request nothing in"), ("../etc", "'../etc' is not a request id"))
    for request_id, message in cases:
        proc = run_cli("hearth", "agent", request_id)
        assert proc.returncode == 2 and message in proc.stderr
