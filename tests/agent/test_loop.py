"""The loop against the real client and a real local /api/chat server: what is sent, what comes back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.context.prompt import render_system_prompt
from agent.loop import INVALID_CALL, MAX_UNPARSEABLE, Loop, Outcome
from agent.model.ollama_client import OllamaClient
from agent.safety.sandbox import SandboxPolicy
from agent.safety.workspace import Workspace
from agent.services import RunServices
from agent.tools.gate import ToolRunner
from tests.fake_ollama import FakeOllama, Raw, assert_no_synthetic_user, assert_roles_legal, final_answer, tool_call


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    root = tmp_path / "ws"
    root.mkdir()
    with Workspace(root, services=RunServices(sandbox=SandboxPolicy(hide=(str(tmp_path / "state"),)))) as handle:
        yield handle


def run_loop(
    fake: FakeOllama,
    ws: Workspace,
    goal: str = "do the thing",
    *,
    mode: str = "bypass",
    max_iters: int = 12,
    events: list[Any] | None = None,
) -> tuple[Loop, Outcome]:
    tools = ToolRunner(ws, mode=mode)
    client = OllamaClient("qwen2.5-coder", fake.url, sleep=lambda s: None)
    loop = Loop(
        client,
        tools,
        system_prompt=render_system_prompt("tester", tools.schemas),
        max_iters=max_iters,
        on_event=(events.append if events is not None else lambda e: None),
    )
    return loop, loop.run(goal)


def tool_results(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


MIXED_SCRIPT = [
    tool_call("write_file", {"path": "a.txt", "content": "alpha\n"}),
    {"content": 'Now reading.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n</tool_call>'},
    {"content": "<tool_call>{'name': 'read_file', 'arguments': {'path': </tool_call>"},
    tool_call("Read-File", {"path": "missing.txt"}),
    {
        "content": "",
        "tool_calls": [
            {"function": {"name": "list_files", "arguments": {}}},
            {"function": {"name": "reed_file", "arguments": {"path": "a.txt"}}},
        ],
    },
    final_answer("Wrote a.txt and read it back."),
]


def test_every_request_keeps_the_system_prompt_roles_and_prefix(ws: Workspace) -> None:
    with FakeOllama(list(MIXED_SCRIPT)) as fake:
        loop, outcome = run_loop(fake, ws)
    assert outcome.status == "done" and outcome.summary == "Wrote a.txt and read it back."
    requests = fake.requests
    assert len(requests) == 6
    assert len({r["messages"][0]["content"] for r in requests}) == 1
    for earlier, later in zip(requests, requests[1:]):
        assert later["messages"][: len(earlier["messages"])] == earlier["messages"]
    for request in requests:
        assert_roles_legal(request["messages"])
    assert_roles_legal(loop.messages)


def test_text_calls_and_repaired_names_run_and_unknown_names_get_a_suggestion(ws: Workspace) -> None:
    with FakeOllama(list(MIXED_SCRIPT)) as fake:
        run_loop(fake, ws)
    results = tool_results(fake.requests[-1])
    assert results[0] == "wrote 6 bytes to a.txt"
    assert results[1] == "alpha\n"
    assert results[2].startswith("Error: your last reply looked like a tool call")  # the nudge, a result
    assert results[3].startswith("Error: file not found: missing.txt")  # Read-File -> read_file
    assert "Hint:" in results[3]
    assert results[5].startswith("Error: no tool named 'reed_file'; did you mean read_file?")


def test_an_unparseable_call_is_nudged_on_the_tool_side_never_by_a_made_up_user_message(ws: Workspace) -> None:
    with FakeOllama(list(MIXED_SCRIPT)) as fake:
        run_loop(fake, ws)
    said, nudge = fake.requests[3]["messages"][-2:]
    assert said["role"] == "assistant" and said["tool_calls"][0]["function"]["name"] == INVALID_CALL
    assert nudge["role"] == "tool" and nudge["tool_name"] == INVALID_CALL
    assert "could not be parsed" in nudge["content"]
    for request in fake.requests:
        assert_no_synthetic_user(request["messages"])


def test_consecutive_unparseable_replies_are_capped(ws: Workspace) -> None:
    broken = {"content": '{"name": "write_file", "arguments": {"path": "x.py", "content": "import os\\nprint('}
    with FakeOllama([broken] * 5) as fake:
        _, outcome = run_loop(fake, ws)
    assert outcome.status == "failed"
    assert f"{MAX_UNPARSEABLE} unusable replies in a row" in outcome.error
    assert len(fake.requests) == MAX_UNPARSEABLE
    assert not (ws.root / "x.py").exists()


def test_the_same_failing_call_again_is_not_run_and_the_model_is_told_it_failed(ws: Workspace) -> None:
    same = tool_call("read_file", {"path": "nope.txt"})
    events: list[Any] = []
    with FakeOllama([same, same, final_answer("gave up")]) as fake:
        run_loop(fake, ws, events=events)
    first, second = tool_results(fake.requests[-1])
    assert first.startswith("Error: file not found") and "Not run again" not in first
    assert second.startswith("Not run again: you made exactly this call in turn 1 and it failed")
    verdicts = [e.data["verdict"] for e in events if e.kind == "tool"]
    assert verdicts == ["run", "repeat"]


def test_a_missing_python_module_earns_an_actionable_hint(ws: Workspace) -> None:
    script = [tool_call("run_command", {"command": "python3 -c 'import yaml_not_here'"}), final_answer("ok")]
    with FakeOllama(script) as fake:
        run_loop(fake, ws)
    result = tool_results(fake.requests[-1])[0]
    assert "No module named 'yaml_not_here'" in result
    assert "Hint: the Python module 'yaml_not_here' is not installed" in result


def test_the_iteration_cap_ends_the_run_with_a_summary_of_what_was_done(ws: Workspace) -> None:
    def next_file(body: dict[str, Any]) -> dict[str, Any]:
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        return tool_call("write_file", {"path": f"f{done}.txt", "content": "x"})

    with FakeOllama([next_file], repeat_last=True) as fake:
        _, outcome = run_loop(fake, ws, max_iters=4)
    assert outcome.status == "iteration_limit"
    assert outcome.iterations == 4
    assert len(fake.requests) == 4
    assert "limit of 4 iterations" in outcome.summary
    assert outcome.summary.count("write_file(path='f") == 4 and outcome.summary.count("-> ok") == 4


def test_token_counts_are_summed_over_the_run(ws: Workspace) -> None:
    with FakeOllama([tool_call("list_files", {}), final_answer("done")], tokens=(100, 7)) as fake:
        _, outcome = run_loop(fake, ws)
    assert (outcome.tokens_in, outcome.tokens_out, outcome.iterations) == (200, 14, 2)


def test_a_model_server_that_keeps_failing_ends_as_model_unavailable(ws: Workspace) -> None:
    with FakeOllama([Raw(500, '{"error": "boom"}')] * 10) as fake:
        _, outcome = run_loop(fake, ws)
    assert outcome.status == "model_unavailable"
    assert "HTTP 500" in outcome.error


def test_a_garbage_reply_ends_the_run_as_failed_with_the_reason(ws: Workspace) -> None:
    with FakeOllama([Raw(200, "not json at all", "text/plain")]) as fake:
        _, outcome = run_loop(fake, ws)
    assert outcome.status == "failed"
    assert "not JSON" in outcome.error


def test_plan_mode_shows_only_safe_tools_and_denies_a_text_call_to_an_edit_tool(ws: Workspace) -> None:
    script = [
        {"content": '{"name": "write_file", "arguments": {"path": "p.txt", "content": "x"}}'},
        final_answer("planned"),
    ]
    with FakeOllama(script) as fake:
        run_loop(fake, ws, mode="plan")
    shown = {t["function"]["name"] for t in fake.requests[0]["tools"]}
    assert "write_file" not in shown and "run_command" not in shown and "read_file" in shown
    assert tool_results(fake.requests[-1])[0].startswith("Error: no tool named 'write_file'") or tool_results(
        fake.requests[-1]
    )[0].startswith("Denied:")
    assert not (ws.root / "p.txt").exists()


def test_events_cover_each_model_turn_and_tool_call(ws: Workspace) -> None:
    events: list[Any] = []
    with FakeOllama([tool_call("list_files", {}), final_answer("done")]) as fake:
        run_loop(fake, ws, events=events)
    kinds = [e.kind for e in events if e.kind != "messages"]
    assert kinds == ["run_started", "thinking", "model", "tool_started", "tool", "thinking", "model", "run_finished"]


def test_the_messages_events_hand_on_exactly_the_conversation_the_model_read(ws: Workspace) -> None:
    events: list[Any] = []
    with FakeOllama([tool_call("list_files", {}), final_answer("done")]) as fake:
        run_loop(fake, ws, events=events)
    kept: list[Any] = []
    for event in events:
        if event.kind == "messages":
            assert event.data["start"] == len(kept) and event.data["generation"] == 0
            kept.extend(event.data["messages"])
    assert kept[: len(fake.requests[-1]["messages"])] == fake.requests[-1]["messages"]
    assert kept[-1] == {"role": "assistant", "content": "done"}
    # a turn is kept before it is recorded: each model event follows the messages event holding its reply
    for n, event in enumerate(events):
        if event.kind == "model":
            assert events[n - 1].kind == "messages" and events[n - 1].data["messages"][0]["role"] == "assistant"


def test_edit_file_on_a_missing_file_is_told_to_create_it_with_write_file(ws: Workspace) -> None:
    """A 0.5B model asked to create greeting.txt called edit_file on it first."""
    script = [
        tool_call("edit_file", {"path": "greeting.txt", "old_text": "hi", "new_text": "hello"}),
        final_answer("x"),
    ]
    with FakeOllama(script) as fake:
        run_loop(fake, ws)
    result = tool_results(fake.requests[-1])[0]
    assert "Hint: greeting.txt does not exist yet; to create it, call write_file with its whole content." in result


def test_list_files_given_a_file_is_told_what_it_lists(ws: Workspace) -> None:
    (ws.root / "notes.txt").write_text("n\n")
    script = [
        tool_call("list_files", {"path": "notes.txt"}),
        tool_call("list_files", {"path": "gone"}),
        final_answer("x"),
    ]
    with FakeOllama(script) as fake:
        run_loop(fake, ws)
    for result in tool_results(fake.requests[-1]):
        assert 'Hint: list_files lists a directory: call it with path "." to see the workspace' in result
