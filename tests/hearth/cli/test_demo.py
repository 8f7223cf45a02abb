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


def test_demo_uses_a_real_model_when_ollama_answers(state_dir: Path) -> None:
    with FakeOllama([final_answer("I would need tools for that.")], models=("llama3.2:3b",)) as fake:
        proc = run_cli("hearth", "demo", env={"OLLAMA_HOST": fake.url})
    assert proc.returncode == 0, proc.stderr
    assert f"using Ollama at {fake.url}" in proc.stdout
    assert fake.requests[0]["model"] == "llama3.2:3b"
    assert json.loads(json.dumps(fake.requests[0]["options"]))["num_ctx"] > 0
