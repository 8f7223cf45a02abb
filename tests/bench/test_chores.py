"""bench/chores.py's parts on loopback fakes: each chore can be passed and is not passed untouched,
a run through hearth is read from its audit, the plain loop is the floor it claims to be, and the tap
reads what a server says of its prompt cache."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from agent.tools.builtin import TOOLS
from bench.chorekit.book import COMMON_TOOLS, Limits, check, load, pick, solve
from bench.chorekit.hearth_side import HearthSide
from bench.chorekit.plain import SYSTEM, PlainSide
from bench.chorekit.tap import Tap
from hearth.audit.store import AuditStore
from tests.conftest import ROOT, require
from tests.fake_ollama import FakeOllama, Held, final_answer, tool_call
from tests.fake_openai import FakeOpenAI
from tests.queue_support import wait_for

CHORES = load()


@pytest.fixture(autouse=True)
def sandbox() -> None:
    require("auto")  # every check runs in the command sandbox


def test_the_book_has_a_dozen_chores_with_files_inside_their_workspace() -> None:
    names = [chore.name for chore in CHORES]
    assert len(names) >= 12 and len(set(names)) == len(names)
    paths = [Path(path) for chore in CHORES for path in chore.files]
    assert paths and all(not p.is_absolute() and ".." not in p.parts for p in paths)
    assert all(chore.tools[: len(COMMON_TOOLS)] == COMMON_TOOLS and set(chore.tools) <= set(TOOLS) for chore in CHORES)


@pytest.mark.parametrize("chore", CHORES, ids=[chore.name for chore in CHORES])
def test_a_chore_fails_its_check_untouched_and_passes_once_done(chore, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    chore.prepare(workspace)
    assert not check(chore, workspace).passed
    assert solve(chore, workspace).passed
    assert check(chore, workspace).passed, check(chore, workspace).detail


def test_a_check_runs_in_the_sandbox_not_on_the_host(tmp_path: Path) -> None:
    [chore] = pick(CHORES, "greeting")
    workspace = tmp_path / "ws"
    chore.prepare(workspace)
    (tmp_path / "outside.txt").write_text("hello")  # beside the workspace: out of a command's sight
    (workspace / "greeting.txt").symlink_to(tmp_path / "outside.txt")
    assert not check(chore, workspace).passed


def test_an_unknown_chore_name_is_refused_with_the_names_there_are() -> None:
    with pytest.raises(ValueError, match="no chore named nope; the chores are: greeting, "):
        pick(CHORES, "greeting,nope")


def hearth_run(script: list, chore_name: str, tmp_path: Path):
    [chore] = pick(CHORES, chore_name)
    with FakeOllama(script) as fake, Tap(fake.url) as tap:
        side = HearthSide(fake.url, "qwen2.5-coder", tap, Limits(4, 120))
        return side.run(chore, 1, tmp_path), fake


def test_a_chore_through_hearth_is_read_from_its_audit_and_checked(tmp_path: Path) -> None:
    write = tool_call("write_file", {"path": "greeting.txt", "content": "hello\n"})
    run, fake = hearth_run([write, final_answer("wrote greeting.txt")], "greeting", tmp_path)
    assert (run.passed, run.status, run.turns, run.model_calls) == (True, "done", 2, 2)
    assert run.tokens_in > 0 and run.tokens_out > 0 and run.ttft_s is not None
    assert run.evaluated == [100, 100]  # Ollama's prompt_eval_count, as the tap read it
    assert [(c["tool"], c["ok"]) for c in run.calls] == [("write_file", True)]
    assert "wrote greeting.txt" in run.answer
    assert fake.requests[0]["model"] == "qwen2.5-coder"


def test_through_hearth_on_an_openai_server_the_audit_and_the_tap_agree_on_the_cache(tmp_path: Path) -> None:
    [chore] = pick(CHORES, "greeting")
    script = [tool_call("write_file", {"path": "greeting.txt", "content": "hello\n"}), final_answer("wrote it")]
    with FakeOpenAI(script, usage="llamacpp") as fake, Tap(fake.url) as tap:
        run = HearthSide(fake.host, "qwen2.5-coder", tap, Limits(4, 120, reply_tokens=300)).run(chore, 1, tmp_path)
    assert (run.passed, run.turns, run.model_calls) == (True, 2, 2)
    assert run.audit_cached == run.cached and run.cached[1] > 0  # hearth's tokens_cached, as the server said
    assert run.audit_prompt == run.prompt_tokens  # and each prompt's size
    assert run.audit_runaway == [False, False]  # no reply was cut for repeating itself
    assert [body["max_tokens"] for body in fake.requests] == [300, 300]  # --reply-tokens, passed on


def test_a_chore_hearth_leaves_undone_fails_its_check(tmp_path: Path) -> None:
    run, _ = hearth_run([final_answer("done, I think")], "greeting", tmp_path)
    assert (run.passed, run.checked, run.status, run.turns) == (False, False, "done", 1)
    assert run.detail.startswith("exit 1")


def test_work_done_without_an_end_is_checked_but_not_passed(tmp_path: Path) -> None:
    write = tool_call("write_file", {"path": "greeting.txt", "content": "hello\n"})
    looking = tool_call("list_files", {"path": "."})
    run, _ = hearth_run([write, looking, looking, looking, looking], "greeting", tmp_path)
    assert (run.checked, run.passed, run.status) == (True, False, "iteration_limit")


def test_the_knowledge_chore_finds_its_documents_in_hearths_knowledge_base(tmp_path: Path) -> None:
    search = tool_call("kb_search", {"query": "NAS backup"})
    write = tool_call("write_file", {"path": "backup_time.txt", "content": "02:30\n"})
    run, _ = hearth_run([search, write, final_answer("written")], "kb-answer", tmp_path)
    assert run.passed, run.calls
    assert "02:30" in run.calls[0]["output"]


def plain_run(script: list, chore_name: str, tmp_path: Path):
    [chore] = pick(CHORES, chore_name)
    with FakeOpenAI(script, usage="llamacpp") as fake, Tap(fake.url) as tap:
        return PlainSide("qwen2.5-coder", tap, Limits(4, 60, reply_tokens=300)).run(chore, 1, tmp_path), fake


def test_the_plain_loop_runs_the_tools_calls_and_sends_back_their_results(tmp_path: Path) -> None:
    script = [tool_call("write_file", {"path": "greeting.txt", "content": "hello"}), final_answer("Done.")]
    run, fake = plain_run(script, "greeting", tmp_path)
    assert (run.passed, run.status, run.turns, run.answer) == (True, "done", 2, "Done.")
    first, second = fake.requests
    goal = pick(CHORES, "greeting")[0].goal
    assert first["messages"] == [{"role": "system", "content": SYSTEM}, {"role": "user", "content": goal}]
    assert first["tools"] == [TOOLS[name].schema() for name in COMMON_TOOLS]  # hearth's tools, as hearth describes them
    assert first["max_tokens"] == 300
    said, answered = second["messages"][-2:]
    assert answered == {
        "role": "tool",
        "tool_call_id": said["tool_calls"][0]["id"],
        "content": "wrote 5 bytes to greeting.txt",
    }
    # llama.cpp's timings, read by the tap: the second prompt is the first one and more, mostly from the cache
    assert run.cached[0] == 0 and 0 < run.cached[1] < run.prompt_tokens[1]
    assert [e + c for e, c in zip(run.evaluated, run.cached)] == run.prompt_tokens
    assert run.tokens_in == sum(run.prompt_tokens)


def test_the_plain_loop_repairs_nothing(tmp_path: Path) -> None:
    as_text = final_answer('{"name": "write_file", "arguments": {"path": "greeting.txt", "content": "hello"}}')
    run, _ = plain_run([as_text], "greeting", tmp_path)
    assert (run.passed, run.status, run.turns, run.calls) == (False, "done", 1, [])
    assert run.answer.startswith('{"name": "write_file"')
    broken = tool_call("write_file", '{"path": "greeting.txt", "content": "hello"')
    run, fake = plain_run([broken, final_answer("Done.")], "greeting", tmp_path / "again")
    assert run.calls[0]["ok"] is False
    assert fake.requests[1]["messages"][-1]["content"].startswith("Error: JSONDecodeError: ")


def test_the_tap_times_a_streamed_reply_and_reads_its_cache_figures() -> None:
    with FakeOpenAI([final_answer("hi"), final_answer("again")], usage="llamacpp") as fake, Tap(fake.url) as tap:
        for _ in range(2):
            body = {"model": "qwen2.5-coder", "stream": True, "messages": [{"role": "user", "content": "hi there"}]}
            with httpx.stream("POST", f"{tap.url}/v1/chat/completions", json=body) as response:
                text = response.read().decode()
            assert text.count("data: ") >= 4 and text.endswith("data: [DONE]\n\n")  # passed on as it came
    first, second = tap.turns
    assert (first.cached_tokens, first.evaluated_tokens) == (0, first.prompt_tokens)
    assert (second.cached_tokens, second.evaluated_tokens) == (second.prompt_tokens, 0)  # the same prompt again
    assert second.completion_tokens == 20 and second.ttft_s is not None and second.ttft_s <= second.seconds


def test_the_tap_says_which_calls_another_client_came_between() -> None:
    """A server shared with another client may have given its prompt cache to that client's prompt
    between two of a run's calls: llama.cpp's /slots tells it, and the tap marks the later call."""

    def ask(tap: Tap) -> None:
        body = {"model": "qwen2.5-coder", "messages": [{"role": "user", "content": "hi there"}]}
        httpx.post(f"{tap.url}/v1/chat/completions", json=body, timeout=60).raise_for_status()

    script = [final_answer("one"), final_answer("two"), final_answer("three")]
    with FakeOpenAI(script, usage="llamacpp", slots=True) as fake, Tap(fake.url) as tap:
        ask(tap)
        ask(tap)
        fake.another_client()
        ask(tap)
    assert [turn.shared for turn in tap.turns] == [None, False, True]  # the first call has no call before it
    with FakeOpenAI([final_answer("one"), final_answer("two")]) as fake, Tap(fake.url) as tap:
        ask(tap)
        ask(tap)
    assert [turn.shared for turn in tap.turns] == [None, None]  # no /slots: not known


def test_without_a_server_the_bench_says_how_to_get_one_and_exits_0() -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "bench/chores.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1 and "HEARTH_REAL_MODEL_HOST" in done.stdout


def test_a_saved_json_output_is_shown_as_the_table(tmp_path: Path) -> None:
    run, _ = hearth_run([final_answer("nothing to do")], "greeting", tmp_path / "run")
    from bench.chorekit.figures import summary

    saved = {
        "model": "m",
        "host": "h",
        "max_iters": 4,
        "repeat": 1,
        "runs": [run.row()],
        "sides": {"hearth": summary([run])},
    }
    (tmp_path / "saved.json").write_text(json.dumps(saved))
    shown = subprocess.run(
        [sys.executable, "bench/chores.py", "--show", str(tmp_path / "saved.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr
    assert "greeting" in shown.stdout and "hearth passed 0/1 (0%)" in shown.stdout


def test_a_bench_stopped_from_outside_stops_the_run_under_way_which_records_its_end(tmp_path: Path) -> None:
    """A CI time limit stops the bench with SIGTERM; the hearth-loop it runs (in a session of its
    own, out of reach of a signal to the bench's group) is stopped with it, not left asking the model."""
    release = threading.Event()
    argv = [sys.executable, "bench/chores.py", "--side", "hearth", "--chores", "greeting", "--json"]
    with FakeOllama([Held(final_answer("never finished"), 1, release)]) as fake:
        argv += ["--host", fake.url, "--model", "qwen2.5-coder", "--keep", str(tmp_path / "kept")]
        env = {k: v for k, v in os.environ.items() if not k.startswith("HEARTH_")}
        with subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        ) as bench:
            try:
                wait_for(lambda: fake.requests, timeout=120, what="the loop's first model call")
                bench.send_signal(signal.SIGTERM)
                _, stderr = bench.communicate(timeout=120)
            finally:
                release.set()
    assert bench.returncode == 128 + signal.SIGTERM, stderr
    with AuditStore.read_only(tmp_path / "kept" / "hearth-greeting-1" / "state" / "audit.db") as audit:
        [run] = audit.runs(limit=1)
    assert run["status"] == "interrupted"
    assert len(fake.requests) == 1
