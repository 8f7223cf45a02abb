"""The governor: daily token budgets stop a running run mid-way and refuse the next request."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from agent.loop import BudgetExceeded, Outcome
from hearth.audit.store import AuditStore, RunRecord
from hearth.errors import ConfigError
from hearth.leash.budget import Budget, RunGuard, day_start, load_budget, resets_at
from hearth.run.exits import EXIT_CODES
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.queue_support import drop, listing, rows

LOOK = tool_call("list_files", {"path": "."})


def test_a_spent_budget_stops_a_run_mid_way_and_refuses_the_next_request(state_dir: Path) -> None:
    env = {"HEARTH_DAILY_TOKENS": "250"}  # each model call costs 100 + 20 tokens
    with FakeOllama([LOOK] * 5 + [final_answer("never")], tokens=(100, 20)) as fake:
        drop(state_dir / "queue", "first.json", {"id": "first", "goal": "look around"})
        assert run_cli("hearth", "spawn", "--local", env={**env, "OLLAMA_HOST": fake.url}).returncode == 0
        calls = len(fake.requests)
        drop(state_dir / "queue", "second.json", {"id": "second", "goal": "look again"})
        assert run_cli("hearth", "spawn", "--local", env={**env, "OLLAMA_HOST": fake.url}).returncode == 0
    assert calls == 3 and len(fake.requests) == 3  # stopped before the 4th call; the next never ran
    first = rows(state_dir, "select * from runs where id = 'first'")[0]
    assert (first["status"], first["iterations"], first["tokens_in"], first["tokens_out"]) == (
        "budget_exceeded",
        3,
        300,
        60,
    )
    assert first["error"].startswith("stopped: the daily token budget of 250 tokens is spent (360 used today)")
    assert "Steps taken: list_files(path='.') -> ok; list_files(path='.') -> repeated" in first["summary"]
    second = rows(state_dir, "select status, error from runs where id = 'second'")[0]
    assert second["status"] == "rejected"
    assert second["error"].startswith("not started: the daily token budget of 250 tokens is spent (360 used today)")
    assert "it resets at " in second["error"]
    queue = state_dir / "queue"
    assert listing(queue) == ["claimed", "failed", "locks", "rejected"]  # first placed, nothing half-written
    assert listing(queue / "rejected") == ["second.json", "second.json.error.json"]
    kept = json.loads((queue / "rejected" / "second.json.error.json").read_text())
    assert "resets at" in kept["reason"] and kept["run_id"] == "second"


def test_a_run_s_own_token_cap_stops_it_with_its_exit_code(state_dir: Path) -> None:
    with FakeOllama([LOOK] * 3, tokens=(100, 20)) as fake:
        proc = run_cli("hearth-loop", "--max-tokens", "200", "look", env={"OLLAMA_HOST": fake.url})
    assert proc.returncode == EXIT_CODES["budget_exceeded"], proc.stderr
    assert len(fake.requests) == 2
    [run] = rows(state_dir, "select status, error from runs")
    assert run == {"status": "budget_exceeded", "error": "stopped at the run's token cap of 200 (240 used)"}


def test_a_per_agent_budget_limits_only_that_agent(state_dir: Path, tmp_path: Path) -> None:
    config = tmp_path / "config"
    (config / "agents" / "notes").mkdir(parents=True)
    (config / "budget.toml").write_text("[per_agent]\nnotes = 100\n")
    with FakeOllama([LOOK, LOOK, final_answer("default is free")], tokens=(100, 20)) as fake:
        env = {"OLLAMA_HOST": fake.url}
        assert (
            run_cli("hearth-loop", "--agent-name", "notes", "look", env=env).returncode == EXIT_CODES["budget_exceeded"]
        )
        assert run_cli("hearth-loop", "look", env=env).returncode == 0
    budget = json.loads(run_cli("hearth", "budget", "--json").stdout)
    assert budget["box"] == {"limit": None, "spent": 360, "remaining": None}
    notes = next(a for a in budget["agents"] if a["agent"] == "notes")
    assert notes == {"agent": "notes", "limit": 100, "spent": 120, "remaining": 0}
    text = run_cli("hearth", "budget").stdout
    assert "agent notes" in text and "resets at" in text


class _Counting:
    """The audit's rows, counting the queries a guard makes."""

    def __init__(self, audit: AuditStore) -> None:
        self.audit, self.queries = audit, 0

    def rows(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[dict[str, Any]]:
        self.queries += 1
        return self.audit.rows(sql, params)


def test_the_guard_reads_the_audit_once_and_again_only_near_the_limit(tmp_path: Path) -> None:
    with AuditStore(tmp_path / "audit.db") as audit:
        audit.start_run(RunRecord(id="other", agent_name="default", model="m", goal="g", mode="auto"))
        audit.record_step("other", "model", tokens_in=400, tokens_out=0)
        audit.start_run(RunRecord(id="mine", agent_name="default", model="m", goal="g", mode="auto"))
        counting = _Counting(audit)
        guard = RunGuard(Budget(daily=1000), counting, "default", None, clock=lambda: 0.0)
        assert counting.queries == 1
        outcome = Outcome("running", "", 0)
        for _ in range(4):  # 400 + 100, 200, 300: below 80% of 1000, no query
            guard(outcome)
            outcome.tokens_in += 100
            audit.record_step("mine", "model", tokens_in=100, tokens_out=0)  # as the recorder does
        assert counting.queries == 1
        outcome.tokens_in += 50
        audit.record_step("mine", "model", tokens_in=50, tokens_out=0)
        guard(outcome)  # 850: near, so the audit is read again
        assert counting.queries == 2
        audit.record_step("other", "model", tokens_in=600, tokens_out=0)  # another run spent the rest
        with pytest.raises(BudgetExceeded, match="daily token budget of 1,000 tokens is spent \\(1,450 used"):
            guard(outcome)


def test_the_day_starts_at_local_midnight_and_resets_at_the_next() -> None:
    zone = timezone(timedelta(hours=2))
    now = datetime(2026, 3, 1, 0, 30, tzinfo=zone)
    assert day_start(now) == datetime(2026, 3, 1, 0, 0, tzinfo=zone)
    assert resets_at(now).date().isoformat() == "2026-03-02" and resets_at(now).hour == 0


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("daily = -5", "budget.toml: daily must be a whole number of tokens from 0"),
        ("daily = 'lots'", "budget.toml: daily must be a whole number of tokens"),
        ("[per_agent]\nnotes = 1.5", "budget.toml: per_agent.notes must be a whole number"),
        ("dialy = 5", "budget.toml: unknown key 'dialy'"),
        ("daily = ", "budget.toml is not valid TOML"),
    ],
)
def test_a_bad_budget_file_is_one_line_naming_the_file_and_field(tmp_path: Path, text: str, error: str) -> None:
    (tmp_path / "budget.toml").write_text(text)
    with pytest.raises(ConfigError, match=error.replace("(", "\\(")):
        load_budget(tmp_path)


def test_a_bad_budget_file_never_takes_the_queue_down(state_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "budget.toml").write_text("daily = -1")
    with FakeOllama([final_answer("ran")]) as fake:
        drop(state_dir / "queue", "ok.json", {"id": "ok", "goal": "g"})
        proc = run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url})
    assert proc.returncode == 0
    assert rows(state_dir, "select status from runs") == [{"status": "done"}]
    assert "budget.toml: daily must be a whole number" in proc.stderr + proc.stdout
