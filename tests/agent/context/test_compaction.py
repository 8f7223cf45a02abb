"""Compaction on long scripted runs: the window holds, the prefix rule breaks only when recorded."""

from __future__ import annotations

import io
import json
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.context.compaction import HEADING, Compactor, RunningCount, Usage, estimate_tokens, message_chars
from agent.model.reply import ChatReply
from agent.tools.spill import SPILL_DIR, spill_threshold
from hearth.run.goal import GoalRequest
from hearth.run.runner import run_goal
from hearth.settings import Settings
from tests.fake_ollama import FakeOllama, Raw, assert_every_request_legal, final_answer, tool_call

NUM_CTX = 4096  # small enough that twelve reads of 1,700 characters need compacting twice
SPILL_CTX = 4096  # the smallest window that holds the prompt and tools; its spill threshold is 2,730
GOAL = "Read every fNN.txt file and report what they hold."
SUMMARY = "SUMMARY-FROM-MODEL: files f00 to f03 hold numbered lines of x."


def reader(count: int, summary: Any = None) -> Callable[[dict[str, Any]], Any]:
    """Reads f00..f{count-1}, then answers; a request without tools is the summariser's."""
    reads = iter(range(count))

    def reply(body: dict[str, Any]) -> Any:
        if not body.get("tools"):
            return summary if summary is not None else final_answer(SUMMARY)
        i = next(reads, None)
        return tool_call("read_file", {"path": f"f{i:02d}.txt"}) if i is not None else final_answer("read them all")

    return reply


