"""The regression watch: a mission names a suite; after the default model changes, its next firing
runs the suite again, and a pass rate that fell past the mission's threshold is an alert naming the
cases that got worse; `hearth eval diff` says the same."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.alert_support import Receiver, write_alerts_toml
from tests.conftest import run_cli
from tests.eval_support import GOALS, rows, scripted, state_dir  # noqa: F401 (the fixture)
from tests.queue_support import wait_for

SUITE = f"""
description = "the watched chores"
[[case]]
name = "hello"
goal = "{GOALS["hello"]}"
mode = "bypass"
[case.check]
files = ["hello.txt"]

[[case]]
name = "count"
goal = "{GOALS["count"]}"
mode = "bypass"
[case.check]
max_iterations = 3
"""
MISSION = 'schedule = "daily"\ngoal = "Say good morning"\nmode = "plan"\neval = "watched"\neval_drop = 0.2\n'


@pytest.fixture
def hook() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.close()


def _fire(url: str, model: str) -> str:
    """Fire the mission with this default model, run what it queued; the watch's note."""
    env = {"OLLAMA_HOST": url, "HEARTH_MODEL": model}
    fired = run_cli("hearth", "missions", "run", "nightly", env=env)
    assert fired.returncode == 0, fired.stderr
    spawned = run_cli("hearth", "spawn", "--local", env=env, timeout=300)
    assert spawned.returncode == 0, spawned.stdout + spawned.stderr
    return next(line for line in fired.stderr.splitlines() if "eval watched" in line)


def test_a_changed_default_model_reruns_the_watched_suite_and_a_drop_is_alerted(
    state_dir: Path,  # noqa: F811
    hook: Receiver,
) -> None:
    config = state_dir.parent / "config"
    (config / "evals").mkdir(parents=True)
    (config / "evals" / "watched.toml").write_text(SUITE)
    (config / "missions").mkdir()
    (config / "missions" / "nightly.toml").write_text(MISSION)
    write_alerts_toml(config, ("hook", f"json://127.0.0.1:{hook.port}/hearth", ["eval_regression"]))
    with scripted() as fake:
        first = _fire(fake.url, "a")
        assert "eval watched started as ev-" in first
        assert "nothing changed" in _fire(fake.url, "a")  # same router, profiles and model: no new eval
        second = _fire(fake.url, "b")
        assert "eval watched started as ev-" in second
    before, after = first.rsplit(" ", 1)[1], second.rsplit(" ", 1)[1]

    evals = {r["id"]: r for r in rows(state_dir, "select * from eval_runs")}
    assert set(evals) == {before, after}
    assert (evals[before]["status"], evals[before]["pass_rate"]) == ("done", 1.0)  # scored as its runs ended
    assert (evals[after]["status"], evals[after]["pass_rate"]) == ("done", 0.0)
    assert {evals[before]["trigger"], evals[after]["trigger"]} == {"mission:nightly"}
    assert evals[before]["fingerprint"] != evals[after]["fingerprint"]

    got = wait_for(lambda: hook.got, what="the regression alert")
    [alert] = got
    assert alert["body"]["title"] == "hearth: eval watched pass rate fell from 100% to 0%"
    assert f"eval {after} against {before}; worse: count, hello" in alert["body"]["message"]
    [recorded] = rows(state_dir, "select event, status, destination from alerts")
    assert recorded == {"event": "eval_regression", "status": "sent", "destination": "hook"}
    runs = rows(state_dir, "select requested_by from runs where source = 'eval'")
    assert sorted(r["requested_by"] for r in runs) == sorted([f"eval:{before}"] * 2 + [f"eval:{after}"] * 2)

    compared = run_cli("hearth", "eval", "diff", before, after)
    assert compared.returncode == 1, compared.stderr
    assert "pass rate 100% -> 0%" in compared.stdout and "worse: count, hello" in compared.stdout
    change = json.loads(run_cli("hearth", "eval", "diff", before, after, "--json").stdout)
    assert [(c["case"], c["model"], c["a"], c["b"]) for c in change["changes"]] == [
        ("count", "default", 1.0, 0.0),
        ("hello", "default", 1.0, 0.0),
    ]


def test_a_mission_naming_a_suite_badly_is_reported_and_skipped(state_dir: Path) -> None:  # noqa: F811
    missions = state_dir.parent / "config" / "missions"
    missions.mkdir(parents=True)
    (missions / "nightly.toml").write_text('schedule = "daily"\ngoal = "g"\neval = "watched"\neval_drop = 2\n')
    listed = run_cli("hearth", "missions")
    assert listed.returncode == 1
    assert "eval_drop must be a share of the pass rate from 0 to below 1, such as 0.1, got 2" in listed.stderr
