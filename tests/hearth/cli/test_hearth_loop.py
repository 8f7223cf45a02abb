"""`hearth-loop` and `hearth runs/show` as real processes against the fake Ollama: exit codes and records."""

from __future__ import annotations

import json
import os
import pty
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, run_cli
from tests.fake_ollama import FakeOllama, Raw, final_answer, tool_call


def runs(state_dir: Path) -> list[dict[str, Any]]:
    conn = sqlite3.connect(state_dir / "audit.db")
    conn.row_factory = sqlite3.Row
    return [dict(r) for r in conn.execute("select * from runs order by rowid")]


def steps(state_dir: Path, run_id: str) -> list[dict[str, Any]]:
    conn = sqlite3.connect(state_dir / "audit.db")
    conn.row_factory = sqlite3.Row
    return [dict(r) for r in conn.execute("select * from steps where run_id = ? order by seq", [run_id])]


def loop(fake: FakeOllama | None, *args: str) -> Any:
    host = ["--ollama-host", fake.url] if fake else []
    return run_cli("hearth-loop", *host, *args)


def test_a_goal_runs_to_done_and_is_recorded_with_tokens_and_steps(state_dir: Path, tmp_path: Path) -> None:
    script = [tool_call("write_file", {"path": "hello.txt", "content": "hi"}), final_answer("Wrote hello.txt.")]
    (tmp_path / "config" / "agents" / "builder").mkdir(parents=True)
    (tmp_path / "config" / "agents" / "builder" / "AGENTS.md").write_text("You build things.\n")
    with FakeOllama(script, tokens=(120, 30)) as fake:
        proc = loop(fake, "--workspace", str(tmp_path / "ws"), "--agent-name", "builder", "write hello")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "ws" / "hello.txt").read_text() == "hi"
    [run] = runs(state_dir)
    assert run["status"] == "done" and run["agent_name"] == "builder" and run["model"] == "qwen2.5-coder"
    assert (run["tokens_in"], run["tokens_out"], run["iterations"]) == (240, 60, 2)
    assert run["summary"] == "Wrote hello.txt." and run["ended_at"] and run["latency_ms"] is not None
    assert [s["kind"] for s in steps(state_dir, run["id"])] == ["model", "tool", "model"]


def test_without_a_workspace_each_run_gets_a_fresh_one_under_the_state_dir(state_dir: Path) -> None:
    with FakeOllama([tool_call("write_file", {"path": "f", "content": "x"}), final_answer("ok")]) as fake:
        assert loop(fake, "go").returncode == 0
    [run] = runs(state_dir)
    assert run["workspace"] == str(state_dir / "agents" / run["id"])
    assert (state_dir / "agents" / run["id"] / "f").read_text() == "x"


def test_json_mode_prints_one_event_per_line_and_the_state_file_goes_with_the_run(
    state_dir: Path, tmp_path: Path
) -> None:
    with FakeOllama([tool_call("list_files", {}), final_answer("listed")]) as fake:
        proc = loop(fake, "--json", "--workspace", str(tmp_path), "list")
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [e["event"] for e in events] == [
        "run_started",
        "thinking",
        "model",
        "tool_started",
        "tool",
        "thinking",
        "model",
        "run_finished",
    ]
    run_id = events[0]["run_id"]
    assert not (state_dir / "state" / f"{run_id}.json").exists()  # live state lives as long as its run
    assert run_cli("hearth", "show", run_id, "--json").stdout.count('"status": "done"') == 1


def test_ollama_down_exits_4_and_records_the_error_and_latency(state_dir: Path) -> None:
    proc = run_cli("hearth-loop", "--ollama-host", "127.0.0.1:9", "do it")
    assert proc.returncode == 4
    assert "cannot reach Ollama at http://127.0.0.1:9" in proc.stderr
    [run] = runs(state_dir)
    assert run["status"] == "model_unavailable" and "cannot reach Ollama" in run["error"]
    assert run["duration_ms"] is not None and run["ended_at"]


def test_a_model_that_is_not_pulled_exits_4_saying_how_to_pull_it(state_dir: Path, fake: FakeOllama) -> None:
    proc = loop(fake, "--model", "mistral-nemo", "do it")
    assert proc.returncode == 4
    assert "ollama pull mistral-nemo" in proc.stderr
    assert runs(state_dir)[0]["status"] == "model_unavailable"


@pytest.mark.parametrize(
    ("reply", "code", "status", "reason"),
    [
        (Raw(200, "<<garbage>>", "text/plain"), 1, "failed", "not JSON"),
        (Raw(200, '{"done": true}'), 1, "failed", "without a message"),
        (Raw(500, '{"error": "GPU fell off"}'), 4, "model_unavailable", "HTTP 500: GPU fell off"),
    ],
    ids=["garbage", "no-message", "http-500"],
)
def test_a_broken_model_server_reply_is_one_line_a_record_and_an_exit_code(
    state_dir: Path, reply: Raw, code: int, status: str, reason: str
) -> None:
    with FakeOllama([reply] * 5) as fake:
        proc = loop(fake, "do it")
    assert proc.returncode == code
    assert reason in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    [run] = runs(state_dir)
    assert run["status"] == status and reason in run["error"]


