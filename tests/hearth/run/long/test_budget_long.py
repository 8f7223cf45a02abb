"""Long work spends one budget: a marathon's legs and its judge, a swarm's planner, its children and
its synthesis all count toward the same daily tokens, and none starts once they are spent.

Every fake model call costs 100 + 20 tokens; the daily budget is set so that it runs out at a
chosen call, and the fake's request count says which calls were made after that."""

from __future__ import annotations

import json
from pathlib import Path

from hearth.queue.directory import Queue
from hearth.run.exits import EXIT_CODES
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer
from tests.long_support import Script, verdict, write
from tests.queue_support import rows

CALL = (100, 20)


def marathon(fake: FakeOllama, daily: int) -> int:
    env = {"HEARTH_DAILY_TOKENS": str(daily)}
    proc = run_cli("hearth-loop", "--ollama-host", fake.url, "--marathon", "4", "write the report", env=env)
    return proc.returncode


def two_legs() -> Script:
    return Script(
        legs={n: [write(f"draft {n}\n"), final_answer(f"Drafted {n}.")] for n in (1, 2)},
        judged=[verdict(False, "Only a draft.", "Improve it."), verdict(True, "Good.")],
    )


def test_the_judges_tokens_count_and_the_next_leg_does_not_start_once_they_spent_the_budget(
    state_dir: Path,
) -> None:
    script = two_legs()
    with FakeOllama([script], repeat_last=True, tokens=CALL) as fake:
        code = marathon(fake, daily=300)  # leg 1 spends 240, its judge 120 more: spent
    assert code == EXIT_CODES["budget_exceeded"]
    assert len(fake.requests) == 3 and "leg2" not in script.seen  # leg 2 made no model call
    [judged] = rows(state_dir, "select data from steps where kind = 'judge'")
    assert (json.loads(judged["data"])["tokens_in"], json.loads(judged["data"])["tokens_out"]) == CALL
    runs = {r["id"].rsplit("-", 1)[-1]: r for r in rows(state_dir, "select * from runs order by started_at")}
    assert runs["leg2"]["status"] == "budget_exceeded"
    assert runs["leg2"]["error"].startswith("stopped: the daily token budget of 300 tokens is spent (360 used today)")
    [held] = [r for r in runs.values() if r["kind"] == "marathon"]
    assert held["status"] == "budget_exceeded" and (held["tokens_in"], held["tokens_out"]) == CALL


def test_a_marathon_asks_no_judge_once_its_leg_spent_the_budget(state_dir: Path) -> None:
    script = two_legs()
    with FakeOllama([script], repeat_last=True, tokens=CALL) as fake:
        code = marathon(fake, daily=200)  # leg 1's two calls spend 240: the judge must not be asked
    assert code == EXIT_CODES["budget_exceeded"]
    assert len(fake.requests) == 2 and "judge" not in script.seen
    [held] = rows(state_dir, "select * from runs where kind = 'marathon'")
    assert held["status"] == "budget_exceeded" and held["iterations"] == 1
    assert held["error"].startswith(
        "leg 1 ended done; not judged and no further legs: the daily token budget of 200 tokens is spent (240 used today)"
    )
    assert rows(state_dir, "select kind from steps where kind = 'judge'") == []
    [stop] = rows(state_dir, f"select detail from steps where run_id = '{held['id']}' and kind = 'stop'")
    assert stop["detail"] == held["error"]
    assert [r["id"] for r in rows(state_dir, "select id from runs where parent_run is not null")] == [
        f"{held['id']}-leg1"
    ]


SUB_GOALS = ["Write a.txt.", "Write b.txt."]


def planner_then_children(body: dict[str, object]) -> dict[str, object]:
    messages = body["messages"]
    assert isinstance(messages, list)
    if messages[0]["content"].startswith("You split a goal"):
        return final_answer(json.dumps(SUB_GOALS))
    return final_answer("done")


def swarm(state_dir: Path, fake: FakeOllama, daily: int) -> None:
    queued = run_cli("hearth", "enqueue", "split this", "--id", "sw", "--swarm", "2")
    assert queued.returncode == 0, queued.stderr
    env = {"OLLAMA_HOST": fake.url, "HEARTH_DAILY_TOKENS": str(daily)}
    spawned = run_cli("hearth", "spawn", "--local", "--concurrency", "2", env=env, timeout=120)
    assert spawned.returncode == 0, spawned.stderr


def test_a_swarms_planner_counts_and_its_children_and_synthesis_do_not_start_once_it_spent_the_budget(
    state_dir: Path,
) -> None:
    with FakeOllama([planner_then_children], repeat_last=True, tokens=CALL) as fake:
        swarm(state_dir, fake, daily=100)  # the planner's one call spends it
    assert len(fake.requests) == 1  # the planner's: no child and no synthesis reached the model
    [plan] = rows(state_dir, "select data from steps where run_id = 'sw' and kind = 'plan'")
    assert json.loads(plan["data"]) == {"tokens_in": 100, "tokens_out": 20}
    children = rows(state_dir, "select id, status, error from runs where id like 'sw-%' order by id")
    assert [(c["id"], c["status"]) for c in children] == [
        ("sw-synthesis", "budget_exceeded"),
        ("sw-w1", "rejected"),
        ("sw-w2", "rejected"),
    ]
    for child in children:
        assert "the daily token budget of 100 tokens is spent (120 used today)" in child["error"]
    assert sorted((state_dir / "queue" / "rejected").iterdir()) == sorted(
        state_dir / "queue" / "rejected" / name
        for name in ("sw-w1.json", "sw-w1.json.error.json", "sw-w2.json", "sw-w2.json.error.json")
    )


def test_a_swarm_under_a_budget_its_children_spent_meanwhile_is_not_planned(state_dir: Path) -> None:
    """The swarm was admitted; by the time its process runs, other runs spent the day: no planner call."""
    with FakeOllama([final_answer("one run's answer")], repeat_last=True, tokens=CALL) as fake:
        first = run_cli("hearth-loop", "--ollama-host", fake.url, "answer once")
        assert first.returncode == 0, first.stderr
        queued = run_cli("hearth", "enqueue", "split this", "--id", "sw", "--swarm", "2")
        assert queued.returncode == 0, queued.stderr
        queue = state_dir / "queue"
        Queue(queue).ensure()
        (queue / "sw.json").rename(queue / "claimed" / "sw.json")  # claimed while the day was not yet spent
        agent = run_cli(
            "hearth", "agent", "sw", env={"OLLAMA_HOST": fake.url, "HEARTH_DAILY_TOKENS": "100"}, timeout=120
        )
    assert len(fake.requests) == 1, agent.stderr  # the earlier run's only
    [held] = rows(state_dir, "select * from runs where id = 'sw'")
    assert held["status"] == "budget_exceeded"
    assert held["error"].startswith("not planned: the daily token budget of 100 tokens is spent (120 used today)")
    assert rows(state_dir, "select id from runs where parent_run = 'sw'") == []
