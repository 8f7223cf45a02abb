"""An MCP tool in a queued run as the hearth-agent@ unit runs it (tests/unit_harness.py: the unit's
environment and filesystem view, against tests/fake_ollama.py): in auto mode the dangerous tool
asks, the unit ends while it waits, the approval wakes a new unit that starts the server and
calls the tool, and `hearth show` tells the whole exchange."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hearth.queue.directory import Queue
from hearth.queue.request import Request
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.hearth.dispatch.test_suspend_resume import run_of
from tests.mcp_servers.declare import declare
from tests.nixunits import evaluate, needs_nix, write_units
from tests.queue_support import listing, wait_for
from tests.unit_harness import FakeSystemd, Host, needs_unit_view

pytestmark = [needs_nix, needs_unit_view]


@pytest.fixture(scope="module")
def agent_unit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("rendered")
    return write_units(evaluate({"enable": True}, tmp), tmp / "units")["hearth-agent@.service"]


def spawn(systemd: FakeSystemd, **extra: str) -> str:
    spawned = run_cli("hearth", "spawn", env={**systemd.env(), **extra})
    assert spawned.returncode == 0, spawned.stderr
    return spawned.stdout


def test_a_queued_auto_run_asks_before_an_mcp_tool_runs_it_once_approved_and_show_tells_it_all(
    state_dir: Path, tmp_path: Path, agent_unit: Path
) -> None:
    declare(tmp_path / "config")  # no risk given: write_note is dangerous, auto mode asks
    assert run_cli("hearth", "mcp", "approve", "toy", "write_note").returncode == 0
    queue = Queue(state_dir / "queue").ensure()
    queue.enqueue(Request(id="unitmcp", goal="write the note", mode="auto"))
    write = tool_call("toy__write_note", {"name": "from-the-unit.txt", "text": "approved in a unit"})
    with FakeOllama([write, final_answer("wrote the note")]) as fake:
        systemd = FakeSystemd(tmp_path, agent_unit, Host(state_dir, tmp_path / "config", fake.url))
        spawn(systemd, HEARTH_SUSPEND_AFTER_S="0")
        marker = state_dir / "harness" / "unitmcp.exit"
        wait_for(marker.exists, timeout=180, what="the unit to end while its run waits")
        assert run_of(state_dir, "unitmcp")["status"] == "waiting", (state_dir / "harness" / "unitmcp.log").read_text()
        [pending] = json.loads(run_cli("hearth", "approvals", "--json").stdout)
        assert pending["tool"] == "toy__write_note"
        assert run_cli("hearth", "approve", pending["id"]).returncode == 0
        assert "unitmcp.resume" in listing(queue.root)
        assert "resumed unitmcp" in spawn(systemd)
        wait_for(lambda: run_of(state_dir, "unitmcp").get("status") == "done", timeout=180, what="the run to end")
    workspace = Path(run_of(state_dir, "unitmcp")["workspace"])
    assert (workspace / "from-the-unit.txt").read_text() == "approved in a unit"
    shown = run_cli("hearth", "show", "unitmcp")
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "mcp toy: offered toy__write_note as approved (the server starts on first use)" in text
    assert "mcp toy: started; its tools are as approved" in text
    assert "toy__write_note" in text and "verdict=approved" in text and "approved by cli:" in text
    assert "wrote 18 characters to from-the-unit.txt" in text and "wrote the note" in text
