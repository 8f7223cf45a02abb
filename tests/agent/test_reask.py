"""An unusable reply asked again with its shape held to one step (agent/reask.py): the same messages,
the reply held by the server's JSON schema, no message added to the conversation, the nudge after."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.context.prompt import render_system_prompt
from agent.loop import INVALID_CALL, Loop, Outcome
from agent.model.backends import client_for
from agent.model.host import ChatOptions
from agent.reask import ANSWER, read_step, step_schema
from agent.safety.sandbox import SandboxPolicy
from agent.safety.workspace import Workspace
from agent.services import RunServices
from agent.tools.gate import ToolRunner
from tests.agent.test_loop import tool_results
from tests.fake_ollama import FakeOllama, Raw, assert_no_synthetic_user, assert_roles_legal, final_answer
from tests.fake_openai import FakeOpenAI

CUT = {"content": '<tool_call>\n{"name": "read_file", "arguments": {"path": '}  # a call cut off: unusable
STEP = final_answer(json.dumps({"name": "read_file", "arguments": {"path": "notes.txt"}}))


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("the NAS first\n")
    with Workspace(root, services=RunServices(sandbox=SandboxPolicy(hide=(str(tmp_path / "state"),)))) as handle:
        yield handle


def run(fake: FakeOllama | FakeOpenAI, ws: Workspace, events: list[Any], *, reask: bool = True) -> Outcome:
    tools = ToolRunner(ws, mode="bypass")
    host = fake.host if isinstance(fake, FakeOpenAI) else fake.url
    model = client_for(host, "qwen2.5-coder", ChatOptions(retries=0))
    prompt = render_system_prompt("tester", tools.schemas)
    return Loop(model, tools, system_prompt=prompt, on_event=events.append, reask=reask).run("read the notes")


def test_an_unusable_reply_is_asked_again_held_to_one_step_with_the_same_messages(ws: Workspace) -> None:
    events: list[Any] = []
    with FakeOllama([CUT, STEP, final_answer("The NAS first.")]) as fake:
        outcome = run(fake, ws, events)
    assert outcome.status == "done"
    first, again, last = fake.requests
    assert "format" not in first and again["format"] == step_schema(first["tools"])
    assert again["messages"] == first["messages"]  # nothing added: the server's cache holds
    assert tool_results(last) == ["the NAS first\n"]
    assert all(m["role"] != "user" for m in last["messages"][2:]) and CUT["content"] not in json.dumps(last)
    assert_roles_legal(last["messages"])
    reasked = [e for e in events if e.kind == "model" and e.data.get("reasked")]
    assert len(reasked) == 1 and reasked[0].data["content"] == CUT["content"]  # recorded, never kept
    assert [e.data["ok"] for e in events if e.kind == "reask"] == [True]


def test_a_held_reply_that_answers_ends_the_run_with_its_answer(ws: Workspace) -> None:
    answer = final_answer(json.dumps({"name": ANSWER, "arguments": {"text": "Nothing to do."}}))
    with FakeOllama([{"content": ""}, answer]) as fake:
        outcome = run(fake, ws, [])
    assert (outcome.status, outcome.summary) == ("done", "Nothing to do.")


def test_a_held_reply_still_unusable_or_refused_leaves_the_nudge(ws: Workspace) -> None:
    for second in (final_answer("not json at all"), Raw(400, json.dumps({"error": "invalid format"}))):
        events: list[Any] = []
        with FakeOllama([CUT, second, STEP, final_answer("done")]) as fake:
            outcome = run(fake, ws, events)
        assert outcome.status == "done"
        nudge = fake.requests[2]["messages"][-1]
        assert nudge["role"] == "tool" and "could not be parsed" in nudge["content"]
        assert_no_synthetic_user(fake.requests[2]["messages"])


def test_without_reask_an_unusable_reply_is_nudged_at_once(ws: Workspace) -> None:
    with FakeOllama([CUT, STEP, final_answer("done")]) as fake:
        run(fake, ws, [], reask=False)
    assert all("format" not in body for body in fake.requests)


def test_an_openai_compatible_server_is_asked_for_the_schema_as_its_response_format(ws: Workspace) -> None:
    with FakeOpenAI([CUT, STEP, final_answer("The NAS first.")]) as fake:
        outcome = run(fake, ws, [])
    assert outcome.status == "done"
    held = fake.requests[1]["response_format"]
    assert held["type"] == "json_schema" and held["json_schema"]["schema"]["anyOf"][-1]["properties"]["name"] == {
        "const": ANSWER
    }


def test_the_schema_holds_each_tool_to_its_own_arguments_and_reading_refuses_the_rest() -> None:
    from agent.tools.builtin import TOOLS

    schema = step_schema([TOOLS["read_file"].schema(), TOOLS["write_file"].schema()])
    read = schema["anyOf"][0]
    assert read["properties"]["name"] == {"const": "read_file"}
    assert (
        read["properties"]["arguments"]["additionalProperties"] is False
        and "path" in read["properties"]["arguments"]["properties"]
    )
    names = ["read_file", "write_file"]
    assert read_step('{"name": "read_file", "arguments": {"path": "a"}}', names).calls[0].arguments == {"path": "a"}  # type: ignore[union-attr]
    for bad in (
        '{"name": "rm", "arguments": {}}',
        '{"name": "answer", "arguments": {"text": " "}}',
        "[1]",
        "{",
        '{"name": "read_file"}',
    ):
        assert read_step(bad, names) is None


def test_a_reply_that_is_only_a_calls_json_with_a_made_up_result_is_not_a_final_answer(ws: Workspace) -> None:
    """The 0.5B model's count-lines chore: its call came with a "result" it made up, so the parser
    took it for a log line, and the run ended done on it."""
    made_up = {
        "content": '```json\n{"name": "read_file", "arguments": {"path": "notes.txt"}, "result": "Error: no file"}\n```'
    }
    with FakeOllama([made_up, STEP, final_answer("The NAS first.")]) as fake:
        outcome = run(fake, ws, [])
    assert outcome.status == "done" and outcome.summary == "The NAS first."
    assert "format" in fake.requests[1] and tool_results(fake.requests[2]) == ["the NAS first\n"]
    with FakeOllama([made_up, STEP, final_answer("The NAS first.")]) as fake:
        run(fake, ws, [], reask=False)
    assert fake.requests[1]["messages"][-1]["tool_name"] == INVALID_CALL  # nudged, not taken as the answer


@pytest.mark.parametrize(
    "said",
    [
        '```json\n{\n  "name": "is_even",\n  "arguments": {\n    "n": {\n      "type": "number"\n    }\n  }\n}\n```',
        '{"name": "report.py", "arguments": {"stock_report": "report.json"})',
    ],
    ids=["a tool the run lacks, its argument a schema", "a call written broken"],
)
def test_a_reply_that_is_only_a_call_the_parser_declined_is_asked_again_not_the_final_answer(
    ws: Workspace, said: str
) -> None:
    """Two chores of the real 0.5B model ended done on such a reply: asked to add is_even(n) to a
    file, it answered with a call of a tool named is_even; asked to fix report.py, with a call of a
    tool named report.py whose JSON it closed with a parenthesis."""
    with FakeOllama([{"content": said}, STEP, final_answer("The NAS first.")]) as fake:
        outcome = run(fake, ws, [])
    assert outcome.status == "done" and outcome.summary == "The NAS first."
    assert "format" in fake.requests[1] and tool_results(fake.requests[2]) == ["the NAS first\n"]


@pytest.mark.parametrize(
    "answer",
    [
        '{"debug": false, "workers": 4}',
        'The config is now:\n```json\n{"name": "web", "port": 9090}\n```',
        'A call looks like {"name": "read_file", "arguments": {"path": "a"}} in the text.',
    ],
    ids=["json that is not a call", "a fenced object named but with no arguments", "a call explained in prose"],
)
def test_a_final_answer_holding_json_that_is_not_a_call_ends_the_run(ws: Workspace, answer: str) -> None:
    with FakeOllama([final_answer(answer)]) as fake:
        outcome = run(fake, ws, [])
    assert outcome.status == "done" and len(fake.requests) == 1
