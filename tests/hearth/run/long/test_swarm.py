"""Swarms as real processes against one fake Ollama that plays the planner, the children and the
synthesis: `hearth enqueue --swarm` -> `hearth spawn --local` -> children through the same queue."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from hearth.dispatch.stop import stop_run
from hearth.settings import Settings
from tests.cli_support import start_cli
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, assert_every_request_legal, final_answer, tool_call
from tests.queue_support import listing, rows, wait_for

GOAL = "Write the three parts of the report: a.txt, b.txt and c.txt."
PLAN = ["Write part A into a.txt.", "Write part B into b.txt.", "Write part C into c.txt."]


def role(body: dict[str, Any]) -> str:
    system, first = body["messages"][0]["content"], body["messages"][1]["content"]
    if system.startswith("You split a goal"):
        return "planner"
    if first.startswith("## Swarm "):
        return "synthesis"
    return next((p for p in PLAN if p in first), "other")


class Script:
    """The fake's one script item, for every request: it answers by who is asking."""

    def __init__(self, *, plan: str = json.dumps(PLAN), children: int = 3) -> None:
        self.plan = plan
        self.started = threading.Barrier(children, timeout=30)  # every child in flight at once
        self.hold = threading.Event()
        self.hold.set()
        self.lock = threading.Lock()
        self.seen: dict[str, list[dict[str, Any]]] = {}
        self.met: set[str] = set()

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        who = role(body)
        with self.lock:
            self.seen.setdefault(who, []).append(body)
        if who == "planner":
            return final_answer(self.plan)
        if who == "synthesis":
            return final_answer("Merged parts A and B; part C failed.")
        if len(body["messages"]) == 2 and who not in self.met:  # a child's first turn, not its re-ask
            self.met.add(who)
            self.started.wait()
            self.hold.wait(60)
        if who == PLAN[2]:
            return final_answer("")  # three empty replies: the child fails
        if len(body["messages"]) == 2:
            name = "a.txt" if who == PLAN[0] else "b.txt"
            return tool_call("write_file", {"path": name, "content": f"{who}\n"})
        return final_answer(f"Done: {who}")


def swarm(state_dir: Path, fake: FakeOllama, *extra: str) -> None:
    queued = run_cli("hearth", "enqueue", GOAL, "--id", "sw", "--swarm", "3", *extra)
    assert queued.returncode == 0, queued.stderr


def test_a_swarm_of_three_runs_side_by_side_and_its_synthesis_sees_all_three(state_dir: Path) -> None:
    script = Script()
    with FakeOllama([script], repeat_last=True) as fake:
        swarm(state_dir, fake)
        # three slots: the waiting swarm holds none, or its three children could not all start
        spawned = run_cli(
            "hearth", "spawn", "--local", "--concurrency", "3", env={"OLLAMA_HOST": fake.url}, timeout=120
        )
    assert spawned.returncode == 0, spawned.stderr
    assert_every_request_legal(fake.requests)  # the planner, each child (the third nudged), the synthesis
    [parent] = rows(state_dir, "select * from runs where id = 'sw'")
    assert (parent["kind"], parent["status"]) == ("swarm", "done")
    children = rows(state_dir, "select * from runs where parent_run = 'sw' and link = 'child' order by id")
    assert [(c["id"], c["status"]) for c in children] == [("sw-w1", "done"), ("sw-w2", "done"), ("sw-w3", "failed")]
    latest_start, earliest_end = max(c["started_at"] for c in children), min(c["ended_at"] for c in children)
    assert latest_start < earliest_end  # every child's recorded interval overlaps every other's
    assert all(c["workspace"] == str(state_dir / "agents" / c["id"]) for c in children)
    assert (state_dir / "agents" / "sw-w1" / "a.txt").exists() and not (state_dir / "agents" / "sw" / "a.txt").exists()
    [synthesis] = rows(state_dir, "select * from runs where parent_run = 'sw' and link = 'synthesis'")
    assert synthesis["status"] == "done" and synthesis["workspace"] == parent["workspace"]
    told = script.seen["synthesis"][0]["messages"][1]["content"]
    for n, sub_goal in enumerate(PLAN, 1):
        assert f"Sub-goal: {sub_goal}" in told and f"sw-w{n}" in told
    assert "(done)" in told and "(failed)" in told and "Changed files: a.txt" in told and "Changed files: b.txt" in told
    swarm_dir = state_dir / "agents" / "sw" / ".hearth" / "swarm"
    assert "+Write part A into a.txt." in (swarm_dir / "sw-w1" / "changes.diff").read_text()
    assert (swarm_dir / "sw-w2" / "files" / "b.txt").read_text() == "Write part B into b.txt.\n"
    shown = run_cli("hearth", "show", "sw").stdout
    assert "swarm sw  done" in shown and "├─ child sw-w1  done" in shown and "└─ synthesis sw-synthesis  done" in shown


