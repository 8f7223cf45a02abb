"""A run's limits and records inside a step: the time limit holds within a command, arguments are
sized before they are copied, capped tools stop, a repaired tool name and a tool that never
finished are in the audit, and the run row says what the run was allowed."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from agent.model.scripted import ScriptedModel
from agent.safety.sandbox import SandboxUnavailable, detect
from agent.safety.workspace import Workspace
from agent.services import RunServices
from agent.tools.gate import call_tool
from hearth import __version__
from hearth.run.goal import GoalRequest
from hearth.run.runner import run_goal
from hearth.settings import Settings
from tests.cli_support import run_cli_input
from tests.conftest import ROOT, run_cli
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.queue_support import drop, rows, wait_for


def needs_sandbox() -> None:
    try:
        detect("auto")
    except SandboxUnavailable as exc:
        pytest.skip(f"no command sandbox here: {exc}")


def test_a_command_s_timeout_is_cut_to_what_is_left_of_the_run_s_time_limit(state_dir: Path) -> None:
    needs_sandbox()
    slow = {"command": "sleep 6; echo late", "timeout_s": 60}
    reply = {"content": "", "tool_calls": [{"function": {"name": "run_command", "arguments": slow}}] * 2}
    drop(state_dir / "queue", "short.json", {"id": "short", "goal": "g", "mode": "bypass", "timeout_s": 2})
    with FakeOllama([reply], repeat_last=True) as fake:
        assert run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url}).returncode == 0
    [run] = rows(state_dir, "select status, error, duration_ms from runs")
    assert (run["status"], run["error"]) == ("failed", "stopped at the run's time limit")
    assert run["duration_ms"] < 6000  # the run's own record: it did not run for the 6 s a command asked
    outputs = [s["output"] for s in rows(state_dir, "select output from steps where kind = 'tool' order by seq")]
    assert re.match(r"Error: command timed out after [12](\.\d)?s and was killed", outputs[0])  # 60 s asked, <2 s left
    assert all("late" not in out for out in outputs) and len(outputs) == 1 and len(fake.requests) == 1


def test_a_repaired_tool_name_is_recorded_as_the_model_wrote_it(state_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    with FakeOllama([tool_call("functions.List_Files", {}), final_answer("listed")]) as fake:
        proc = run_cli("hearth-loop", "--ollama-host", fake.url, "--workspace", str(tmp_path / "ws"), "list")
    assert proc.returncode == 0, proc.stderr
    [step] = rows(state_dir, "select tool, called_as, verdict from steps where kind = 'tool'")
    assert step == {"tool": "list_files", "called_as": "functions.List_Files", "verdict": "run"}
    run_id = rows(state_dir, "select id from runs")[0]["id"]
    assert "list_files (written functions.List_Files) {}" in run_cli("hearth", "show", run_id).stdout


def test_a_run_killed_mid_command_still_shows_the_command_that_was_running(state_dir: Path, tmp_path: Path) -> None:
    needs_sandbox()
    (tmp_path / "ws").mkdir()
    command = "sleep 30 # the-marker"
    with FakeOllama([tool_call("run_command", {"command": command}), final_answer("never")]) as fake:
        loop = subprocess.Popen(
            [sys.executable, "-m", "hearth.cli.loop", "--ollama-host", fake.url, "--mode", "bypass"]
            + ["--workspace", str(tmp_path / "ws"), "run it"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        try:
            wait_for(lambda: _started(state_dir), what="the tool step to be recorded as started")
        finally:
            loop.send_signal(signal.SIGKILL)
            loop.communicate(timeout=30)
    [run] = rows(state_dir, "select id from runs")
    shown = run_cli("hearth", "show", run["id"]).stdout
    assert f'run_command {{"command": "{command}"}}  started, never completed' in shown


def _started(state_dir: Path) -> bool:
    try:
        return bool(rows(state_dir, "select 1 from steps where kind = 'tool' and verdict = 'started'"))
    except Exception:  # the audit is not there yet
        return False


def test_the_run_row_records_what_the_run_was_allowed_from_the_cli_and_the_queue(
    state_dir: Path, tmp_path: Path
) -> None:
    assert run_cli_input(["creds", "set", "TOKEN", "--host", "api.example.org"], "a-value-long-enough").returncode == 0
    (tmp_path / "ws").mkdir()
    with FakeOllama([final_answer("ok")], repeat_last=True) as fake:
        cli = run_cli(
            "hearth-loop",
            "--ollama-host",
            fake.url,
            "--workspace",
            str(tmp_path / "ws"),
            "--credential",
            "TOKEN",
            "--egress",
            "api.example.org",
            "--allowed-tools",
            "http_request,read_file",
            "--max-iters",
            "3",
            "--num-ctx",
            "4096",
            "g",
        )
        assert cli.returncode == 0, cli.stderr
        drop(state_dir / "queue", "q.json", {"id": "q", "goal": "g", "timeout_s": 90, "max_iterations": 7})
        assert run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url}).returncode == 0
    columns = "network, egress, credentials, allowed_tools, max_iterations, timeout_s, num_ctx, hearth_version, sandbox"
    from_cli, from_queue = rows(state_dir, f"select {columns} from runs order by id = 'q'")
    assert {**from_cli, "sandbox": bool(from_cli["sandbox"])} == {
        "network": 0,
        "egress": '["api.example.org"]',
        "credentials": '{"TOKEN": ["api.example.org"]}',
        "allowed_tools": '["http_request", "read_file"]',
        "max_iterations": 3,
        "timeout_s": None,
        "num_ctx": 4096,
        "hearth_version": __version__,
        "sandbox": True,
    }
    assert (from_queue["max_iterations"], from_queue["timeout_s"], from_queue["credentials"]) == (7, 90.0, "{}")
    shown = run_cli("hearth", "show", rows(state_dir, "select id from runs where id != 'q'")[0]["id"]).stdout
    assert (
        "allowed: commands have no network; web tools may reach only api.example.org; credentials TOKEN -> api.example.org;"
        in shown
    )


def test_hearth_s_version_is_pyproject_s() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    assert f'version = "{__version__}"' in text


BIG = 40_000_000  # characters: a flood of an argument, far over the gate's 2,000,000


def test_a_flood_of_an_argument_is_refused_before_it_is_copied(state_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    content = "x" * BIG
    tracemalloc.start()
    try:
        result = call_tool("write_file", {"path": "big.txt", "content": content}, tmp_path / "ws", mode="bypass")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not result.ok and "larger than 2000000 characters; nothing was run" in result.output
    assert peak < BIG // 4 and not (tmp_path / "ws" / "big.txt").exists()

    reply = {
        "content": "",
        "tool_calls": [{"function": {"name": "write_file", "arguments": {"path": "b", "content": content}}}],
    }
    model = ScriptedModel([reply, {"content": "gave up"}])
    request = GoalRequest(goal="write it", model="scripted", mode="bypass", workspace=tmp_path / "ws")
    tracemalloc.start()
    try:
        with open(os.devnull, "w") as devnull:
            _, outcome = run_goal(request, Settings.from_env(), model=model, out=devnull)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert outcome.status == "done" and peak < BIG // 2  # never a second copy, let alone a serialised one
    [step] = rows(state_dir, "select arguments from steps where kind = 'tool'")
    assert len(step["arguments"]) < 20_000 and "characters not stored" in step["arguments"]


def knowledge_ws(tmp_path: Path) -> Workspace:
    (tmp_path / "ws").mkdir(exist_ok=True)
    return Workspace(tmp_path / "ws", services=RunServices(knowledge_path=tmp_path / "knowledge.db"))


def test_remember_and_kb_add_are_capped_per_run(tmp_path: Path) -> None:
    with knowledge_ws(tmp_path) as ws:
        lessons = [call_tool("remember", {"lesson": f"lesson number {n}"}, ws, mode="bypass") for n in range(21)]
        docs = [call_tool("kb_add", {"text": f"document {n}", "source": f"s{n}"}, ws, mode="bypass") for n in range(51)]
    assert all(r.ok for r in lessons[:20]) and all(r.ok for r in docs[:50])
    assert lessons[20].output == "Error: remember already ran 20 times in this run, its limit; nothing was stored"
    assert docs[50].output == (
        "Error: kb_add (with fetch_to_kb) already ran 50 times in this run, its limit; nothing was stored"
    )
    with knowledge_ws(tmp_path) as ws:  # the next run has its own allowance
        assert call_tool("remember", {"lesson": "a new run"}, ws, mode="bypass").ok


def test_write_self_config_refuses_a_file_the_operator_changed_since_the_run_read_it(tmp_path: Path) -> None:
    repo = tmp_path / "config"
    repo.mkdir()
    (repo / "box.nix").write_text("{ a = 1; }\n")
    (tmp_path / "ws").mkdir()
    with Workspace(tmp_path / "ws", services=RunServices(config_repo=repo)) as ws:
        assert call_tool("read_self_config", {"path": "box.nix"}, ws, mode="auto").ok
        (repo / "box.nix").write_text("{ a = 1; b = 2; }\n")  # the operator, meanwhile
        stale = call_tool("write_self_config", {"path": "box.nix", "content": "{ a = 3; }\n"}, ws, mode="auto")
        assert call_tool("read_self_config", {"path": "box.nix"}, ws, mode="auto").ok
        fresh = call_tool("write_self_config", {"path": "box.nix", "content": "{ a = 3; b = 2; }\n"}, ws, mode="auto")
        again = call_tool("write_self_config", {"path": "box.nix", "content": "{ a = 4; b = 2; }\n"}, ws, mode="auto")
    assert (
        not stale.ok
        and "box.nix was changed by someone else since this run read it; nothing was written" in stale.output
    )
    assert fresh.ok and again.ok  # its own write is what it last saw
    assert (repo / "box.nix").read_text() == "{ a = 4; b = 2; }\n"


@pytest.mark.parametrize(
    ("reply", "written"),
    [
        (tool_call("list_files ", {}), "list_files "),
        (tool_call("list_files\n", {}), "list_files\n"),
        (tool_call(" \tlist_files", {}), " \tlist_files"),
        ({"content": '<tool_call>\n{"name": "list_files ", "arguments": {"path": "."}}\n</tool_call>'}, "list_files "),
        ({"content": '<tool_call>\n{"list_files\\n": {"path": "."}}\n</tool_call>'}, "list_files\n"),
    ],
    ids=["trailing-space", "trailing-newline", "leading-blanks", "text-name-key", "text-keyed-by-name"],
)
def test_a_name_repaired_from_whitespace_is_recorded_as_the_model_wrote_it(
    state_dir: Path, tmp_path: Path, reply: dict[str, object], written: str
) -> None:
    (tmp_path / "ws").mkdir()
    with FakeOllama([reply, final_answer("listed")]) as fake:
        proc = run_cli("hearth-loop", "--ollama-host", fake.url, "--workspace", str(tmp_path / "ws"), "list")
    assert proc.returncode == 0, proc.stderr
    [step] = rows(state_dir, "select tool, called_as, verdict from steps where kind = 'tool'")
    assert step == {"tool": "list_files", "called_as": written, "verdict": "run"}


def test_a_name_repaired_in_a_call_written_as_text_is_recorded_as_written(state_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    text = '<tool_call>\n{"name": "ListFiles", "arguments": {"path": "."}}\n</tool_call>'
    with FakeOllama([{"content": text}, final_answer("listed")]) as fake:
        proc = run_cli("hearth-loop", "--ollama-host", fake.url, "--workspace", str(tmp_path / "ws"), "list")
    assert proc.returncode == 0, proc.stderr
    [step] = rows(state_dir, "select tool, called_as from steps where kind = 'tool'")
    assert step == {"tool": "list_files", "called_as": "ListFiles"}


def test_fetch_to_kb_shares_kb_add_s_allowance_and_index_dir_has_a_file_allowance_per_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agent.tools.knowledge as knowledge_tools

    monkeypatch.setattr(knowledge_tools, "MAX_INDEXED_FILES_PER_RUN", 5)
    with knowledge_ws(tmp_path) as ws:
        docs = [call_tool("kb_add", {"text": f"document {n}", "source": f"s{n}"}, ws, mode="bypass") for n in range(50)]
        fetched = call_tool("fetch_to_kb", {"url": "http://127.0.0.1:9/page"}, ws, mode="bypass")
        for n in range(4):
            (ws.root / "notes" / f"n{n}.md").parent.mkdir(exist_ok=True)
            (ws.root / "notes" / f"n{n}.md").write_text(f"note {n}\n")
        first = call_tool("index_dir", {"path": "notes"}, ws, mode="bypass")
        second = call_tool("index_dir", {"path": "notes"}, ws, mode="bypass")
        third = call_tool("index_dir", {"path": "notes"}, ws, mode="bypass")
    assert all(r.ok for r in docs)
    assert fetched.output == (
        "Error: fetch_to_kb (with kb_add) already ran 50 times in this run, its limit; nothing was stored"
    )  # refused before any network traffic: port 9 on loopback was never tried
    assert first.ok and "4 text files" in first.output
    assert second.ok and "1 text files" in second.output and "stopped at 1 files" in second.output
    assert third.output == "Error: index_dir already read 5 files in this run, its limit"


def test_once_the_run_s_time_is_spent_no_command_request_or_search_goes_out(tmp_path: Path) -> None:
    from tests.netfixtures import Backend

    backend = Backend([{"title": "t", "href": "https://example.com", "body": "b"}])
    services = RunServices(search_backend=backend, knowledge_path=tmp_path / "knowledge.db")
    services.deadline = time.monotonic() - 1  # the run's time limit has passed
    (tmp_path / "ws").mkdir()
    with Workspace(tmp_path / "ws", services=services) as ws:
        calls = {
            "run_command": {"command": "touch ran"},
            "web_fetch": {"url": "https://example.com/"},
            "http_request": {"url": "https://example.com/"},
            "fetch_to_kb": {"url": "https://example.com/"},
            "web_search": {"query": "hearth"},
        }
        results = {name: call_tool(name, args, ws, mode="bypass").output for name, args in calls.items()}
    assert results["run_command"] == "Error: the run's time limit has been reached; the command was not started"
    for name in ("web_fetch", "http_request", "fetch_to_kb"):
        assert results[name] == "Error: the run's time limit has been reached; the request was not sent", name
    assert results["web_search"] == "Error: the run's time limit has been reached; the search was not sent"
    assert backend.calls == [] and not (tmp_path / "ws" / "ran").exists()
