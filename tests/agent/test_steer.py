"""A person's steer reaches the model at the next legal boundary: after a tool result, as one user
message of marked blocks, kept, recorded, and taken from where it waited (real files, the fake server)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent.context.prompt import render_system_prompt
from agent.loop import Loop, Outcome
from agent.model.ollama_client import OllamaClient
from agent.safety.workspace import Workspace
from agent.steer import STEER_MARK
from agent.tools.gate import ToolRunner
from hearth.run.steers import SteerBox
from tests.agent.test_loop import ws  # noqa: F401  (the workspace fixture)
from tests.fake_ollama import FakeOllama, assert_every_request_legal, final_answer, tool_call


def leave(box: Path, name: str, by: str, text: str) -> None:
    box.mkdir(parents=True, exist_ok=True)
    (box / name).write_text(json.dumps({"by": by, "text": text, "at": "2026-12-07T19:00:00Z"}))


def run_steered(fake: FakeOllama, workspace: Workspace, box: Path, events: list[Any]) -> Outcome:
    tools = ToolRunner(workspace, mode="bypass")
    loop = Loop(
        OllamaClient("qwen2.5-coder", fake.url, sleep=lambda s: None),
        tools,
        system_prompt=render_system_prompt("tester", tools.schemas),
        on_event=events.append,
        steering=SteerBox(box),
    )
    return loop.run("list the workspace")


def test_steers_go_in_after_the_next_tool_result_as_one_marked_user_message_and_are_taken(
    ws: Workspace,  # noqa: F811
    tmp_path: Path,
) -> None:
    box = tmp_path / "steers"
    leave(box, "1.json", "ana", "Use the staging database.")
    leave(box, "2.json", "bo", "And be brief.")
    events: list[Any] = []
    with FakeOllama([tool_call("list_files", {"path": "."}), final_answer("Listed it.")]) as fake:
        outcome = run_steered(fake, ws, box, events)
    assert outcome.status == "done"
    first, second = fake.requests
    assert [m["role"] for m in first["messages"]] == ["system", "user"]  # nothing before a tool result
    said = second["messages"][-1]
    assert second["messages"][-2]["role"] == "tool" and said["role"] == "user"
    assert said["content"].startswith(f"{STEER_MARK}ana") and "Use the staging database." in said["content"]
    assert said["content"].index("staging") < said["content"].index(f"{STEER_MARK}bo") < said["content"].index("brief")
    assert_every_request_legal(fake.requests)
    assert [(e.data["by"], e.data["text"]) for e in events if e.kind == "steer"] == [
        ("ana", "Use the staging database."),
        ("bo", "And be brief."),
    ]
    assert list(box.iterdir()) == []  # taken


def test_a_run_that_answers_without_a_tool_never_takes_a_steer_and_leaves_it_waiting(
    ws: Workspace,  # noqa: F811
    tmp_path: Path,
) -> None:
    box = tmp_path / "steers"
    leave(box, "1.json", "ana", "Use the staging database.")
    (box / "torn.json").write_text("{")
    events: list[Any] = []
    with FakeOllama([final_answer("Nothing to do.")]) as fake:
        run_steered(fake, ws, box, events)
    assert [m["role"] for m in fake.requests[0]["messages"]] == ["system", "user"]
    assert not [e for e in events if e.kind == "steer"]
    assert sorted(p.name for p in box.iterdir()) == ["1.json", "torn.json"]
