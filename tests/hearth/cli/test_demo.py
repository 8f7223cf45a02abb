"""`hearth demo`: the scripted default with no Ollama, a real model when a server answers."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer


def test_demo_without_ollama_runs_the_scripted_job_for_real(state_dir: Path) -> None:
    proc = run_cli("hearth", "demo", env={"OLLAMA_HOST": "127.0.0.1:9"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "scripted demo model" in proc.stdout
    # the counts come from the script the sandbox really ran, not from the scripted model
    assert "'the' 6x, 'keeps' 3x" in proc.stdout
    conn = sqlite3.connect(state_dir / "audit.db")
    status, source, workspace = conn.execute("select status, source, workspace from runs").fetchone()
    assert (status, source) == ("done", "demo")
    assert (Path(workspace) / "wordcount.py").is_file()
    tools = [r[0] for r in conn.execute("select tool from steps where kind = 'tool' order by seq")]
    assert tools == ["write_file", "write_file", "run_command"]
    # each scripted turn reports its estimated tokens and its measured time, never 0 in / 0 out
    turns = conn.execute("select tokens_in, tokens_out, duration_ms from steps where kind = 'model'").fetchall()
    assert len(turns) == 4 and all(t_in > 0 and t_out > 0 and ms is not None for t_in, t_out, ms in turns)
    assert "(0 in / 0 out" not in proc.stdout and " out, 0.00s)" not in proc.stdout


def test_doctor_after_a_demo_says_the_demo_needs_no_ollama_and_exits_1(state_dir: Path) -> None:
    assert run_cli("hearth", "demo", env={"OLLAMA_HOST": "127.0.0.1:9"}).returncode == 0
    doctor = run_cli("hearth", "doctor", env={"OLLAMA_HOST": "127.0.0.1:9"})
    # 1: no real run can work without Ollama; the line says why the demo could
    assert doctor.returncode == 1
    assert "`hearth demo` needs no model server (it plays a scripted model); real runs do" in doctor.stdout


def test_demo_uses_a_real_model_when_ollama_answers(state_dir: Path) -> None:
    with FakeOllama([final_answer("I would need tools for that.")], models=("llama3.2:3b",)) as fake:
        proc = run_cli("hearth", "demo", env={"OLLAMA_HOST": fake.url})
    assert proc.returncode == 0, proc.stderr
    assert f"using Ollama at {fake.url}" in proc.stdout
    assert fake.requests[0]["model"] == "llama3.2:3b"
    assert json.loads(json.dumps(fake.requests[0]["options"]))["num_ctx"] > 0