def test_a_plan_that_is_not_a_list_of_sub_goals_fails_the_swarm_and_queues_nothing(state_dir: Path) -> None:
    script = Script(plan="Let us split it into three parts: A, B and C.")
    with FakeOllama([script], repeat_last=True) as fake:
        swarm(state_dir, fake)
        spawned = run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url})
    assert spawned.returncode == 0, spawned.stderr
    [parent] = rows(state_dir, "select * from runs")
    assert parent["status"] == "failed"
    assert parent["error"] == "the planner's answer was unusable: it holds no JSON value; nothing was queued"
    assert len(script.seen["planner"]) == 2  # the question and one repair
    assert "could not be used: it holds no JSON value" in script.seen["planner"][1]["messages"][-1]["content"]
    assert_every_request_legal(fake.requests)  # the repair asks the question again, no made-up user turn
    assert listing(state_dir / "agents") == ["sw"] and listing(state_dir / "queue" / "failed") == []


def test_a_plan_with_too_many_sub_goals_is_refused_the_same_way(state_dir: Path) -> None:
    script = Script(plan=json.dumps(["one", "two", "three", "four"]))
    with FakeOllama([script], repeat_last=True) as fake:
        swarm(state_dir, fake)
        assert run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url}).returncode == 0
    [parent] = rows(state_dir, "select * from runs")
    assert parent["error"].startswith("the planner's answer was unusable: the value: list should have at most 3 items")


def children_in_flight(state_dir: Path, script: Script) -> bool:
    asked = sum(len(script.seen.get(sub_goal, [])) for sub_goal in PLAN)
    if asked < 3:
        return False
    return len(rows(state_dir, "select id from runs where parent_run = 'sw' and status = 'running'")) == 3


def test_stopping_the_swarm_stops_its_children(state_dir: Path) -> None:
    script = Script()
    script.hold.clear()  # the children wait mid-call until the test lets them go
    with FakeOllama([script], repeat_last=True) as fake:
        swarm(state_dir, fake)
        spawner = start_cli("spawn", "--local", "--concurrency", "4", env={"OLLAMA_HOST": fake.url})
        try:
            wait_for(lambda: children_in_flight(state_dir, script), what="three children in their first model call")
            stopped = stop_run(Settings.from_env(), "sw", by="ana", grace_s=10)
        finally:
            script.hold.set()
        out, err = spawner.communicate(timeout=60)
    assert spawner.returncode == 0, err
    assert stopped.status == "interrupted" and sorted(s.run_id for s in stopped.with_it) == ["sw-w1", "sw-w2", "sw-w3"]
    runs = {r["id"]: r for r in rows(state_dir, "select * from runs")}
    assert {rid: r["status"] for rid, r in runs.items()} == dict.fromkeys(
        ("sw", "sw-w1", "sw-w2", "sw-w3"), "interrupted"
    )
    assert all("stopped by ana, with sw" in (runs[f"sw-w{n}"]["error"] or "") for n in (1, 2, 3))
    assert "synthesis" not in script.seen
