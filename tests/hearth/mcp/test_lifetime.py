"""An MCP server lives while its run uses it: it is started when the model first calls one of its
tools, and no process of it outlives the run, whether the run ends, is stopped mid-call or its
runner is killed outright. The toy server holds a lock on a file in the run's workspace for as
long as it lives (tests/mcp_servers/toy.py --lock): the lock taken says it started, the lock free
again says every process holding it is gone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, run_cli
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.mcp_servers.declare import declare
from tests.mcp_servers.support import calling, held, offered, served, servers_of, steps, until

RISKS = '[tools.echo]\nrisk = "safe"\n[tools.hang]\nrisk = "safe"\n'


def loop(fake: FakeOllama, workspace: Path, goal: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "hearth.cli.loop", "--ollama-host", fake.url, "--workspace", str(workspace), goal]
    return subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_a_run_that_calls_no_mcp_tool_is_offered_them_and_starts_no_server(state_dir: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    lock = workspace / "toy.lock"
    declare(tmp_path / "config", description=served(tmp_path), extra=RISKS, lock=lock)
    assert run_cli("hearth", "mcp", "approve", "toy", "echo").returncode == 0
    with FakeOllama([final_answer("nothing to call")]) as fake:
        done = run_cli("hearth-loop", "--ollama-host", fake.url, "--workspace", str(workspace), "hello")
    assert done.returncode == 0, done.stderr
    first = fake.requests[0]
    assert "toy__echo" in offered(first)
    assert not lock.exists()  # the server never started
    _, recorded = steps(state_dir)
    [mcp] = [json.loads(s["detail"]) for s in recorded if s["kind"] == "mcp"]
    assert mcp["line"] == "toy: offered toy__echo as approved (the server starts on first use)"


def test_the_server_starts_on_the_first_call_and_is_gone_when_the_run_ends(state_dir: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    lock = workspace / "toy.lock"
    declare(tmp_path / "config", description=served(tmp_path), extra=RISKS, lock=lock)
    assert run_cli("hearth", "mcp", "approve", "toy", "echo").returncode == 0
    script = [tool_call("toy__echo", {"text": "one"}), tool_call("toy__echo", {"text": "two"}), final_answer("ok")]
    with FakeOllama(script) as fake:
        done = run_cli("hearth-loop", "--ollama-host", fake.url, "--workspace", str(workspace), "echo twice")
    assert done.returncode == 0, done.stderr
    _, recorded = steps(state_dir)
    assert [s["output"] for s in recorded if s["kind"] == "tool"] == ["one", "two"]
    kinds = [s["kind"] for s in recorded if s["kind"] in ("mcp", "tool")]
    assert kinds == ["mcp", "tool", "mcp", "tool"]  # started inside the first call, once
    assert lock.read_text().strip().isdigit() and not held(lock)


def test_a_run_stopped_mid_call_stops_its_server_with_it(state_dir: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    lock, description = workspace / "toy.lock", served(tmp_path)
    declare(tmp_path / "config", description=description, extra=RISKS, timeout=120, lock=lock)
    assert run_cli("hearth", "mcp", "approve", "toy", "hang").returncode == 0
    with FakeOllama([tool_call("toy__hang", {}), final_answer("never")]) as fake:
        run = loop(fake, workspace, "hang")
        try:
            assert until(lambda: calling(state_dir, "toy__hang") and held(lock)), "the call never began"
            run.send_signal(signal.SIGTERM)
            assert run.wait(timeout=60) == 130
        finally:
            if run.poll() is None:
                run.kill()
    assert until(lambda: not held(lock), seconds=30), "the server outlived its stopped run"
    assert until(lambda: not servers_of(description), seconds=15), servers_of(description)
    stopped, _ = steps(state_dir)
    assert stopped["status"] == "interrupted"


def test_a_server_does_not_outlive_a_runner_killed_mid_call(state_dir: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    lock, description = workspace / "toy.lock", served(tmp_path)
    declare(tmp_path / "config", description=description, extra=RISKS, timeout=120, lock=lock)
    assert run_cli("hearth", "mcp", "approve", "toy", "hang").returncode == 0
    with FakeOllama([tool_call("toy__hang", {}), final_answer("never")]) as fake:
        run = loop(fake, workspace, "hang")
        try:
            assert until(lambda: calling(state_dir, "toy__hang") and held(lock)), "the call never began"
            run.send_signal(signal.SIGKILL)  # no handler runs: only the kernel can end the server now
            assert run.wait(timeout=60) == -signal.SIGKILL
        finally:
            if run.poll() is None:
                run.kill()
    assert until(lambda: not held(lock), seconds=30), "the server outlived its killed runner"
    assert until(lambda: not servers_of(description), seconds=15), servers_of(description)
