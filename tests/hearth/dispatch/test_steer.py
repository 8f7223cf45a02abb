"""`hearth steer RUN "text"` as real processes: the queue, `hearth spawn --local`, the fake Ollama
recording what the model was sent, the audit's steps; a waiting run takes the steer with the
decision; an ended run, an unknown one and a viewer are refused, and nothing is left for a run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent.steer import STEER_MARK
from hearth.queue.directory import Queue
from hearth.queue.request import Request
from hearth.settings import Settings
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, assert_every_request_legal, final_answer, tool_call
from tests.hearth.dispatch.test_suspend_resume import ECHO, ENV, run_of
from tests.queue_support import rows


def enqueue(state_dir: Path, run_id: str, mode: str = "bypass") -> None:
    Queue(state_dir / "queue").ensure().enqueue(Request(id=run_id, goal="list the workspace", mode=mode))


class SteersFirst:
    """The model's first reply, given only after `hearth steer` left its text (the marker: its exit)."""

    def __init__(self, run_id: str, text: str, reply: dict[str, Any]) -> None:
        self.run_id, self.text, self.reply = run_id, text, reply
        self.given: dict[str, Any] = {}

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        done = run_cli("hearth", "steer", self.run_id, self.text, "--json")
        assert done.returncode == 0, done.stderr
        self.given = json.loads(done.stdout)
        return self.reply


def test_a_steer_reaches_the_model_after_the_next_tool_result_and_is_recorded(state_dir: Path) -> None:
    enqueue(state_dir, "steered")
    first = SteersFirst("steered", "Only the top level, please.", tool_call("list_files", {"path": "."}))
    with FakeOllama([first, final_answer("Listed the top level.")]) as fake:
        spawned = run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url, **ENV})
    assert spawned.returncode == 0, spawned.stderr
    assert run_of(state_dir, "steered")["status"] == "done"
    said = fake.requests[1]["messages"]
    assert said[-2]["role"] == "tool" and said[-1]["role"] == "user"
    assert (
        said[-1]["content"]
        == f"{STEER_MARK}{first.given['by']}: a person watching this run, not a tool result]\nOnly the top level, please."
    )
    assert_every_request_legal(fake.requests)
    [step] = rows(state_dir, "select * from steps where run_id = 'steered' and kind = 'steer'")
    assert step["detail"] == f"from {first.given['by']}: Only the top level, please."
    assert not list((state_dir / "state" / "steers" / "steered").iterdir())
    ended = run_cli("hearth", "steer", "steered", "And the docs?")
    assert ended.returncode == 1 and "run steered has ended (done)" in ended.stderr
    assert "hearth continue steered" in ended.stderr
    unknown = run_cli("hearth", "steer", "nosuchrun", "hello")
    assert unknown.returncode == 2 and "no run 'nosuchrun'" in unknown.stderr
    assert not (state_dir / "state" / "steers" / "nosuchrun").exists()


def test_a_run_waiting_for_approval_takes_the_steer_with_the_decision(state_dir: Path) -> None:
    enqueue(state_dir, "asker", mode="auto")
    with FakeOllama([ECHO, final_answer("said hello")]) as fake:
        env = {"OLLAMA_HOST": fake.url, **ENV}
        assert run_cli("hearth", "spawn", "--local", env=env).returncode == 0
        assert run_of(state_dir, "asker")["status"] == "waiting"
        viewer = run_cli("hearth", "steer", "asker", "hello", env={"HEARTH_USER": "viewer"})
        assert viewer.returncode == 1 and "viewer" in viewer.stderr
        steered = run_cli("hearth", "steer", "asker", "Then say goodbye too.")
        assert steered.returncode == 0, steered.stderr
        [pending] = json.loads(run_cli("hearth", "approvals", "--json").stdout)
        assert run_cli("hearth", "approve", pending["id"]).returncode == 0
        assert run_cli("hearth", "spawn", "--local", env=env).returncode == 0
    assert run_of(state_dir, "asker")["status"] == "done"
    said = fake.requests[1]["messages"]
    assert said[-2]["content"].startswith("approved-and-ran")  # the decided call's result, then the steer
    assert said[-1]["role"] == "user" and said[-1]["content"].endswith("\nThen say goodbye too.")
    assert_every_request_legal(fake.requests)
    kinds = [s["kind"] for s in rows(state_dir, "select kind from steps where run_id = 'asker' order by seq")]
    assert kinds.index("approval") < kinds.index("steer")


def test_an_empty_steer_is_refused_before_anything_is_written(state_dir: Path) -> None:
    enqueue(state_dir, "quiet")
    empty = run_cli("hearth", "steer", "quiet", "   ")
    assert empty.returncode == 2 and "the steer is empty" in empty.stderr
    assert not (Settings.from_env().state_dir / "state" / "steers" / "quiet").exists()