def test_the_iteration_cap_exits_3_with_a_summary(state_dir: Path) -> None:
    with FakeOllama([tool_call("list_files", {})], repeat_last=True) as fake:
        proc = loop(fake, "--max-iters", "3", "loop forever")
    assert proc.returncode == 3
    [run] = runs(state_dir)
    assert run["status"] == "iteration_limit" and run["iterations"] == 3
    assert "list_files" in run["summary"]


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["   "], "the goal is empty"),
        (["--mode", "yolo", "go"], "unknown mode 'yolo'"),
        (["--max-iters", "0", "go"], "max iterations must be between 1 and 100"),
    ],
    ids=["empty-goal", "unknown-mode", "zero-iters"],
)
def test_bad_input_exits_2_and_is_recorded_as_rejected(state_dir: Path, args: list[str], reason: str) -> None:
    proc = run_cli("hearth-loop", *args)
    assert proc.returncode == 2
    assert reason in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    [run] = runs(state_dir)
    assert run["status"] == "rejected" and reason in run["error"]


def test_a_workspace_that_is_a_file_is_rejected(state_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "file.txt"
    target.write_text("keep me")
    proc = run_cli("hearth-loop", "--workspace", str(target), "go")
    assert proc.returncode == 2 and "is not a directory" in proc.stderr
    assert target.read_text() == "keep me"
    assert runs(state_dir)[0]["status"] == "rejected"


def test_an_unwritable_workspace_is_rejected(state_dir: Path) -> None:
    proc = run_cli("hearth-loop", "--workspace", "/proc/self", "go")  # not writable even for root
    assert proc.returncode == 2 and "is not writable" in proc.stderr
    assert runs(state_dir)[0]["status"] == "rejected"


def test_an_unwritable_state_dir_names_the_variable(state_dir: Path) -> None:
    proc = run_cli("hearth-loop", "go", env={"HEARTH_STATE_DIR": "/proc/hearth-state"})
    assert proc.returncode == 2
    assert "cannot write to the state directory /proc/hearth-state" in proc.stderr
    assert "HEARTH_STATE_DIR" in proc.stderr


def test_help_documents_every_exit_code() -> None:
    out = run_cli("hearth-loop", "--help").stdout
    for line in (
        "0    done",
        "1    failed",
        "2    bad usage",
        "3    iteration limit",
        "4    model unavailable",
        "130  interrupted",
        "70   internal error",
    ):
        assert line in out


def test_self_test_passes_every_check(state_dir: Path) -> None:
    proc = run_cli("hearth-loop", "--self-test")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert sum(line.startswith("pass  ") for line in lines) == 10
    assert "FAIL" not in proc.stdout
    [run] = runs(state_dir)
    assert run["source"] == "self-test" and run["status"] == "done"


def test_runs_and_show_replay_a_run_as_table_and_json(state_dir: Path, tmp_path: Path) -> None:
    with FakeOllama([tool_call("write_file", {"path": "a", "content": "b"}), final_answer("all good")]) as fake:
        loop(fake, "--workspace", str(tmp_path / "w"), "make a")
    listing = run_cli("hearth", "runs", "--json")
    [row] = json.loads(listing.stdout)
    assert row["status"] == "done"
    table = run_cli("hearth", "runs").stdout
    assert row["id"] in table and "make a" in table
    shown = json.loads(run_cli("hearth", "show", row["id"][:10], "--json").stdout)
    assert shown["run"]["id"] == row["id"]
    assert [s["kind"] for s in shown["steps"]] == ["model", "tool", "model"]
    text = run_cli("hearth", "show", row["id"]).stdout
    assert "write_file" in text and "summary: all good" in text


def test_show_of_an_unknown_run_is_a_one_line_error(state_dir: Path, fake: FakeOllama) -> None:
    fake.add(final_answer("x"))
    loop(fake, "anything")
    proc = run_cli("hearth", "show", "nope")
    assert proc.returncode == 2 and "no run with id 'nope'" in proc.stderr


def test_a_model_not_pulled_is_said_once_at_a_terminal_and_its_run_has_a_duration(
    state_dir: Path, fake: FakeOllama
) -> None:
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "hearth.cli.loop", "--ollama-host", fake.url, "--model", "qwen2.5-codr", "say hi"],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )
    os.close(slave)
    seen = b""
    while True:  # until the process closes the terminal
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: every writer is gone
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert proc.wait(timeout=30) == 4
    said = seen.decode()
    assert said.count("model qwen2.5-codr is not pulled") == 1, said  # the run's own last line, not again on stderr
    assert "== model_unavailable: model qwen2.5-codr is not pulled" in said
    [run] = runs(state_dir)
    assert run["status"] == "model_unavailable" and run["duration_ms"] is not None  # `hearth runs` has a took
