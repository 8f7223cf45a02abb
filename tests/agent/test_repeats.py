"""A call made again with nothing changed (agent/repeats.py), as real small models do: not run again,
the model told so, taken as done when its words say so, and the run ended `stuck` at the third."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.parsing.calls import ToolCall
from agent.repeats import STUCK_AFTER, Repeats
from agent.safety.workspace import Workspace
from tests.agent.test_loop import run_loop, tool_results
from tests.fake_ollama import FakeOllama, final_answer, tool_call

HELLO = tool_call("write_file", {"path": "hello.py", "content": "print('hello')\n"})
RUN = tool_call("run_command", {"command": "python3 hello.py"})


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    from agent.safety.sandbox import SandboxPolicy
    from agent.services import RunServices

    root = tmp_path / "ws"
    root.mkdir()
    with Workspace(root, services=RunServices(sandbox=SandboxPolicy(hide=(str(tmp_path / "state"),)))) as handle:
        yield handle


def test_a_call_that_worked_made_again_with_nothing_changed_is_answered_not_run(ws: Workspace) -> None:
    events: list[Any] = []
    with FakeOllama([HELLO, HELLO, final_answer("hello.py prints hello.")]) as fake:
        _, outcome = run_loop(fake, ws, events=events)
    assert outcome.status == "done"
    second = tool_results(fake.requests[-1])[1]
    assert second.startswith("Not run again: you made exactly this call in turn 1 and it worked")
    assert "reply with your final summary and no tool call" in second
    assert [e.data["verdict"] for e in events if e.kind == "tool"] == ["run", "repeat"]


def test_a_repeat_with_an_argument_the_tool_lacks_or_a_null_is_still_a_repeat(ws: Workspace) -> None:
    """The 0.5B model's second turn: its write again, with "bytes_written": 14 copied from the result."""
    again = tool_call(
        "write_file", {"path": "hello.py", "content": "print('hello')\n", "bytes_written": 14, "mode": None}
    )
    with FakeOllama([HELLO, again, final_answer("done")]) as fake:
        run_loop(fake, ws)
    assert tool_results(fake.requests[-1])[1].startswith("Not run again")


def test_the_same_call_after_a_change_runs_again(ws: Workspace) -> None:
    """pytest, an edit, pytest: the second run may show something new, so it runs."""
    edit = tool_call("write_file", {"path": "hello.py", "content": "print('hi')\n"})
    with FakeOllama([HELLO, RUN, edit, RUN, final_answer("prints hi")]) as fake:
        _, outcome = run_loop(fake, ws)
    results = tool_results(fake.requests[-1])
    assert outcome.status == "done" and not any(r.startswith("Not run again") for r in results)
    assert "hi" in results[3]


def test_three_repeats_in_a_row_end_the_run_stuck_with_what_it_did(ws: Workspace) -> None:
    """The 1.5B model's loop: write, run, and the same two again until the cap; here it ends at the third repeat."""
    script = [HELLO, RUN, HELLO, RUN, HELLO, RUN, HELLO, RUN]
    events: list[Any] = []
    with FakeOllama(script) as fake:
        _, outcome = run_loop(fake, ws, events=events)
    # write, run, write (a run came between: it runs), then the run, the write and the run repeat
    assert outcome.status == "stuck" and len(fake.requests) == 3 + STUCK_AFTER
    assert f"the same call {STUCK_AFTER} times in a row" in outcome.error
    assert "run_command(command='python3 hello.py') -> ok" in outcome.summary
    assert outcome.summary.endswith("run_command(command='python3 hello.py') -> repeated.")
    last = tool_results(fake.requests[-1])[-1]
    assert last.endswith("If you make it once more, the run stops.")
    assert events[-1].kind == "run_finished" and events[-1].data["status"] == "stuck"


def test_a_reply_repeating_a_call_that_worked_with_a_summary_beside_it_is_the_final_answer(ws: Workspace) -> None:
    """The 1.5B model ran hello.py, saw hello, then sent the same run with a summary in every reply."""
    summary = "I created hello.py and ran it; it prints hello."
    both = tool_call("run_command", {"command": "python3 hello.py"}, content=summary)
    written = {
        "content": f'{summary}\n```json\n{{"name": "run_command", "arguments": {{"command": "python3 hello.py"}}}}\n```'
    }
    for repeat in (both, written):
        events: list[Any] = []
        with FakeOllama([HELLO, RUN, repeat]) as fake:
            _, outcome = run_loop(fake, ws, events=events)
        assert (outcome.status, outcome.summary) == ("done", summary)
        assert [e.kind for e in events].count("tool") == 2  # the repeat was not run
        assert any(e.kind == "repeat" and e.data["taken_as"] == "final answer" for e in events)


def test_a_new_call_beside_a_summary_runs(ws: Workspace) -> None:
    """A call that was not made before is the model acting, whatever it says beside it."""
    acting = tool_call("run_command", {"command": "python3 hello.py"}, content="Now I will run it to check.")
    with FakeOllama([HELLO, acting, final_answer("prints hello")]) as fake:
        _, outcome = run_loop(fake, ws)
    assert outcome.status == "done" and "hello" in tool_results(fake.requests[-1])[1]


def test_a_signature_ignores_null_and_unknown_arguments_and_never_serialises_a_flood() -> None:
    repeats = Repeats({"read_file": ["path", "max_bytes"]})
    plain = ToolCall("read_file", {"path": "a"})
    assert repeats.signature(plain) == repeats.signature(ToolCall("read_file", {"path": "a", "max_bytes": None}))
    assert repeats.signature(plain) == repeats.signature(ToolCall("read_file", {"path": "a", "junk": 1}))
    assert repeats.signature(plain) != repeats.signature(ToolCall("read_file", {"path": "b"}))
    flood = repeats.signature(ToolCall("read_file", {"path": "x" * 5_000_000}))
    assert len(flood) < 5000
    deep: list[Any] = []
    for _ in range(100):
        deep = [deep]
    assert repeats.signature(ToolCall("read_file", {"path": deep})) != repeats.signature(
        ToolCall("read_file", {"path": deep})
    )
