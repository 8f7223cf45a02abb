"""Live checks against real services. Skipped offline: this machine reaches no Ollama and no web."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent.model.backends import probe
from tests.conftest import run_cli

LIVE_HOST = os.environ.get("OLLAMA_HOST") or "127.0.0.1:11434"


@pytest.mark.live
def test_a_real_ollama_model_completes_a_small_goal(state_dir: Path, tmp_path: Path) -> None:
    models = probe(LIVE_HOST)
    if not models:
        pytest.skip(f"no Ollama answers at {LIVE_HOST}")
    proc = run_cli(
        "hearth-loop",
        "--ollama-host",
        LIVE_HOST,
        "--model",
        models[0],
        "--workspace",
        str(tmp_path),
        "--max-iters",
        "6",
        "Write hello.txt containing the word hello.",
        timeout=600,
    )
    assert proc.returncode in (0, 3), proc.stderr