def long_run(
    tmp_path: Path, state_dir: Path, script: Any, *, files: int = 12, size: int = 1700
) -> tuple[FakeOllama, str]:
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(files):
        (ws / f"f{i:02d}.txt").write_text("".join(f"{i:02d}-{n:03d} " + "x" * 40 + "\n" for n in range(size // 48)))
    with FakeOllama([script], repeat_last=True) as fake:
        settings = Settings.from_env(
            {"HEARTH_STATE_DIR": str(state_dir), "HEARTH_CONFIG_DIR": str(tmp_path / "cfg"), "OLLAMA_HOST": fake.url}
        )
        # a profile for a small window narrows the tools: every schema costs context
        request = GoalRequest(
            goal=GOAL,
            workspace=ws,
            num_ctx=NUM_CTX,
            max_iters=40,
            mode="bypass",
            allowed_tools=["read_file", "list_files"],
        )
        run_id, outcome = run_goal(request, settings, out=io.StringIO())
    assert outcome.status == "done", outcome.error
    return fake, run_id


def assert_tail_is_verbatim(kept: list[dict[str, Any]], ws: Path) -> None:
    """The kept messages are whole turns: each read_file call followed by the file's exact text."""
    assert kept[0]["role"] == "assistant"
    for call, result in zip(kept[::2], kept[1::2]):
        path = call["tool_calls"][0]["function"]["arguments"]["path"]
        assert result == {"role": "tool", "content": (ws / path).read_text(), "tool_name": "read_file"}


def main_requests(fake: FakeOllama) -> list[dict[str, Any]]:
    return [r for r in fake.requests if r.get("tools")]


def compactions(state_dir: Path, run_id: str) -> list[dict[str, Any]]:
    conn = sqlite3.connect(state_dir / "audit.db")
    conn.row_factory = sqlite3.Row
    return [dict(r) for r in conn.execute("select * from steps where run_id = ? and kind = 'compaction'", [run_id])]


def test_a_long_run_is_compacted_and_every_request_fits_the_window(tmp_path: Path, state_dir: Path) -> None:
    fake, run_id = long_run(tmp_path, state_dir, reader(12))
    requests = main_requests(fake)
    assert len(requests) == 13
    steps = compactions(state_dir, run_id)
    assert len(steps) >= 2
    for request in requests:
        assert estimate_tokens(request["messages"], request["tools"]) < NUM_CTX
    data = [json.loads(s["data"]) for s in steps]
    assert all(d["after_chars"] < d["before_chars"] and d["after_tokens"] < d["before_tokens"] for d in data)
    assert all(d["summary_by"] == "model" and d["summarised"] >= 2 for d in data)
    # each compaction lands near half the window, so the next one is turns away, not every turn
    assert all(d["after_tokens"] <= 0.55 * NUM_CTX for d in data)
    assert len(steps) <= 4


def test_the_prefix_breaks_only_at_a_recorded_compaction_and_holds_before_and_after(
    tmp_path: Path, state_dir: Path
) -> None:
    fake, run_id = long_run(tmp_path, state_dir, reader(12))
    requests = main_requests(fake)
    breaks = []
    for i, (earlier, later) in enumerate(zip(requests, requests[1:])):
        assert later["messages"][0] == earlier["messages"][0]  # the system prompt never changes
        if later["messages"][: len(earlier["messages"])] != earlier["messages"]:
            breaks.append(i + 1)
            assert_tail_is_verbatim(later["messages"][2:], tmp_path / "ws")
    # each break is the request right after a recorded compaction (request k is iteration k + 1)
    assert breaks == [step["iteration"] - 1 for step in compactions(state_dir, run_id)]
    assert_every_request_legal(requests)
    goal_message = requests[breaks[0]]["messages"][1]["content"]
    assert goal_message.startswith(f"{GOAL}\n\n{HEADING}") and SUMMARY in goal_message
    assert "reference only" in goal_message


def test_nudges_before_and_after_a_compaction_leave_no_made_up_user_message(tmp_path: Path, state_dir: Path) -> None:
    reads, turns = reader(12), iter(range(1_000))

    def script(body: dict[str, Any]) -> Any:
        if body.get("tools") and next(turns) in (3, 4, 14, 15):  # empty, and empty again when asked again
            return {"content": ""}
        return reads(body)

    fake, run_id = long_run(tmp_path, state_dir, script)
    assert compactions(state_dir, run_id)
    conn = sqlite3.connect(state_dir / "audit.db")
    assert conn.execute("select count(*) from steps where run_id = ? and kind = 'nudge'", [run_id]).fetchone() == (2,)
    assert_every_request_legal(fake.requests)


def test_the_summariser_gets_the_goal_and_the_middle_without_tools(tmp_path: Path, state_dir: Path) -> None:
    fake, _ = long_run(tmp_path, state_dir, reader(12))
    summary_requests = [r for r in fake.requests if not r.get("tools")]
    assert summary_requests and "tools" not in summary_requests[0]
    system, user = summary_requests[0]["messages"]
    assert system["role"] == "system" and "working notes" in system["content"]
    assert user["content"].startswith(f"Goal:\n{GOAL}") and "[called read_file" in user["content"]
    assert "Earlier notes:\n" + SUMMARY in summary_requests[1]["messages"][1]["content"]


def test_when_the_summary_call_fails_a_deterministic_step_list_is_used(tmp_path: Path, state_dir: Path) -> None:
    fake, run_id = long_run(tmp_path, state_dir, reader(12, summary=Raw(200, "not json", "text/plain")))
    [first, *_] = [json.loads(s["data"]) for s in compactions(state_dir, run_id)]
    assert first["summary_by"] == "fallback" and "not JSON" in first["error"]
    requests = main_requests(fake)
    compacted = next(r for r in requests if HEADING in r["messages"][1]["content"])
    assert "- read_file(path='f00.txt') -> ok: 00-000 xxx" in compacted["messages"][1]["content"]


def test_compaction_shows_in_hearth_show_with_sizes(tmp_path: Path, state_dir: Path) -> None:
    _, run_id = long_run(tmp_path, state_dir, reader(12))
    [step, *_] = compactions(state_dir, run_id)
    assert (
        step["detail"].startswith("compacted the conversation: ~")
        and "messages summarised by the model" in step["detail"]
    )
    assert step["output"] == SUMMARY


def test_a_big_tool_output_is_spilled_to_the_workspace_with_a_preview(tmp_path: Path, state_dir: Path) -> None:
    lines = [f"row {n:05d} " + "y" * 50 for n in range(800)]
    script = [tool_call("read_file", {"path": "big.txt"}), final_answer("noted")]
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "big.txt").write_text("\n".join(lines) + "\n")
    with FakeOllama(script) as fake:
        settings = Settings.from_env(
            {"HEARTH_STATE_DIR": str(state_dir), "HEARTH_CONFIG_DIR": str(tmp_path / "cfg"), "OLLAMA_HOST": fake.url}
        )
        run_id, _ = run_goal(GoalRequest(goal="g", workspace=ws, num_ctx=SPILL_CTX), settings, out=io.StringIO())
    result = [m for m in fake.requests[-1]["messages"] if m["role"] == "tool"][0]["content"]
    saved = f"{SPILL_DIR}/{run_id}-001-read_file.txt"
    assert len(result) < spill_threshold(SPILL_CTX)
    assert result.startswith("row 00000") and result.rstrip().endswith(lines[-1])
    assert f"The whole output is saved in {saved}" in result and "48,800 characters, 801 lines" in result
    assert (ws / saved).read_text() == (ws / "big.txt").read_text()
    [history] = (state_dir / "checkpoints").iterdir()  # hearth's own git directory of the workspace
    tracked = subprocess.run(
        ["git", "--git-dir", str(history), "--work-tree", str(ws), "ls-files"], capture_output=True, text=True
    ).stdout
    assert "big.txt" in tracked and SPILL_DIR not in tracked  # the run's scratch is never checkpointed


def test_a_spilled_output_can_be_read_back_in_pages(tmp_path: Path, state_dir: Path) -> None:
    ws = tmp_path / "ws"
    (ws / SPILL_DIR).mkdir(parents=True)
    (ws / SPILL_DIR / "r-001-run_command.txt").write_text("".join(f"out {n}\n" for n in range(1, 5001)))
    script = [
        tool_call("read_file", {"path": f"{SPILL_DIR}/r-001-run_command.txt", "start_line": 4001, "max_bytes": 60}),
        final_answer("ok"),
    ]
    with FakeOllama(script) as fake:
        settings = Settings.from_env(
            {"HEARTH_STATE_DIR": str(state_dir), "HEARTH_CONFIG_DIR": str(tmp_path / "cfg"), "OLLAMA_HOST": fake.url}
        )
        run_goal(GoalRequest(goal="g", workspace=ws, num_ctx=SPILL_CTX), settings, out=io.StringIO())
    page = [m for m in fake.requests[-1]["messages"] if m["role"] == "tool"][0]["content"]
    assert page.startswith("out 4001\nout 4002\n")
    assert page.endswith("[read_file: lines 4001-4006 of 5000; start_line=4007 reads on]")


def test_the_estimate_takes_the_larger_of_the_servers_count_and_characters() -> None:
    messages = [{"role": "system", "content": "s" * 400}, {"role": "user", "content": "u" * 400}]
    by_chars = estimate_tokens(messages, [])
    assert by_chars == (800 + 32) // 4
    assert estimate_tokens(messages, [], Usage(prompt_tokens=5000, messages=2)) == 5000
    grown = [*messages, {"role": "assistant", "content": "a" * 4000}]
    assert estimate_tokens(grown, [], Usage(prompt_tokens=10, messages=2)) == estimate_tokens(grown, [])


class NoModel:
    model = "none"

    def chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], schema: dict[str, Any] | None = None
    ) -> ChatReply:
        raise AssertionError("not called")


