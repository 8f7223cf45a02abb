"""Shared fixtures: a state directory per test, the fake Ollama, each OS sandbox, the command center,
and the CLIs as real processes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from agent.safety.sandbox import SandboxUnavailable, detect
from tests.fake_ollama import FakeOllama

if TYPE_CHECKING:
    from tests.web_support import Center

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "state"
    monkeypatch.setenv("HEARTH_STATE_DIR", str(path))
    monkeypatch.setenv("HEARTH_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("HEARTH_OLLAMA_BACKOFF_S", "0.01")
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    return path


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP listener on loopback that accepts nothing by itself: tests count who reached it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()


@pytest.fixture
def fake() -> Iterator[FakeOllama]:
    with FakeOllama() as server:
        yield server


def require(kind: str) -> str:
    """The sandbox `kind` as detect() names it; the test is skipped where this host has none."""
    try:
        return detect(kind)
    except SandboxUnavailable as exc:
        pytest.skip(f"{kind} is unavailable here: {exc}")


@pytest.fixture(params=["bwrap", "landlock"])
def kind(request: pytest.FixtureRequest) -> str:
    """Each OS sandbox in turn, skipped where it is unavailable."""
    return require(request.param)


@pytest.fixture
def center(state_dir: Path) -> Iterator[Center]:
    """The command center served for real on loopback, over this test's state directory."""
    from hearth.settings import Settings
    from tests.web_support import Center  # the web stack loads only for the tests that serve it

    with Center(Settings.from_env()) as served:
        yield served


def run_cli(
    program: str, *args: str, env: dict[str, str] | None = None, timeout: float = 60, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `hearth` or `hearth-loop` as a real process with the current interpreter."""
    module = {"hearth": "hearth.cli.main", "hearth-loop": "hearth.cli.loop"}[program]
    full_env = {**os.environ, **(env or {}), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        cwd=cwd or ROOT,
    )


# --- the real tier (make test-real): a real model server named by the environment ---------------

REAL_HOW = (
    "no real model server: set HEARTH_REAL_MODEL_HOST (openai+http://127.0.0.1:11501 for llama-server, "
    "http://HOST:PORT for an Ollama API) and HEARTH_REAL_MODEL, or run `make test-real` where the real-model cache is"
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `real` are skipped, with one line saying how to get a server, when none is named."""
    if os.environ.get("HEARTH_REAL_MODEL_HOST") and os.environ.get("HEARTH_REAL_MODEL"):
        return
    skip = pytest.mark.skip(reason=REAL_HOW)
    for item in items:
        if (
            item.get_closest_marker("real") is not None
        ):  # a marker, not a keyword: a clone may sit in a folder named real
            item.add_marker(skip)


@pytest.fixture(scope="session")
def real_server() -> tuple[str, str]:
    """The real model server's host (`openai+http://...` or an Ollama URL) and the model to ask."""
    return os.environ["HEARTH_REAL_MODEL_HOST"], os.environ["HEARTH_REAL_MODEL"]
