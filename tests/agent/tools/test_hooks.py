"""ToolRunner's hooks alone, on a real workspace without the appliance: a before hook that refuses or
stops the run, an after hook that sees what the model reads, and the order they are asked in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.loop import Event, Loop, StopRun
from agent.model.scripted import Reply, ScriptedModel
from agent.parsing import ToolCall
from agent.safety.workspace import Workspace
from agent.tools.gate import AfterHook, BeforeHook, ToolRunner
from agent.tools.registry import ToolResult


class Halted(StopRun):
    status = "halted"


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    root = tmp_path / "ws"
    root.mkdir()
    with Workspace(root) as handle:
        yield handle


def write(path: str = "a.txt", content: str = "alpha\n") -> ToolCall:
    return ToolCall("write_file", {"path": path, "content": content})


def calling(*calls: ToolCall) -> list[Reply]:
    """A scripted model's replies: these calls, one turn each, then an answer."""
    turns: list[Reply] = [
        {"content": "", "tool_calls": [{"function": {"name": c.name, "arguments": c.arguments}}]} for c in calls
    ]
    return [*turns, {"content": "finished"}]


def run_loop(runner: ToolRunner, *calls: ToolCall) -> tuple[str, list[Event], ScriptedModel]:
    events: list[Event] = []
    model = ScriptedModel(calling(*calls))
    outcome = Loop(model, runner, system_prompt="s", on_event=events.append).run("go")
    return outcome.status, events, model


def refusing(reason: str) -> BeforeHook:
    def hook(call: ToolCall) -> str | None:
        return reason if call.name == "write_file" else None

    return hook


def test_a_refusing_before_hook_keeps_the_tool_from_running(ws: Workspace) -> None:
    result = ToolRunner(ws, mode="bypass", before=[refusing("the wall says no")]).run(write())
    assert not result.ok and result.verdict == "denied"
    assert result.output.startswith("Denied: write_file was not run (the wall says no)")
    assert result.detail == {"reason": "the wall says no", "decided_by": "hook"}
    assert not (ws.root / "a.txt").exists()


def test_a_hooks_refusal_is_recorded_as_the_policys_denials_are(ws: Workspace) -> None:
    _, hooked, model = run_loop(ToolRunner(ws, mode="bypass", before=[refusing("not here")]), write())
    _, policed, _ = run_loop(ToolRunner(ws, mode="auto", allowed=["read_file"]), write())
    by_hook = next(e.data for e in hooked if e.kind == "tool")
    by_policy = next(e.data for e in policed if e.kind == "tool")
    assert by_hook.keys() == by_policy.keys()
    assert (by_hook["verdict"], by_hook["ok"]) == (by_policy["verdict"], by_policy["ok"]) == ("denied", False)
    assert model.requests[1][-1] == {"role": "tool", "content": by_hook["output"], "tool_name": "write_file"}


def test_a_refusal_leaves_the_runner_untouched(ws: Workspace) -> None:
    runner = ToolRunner(ws, mode="bypass", before=[refusing("no")])
    runner.run(write())
    assert runner.touched is False


def test_a_before_hook_that_raises_stoprun_ends_the_run_before_the_tool_runs(ws: Workspace) -> None:
    seen: list[ToolResult] = []

    def stop(call: ToolCall) -> None:
        raise Halted(f"{call.name} tripped a wire")

    runner = ToolRunner(ws, mode="bypass", before=[stop], after=[lambda call, result: seen.append(result)])
    status, events, _ = run_loop(runner, write())
    assert status == "halted"
    assert not (ws.root / "a.txt").exists() and seen == []
    assert events[-1].kind == "run_finished" and "write_file tripped a wire" in str(events[-1].data)


def test_an_after_hook_sees_the_call_and_the_result_the_model_reads(ws: Workspace) -> None:
    seen: list[tuple[ToolCall, ToolResult]] = []
    runner = ToolRunner(ws, mode="bypass", output_limit=200, after=[lambda call, result: seen.append((call, result))])
    call = ToolCall("run_command", {"command": "yes hearth | head -n 500"})
    result = runner.run(call)
    assert seen == [(call, result)]
    assert result.ok and result.truncated and len(result.output) <= 400  # capped before the hook saw it


def test_an_after_hook_sees_refusals_too(ws: Workspace) -> None:
    seen: list[str] = []
    runner = ToolRunner(
        ws, mode="auto", allowed=["read_file"], after=[lambda call, result: seen.append(result.verdict)]
    )
    runner.run(write())
    runner.run(ToolCall("reed_file", {"path": "a.txt"}))
    assert seen == ["denied", "unknown"]


def test_an_after_hook_that_raises_stoprun_ends_the_run_after_the_tool_ran(ws: Workspace) -> None:
    def stop(call: ToolCall, result: ToolResult) -> None:
        raise Halted("seen enough")

    status, _, model = run_loop(ToolRunner(ws, mode="bypass", after=[stop]), write(), write("b.txt"))
    assert status == "halted"
    assert (ws.root / "a.txt").read_text() == "alpha\n" and not (ws.root / "b.txt").exists()
    assert len(model.requests) == 1  # the model was not asked again


def test_hooks_are_asked_in_order_around_the_tool_and_the_first_refusal_ends_the_before_hooks(
    ws: Workspace,
) -> None:
    order: list[str] = []
    target = ws.root / "a.txt"

    def before(label: str, reason: str | None = None) -> BeforeHook:
        def hook(call: ToolCall) -> str | None:
            order.append(f"{label}:{'written' if target.exists() else 'unwritten'}")
            return reason

        return hook

    def after(label: str) -> AfterHook:
        def hook(call: ToolCall, result: ToolResult) -> None:
            order.append(f"{label}:{'written' if target.exists() else 'unwritten'}:{result.verdict}")

        return hook

    runner = ToolRunner(ws, mode="bypass", before=[before("b1"), before("b2")], after=[after("a1"), after("a2")])
    runner.run(write())
    assert order == ["b1:unwritten", "b2:unwritten", "a1:written:run", "a2:written:run"]

    order.clear()
    target.unlink()
    refuses = [before("b1"), before("b2", "no"), before("b3")]
    ToolRunner(ws, mode="bypass", before=refuses, after=[after("a1")]).run(write())
    assert order == ["b1:unwritten", "b2:unwritten", "a1:unwritten:denied"]  # b3 was never asked
    assert not target.exists()