def conversation(turns: int, size: int = 600) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "sys"}, {"role": "user", "content": "goal"}]
    for i in range(turns):
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"function": {"name": "read_file", "arguments": {"path": f"f{i}"}}}],
            }
        )
        messages.append({"role": "tool", "content": f"content {i} " + "z" * size, "tool_name": "read_file"})
    return messages


def test_a_conversation_that_fits_is_left_alone() -> None:
    assert Compactor(8192).maybe_compact(conversation(3), [], None) is None


def test_the_kept_tail_starts_at_an_assistant_turn_and_a_second_compaction_carries_the_first() -> None:
    compactor = Compactor(1024)
    compacted, first = compactor.maybe_compact(conversation(8), [], None)
    assert compacted[2]["role"] == "assistant" and first.summary_by == "fallback"
    assert "- read_file(path='f0') -> ok: content 0" in first.summary
    grown = compacted + conversation(12)[2 + 2 * 8 :]
    again, second = compactor.maybe_compact(grown, [], None)
    assert second.summary.startswith(first.summary)
    assert again[1]["content"].startswith("goal\n\n" + HEADING) and again[1]["content"].count(HEADING) == 1


def test_the_running_count_agrees_with_a_full_count_and_restarts_on_a_new_history() -> None:
    history: list[dict[str, Any]] = [{"role": "system", "content": "s" * 40}, {"role": "user", "content": "goal"}]
    count = RunningCount()
    assert count(history) == message_chars(history)
    history += [
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "x", "arguments": {}}}]},
        {"role": "tool", "content": "out" * 100},
    ]
    assert count(history) == message_chars(history)
    compacted = history[:2]  # what a compaction hands over: a new, shorter list
    assert count(compacted) == message_chars(compacted)
