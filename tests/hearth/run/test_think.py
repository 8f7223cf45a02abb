"""Thinking models (issue 25): `think` per profile and request, sent in the chat body, recorded on
the run row; a model that cannot think runs without it, said once; its thinking stays in the audit
and goes back into the history only for the families that need it, the prefix byte-stable."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any

from agent.model.reply import keeps_thinking
from hearth.run.goal import GoalRequest
from hearth.run.runner import run_goal
from hearth.settings import Settings
from tests.fake_ollama import FakeOllama, final_answer, tool_call

THOUGHT = "The user wants notes.txt; I should list first."


def run(fake: FakeOllama, tmp_path: Path, **fields: Any) -> tuple[str, Any]:
    settings = Settings(**{**Settings.from_env().__dict__, "model_host": fake.url})
    request = GoalRequest(goal="list the files", workspace=tmp_path / "ws", **{"model": "qwen3", **fields})
    (tmp_path / "ws").mkdir(exist_ok=True)
    return run_goal(request, settings, out=io.StringIO())


def rows(state_dir: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(state_dir / "audit.db") as conn:
        return conn.execute(sql).fetchall()


def assert_prefix_stable(bodies: list[dict[str, Any]]) -> None:
    """Each request is the one before plus new messages: the same bytes up to where it ended."""
    for before, after in zip(bodies, bodies[1:], strict=False):
        sent = before["messages"]
        assert json.dumps(after["messages"][: len(sent)]) == json.dumps(sent)


def test_a_requests_think_level_is_sent_recorded_and_its_thinking_kept_out_of_the_history(
    state_dir: Path, tmp_path: Path
) -> None:
    script = [{**tool_call("list_files", {"path": "."}), "thinking": THOUGHT}, final_answer("empty")]
    with FakeOllama(script, models=("qwen3",)) as fake:
        run_id, outcome = run(fake, tmp_path, think="high")
    assert outcome.status == "done"
    assert [b["think"] for b in fake.requests] == ["high", "high"]
    assert all(THOUGHT not in json.dumps(b["messages"]) for b in fake.requests)  # qwen3 is not sent it back
    assert_prefix_stable(fake.requests)
    assert rows(state_dir, f"select think from runs where id = '{run_id}'") == [("high",)]
    [(data,)] = rows(
        state_dir, f"select data from steps where run_id = '{run_id}' and kind = 'model' and data like '%thinking%'"
    )
    assert json.loads(data)["thinking"] == THOUGHT


def test_gpt_oss_gets_its_thinking_back_and_the_prefix_stays_byte_stable(state_dir: Path, tmp_path: Path) -> None:
    script = [{**tool_call("list_files", {"path": "."}), "thinking": THOUGHT}, final_answer("empty")]
    with FakeOllama(script, models=("gpt-oss:20b",)) as fake:
        _, outcome = run(fake, tmp_path, model="gpt-oss:20b", think="low")
    assert outcome.status == "done"
    assistant = fake.requests[1]["messages"][2]
    assert assistant["role"] == "assistant" and assistant["thinking"] == THOUGHT
    assert_prefix_stable(fake.requests)
    assert keeps_thinking("gpt-oss:120b") and not keeps_thinking("qwen3:8b") and not keeps_thinking("deepseek-r1")


def test_a_model_that_cannot_think_runs_without_it_said_once_in_a_model_step(state_dir: Path, tmp_path: Path) -> None:
    script = [tool_call("list_files", {"path": "."}), final_answer("empty")]
    with FakeOllama(script, models=("llama3.2",), no_thinking=("llama3.2",)) as fake:
        run_id, outcome = run(fake, tmp_path, model="llama3.2", think=True)
    assert outcome.status == "done" and outcome.error == ""
    assert [b.get("think") for b in fake.requests] == [True, None, None]  # refused once, then never sent
    said = rows(
        state_dir, f"select detail from steps where run_id = '{run_id}' and kind = 'model' and detail is not null"
    )
    assert len(said) == 1 and "llama3.2 does not support thinking; it runs without think=true" in said[0][0]
    assert rows(state_dir, f"select think from runs where id = '{run_id}'") == [("true",)]


def test_no_think_anywhere_sends_none_and_a_profiles_think_is_used(state_dir: Path, tmp_path: Path) -> None:
    agent = Path(Settings.from_env().config_dir) / "agents" / "thinker"
    agent.mkdir(parents=True)
    (agent / "agent.toml").write_text('think = "medium"\n')
    with FakeOllama([final_answer("a"), final_answer("b")], models=("qwen3",)) as fake:
        plain_id, _ = run(fake, tmp_path)
        thinker_id, _ = run(fake, tmp_path, agent_name="thinker")
    assert "think" not in fake.requests[0] and fake.requests[1]["think"] == "medium"
    assert rows(state_dir, f"select think from runs where id = '{plain_id}'") == [(None,)]
    assert rows(state_dir, f"select think from runs where id = '{thinker_id}'") == [("medium",)]
