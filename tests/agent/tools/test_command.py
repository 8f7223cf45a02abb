"""run_command through call_tool, under real bwrap and real Landlock: what it can never do."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.net.cmdproxy import CommandProxy
from agent.net.guard import NetGuard
from agent.safety.sandbox import SandboxPolicy, SandboxUnavailable, detect
from agent.safety.workspace import Workspace
from agent.services import RunServices
from agent.tools.gate import call_tool
from agent.tools.registry import ToolResult
from tests.walls_support import accepted, wait_until_gone

PY = sys.executable
REPO = Path(__file__).resolve().parents[3]
EXPOSE = (str(REPO), sys.prefix, sys.base_prefix)  # the venv's interpreter, outside the system paths


@pytest.fixture
def base() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="hearth-command-", dir="/var/tmp"))  # not under bwrap's private /tmp
    (path / "state" / "agents" / "run").mkdir(parents=True)
    (path / "state" / "audit.db").write_text("AUDIT-CANARY")
    yield path
    shutil.rmtree(path)


def workspace(base: Path, kind: str, **policy: object) -> Workspace:
    policy.setdefault("expose", EXPOSE)
    services = RunServices(sandbox=SandboxPolicy(kind=kind, hide=(str(base / "state"),), **policy))  # type: ignore[arg-type]
    if services.sandbox.network:
        services.command_proxy = CommandProxy(NetGuard())
    return Workspace(base / "state" / "agents" / "run", services=services)


def run(ws: Workspace, command: str, **args: object) -> ToolResult:
    return call_tool("run_command", {"command": command, **args}, ws, mode="bypass")


def test_run_command_works_in_the_workspace(base: Path, kind: str) -> None:
    with workspace(base, kind) as ws:
        result = run(ws, "echo made > made.txt && cat made.txt && pwd")
    assert result.ok and result.output == f"made\n{ws.root}\n\n[exit code 0]"


def test_run_command_cannot_write_outside_the_workspace(base: Path, kind: str) -> None:
    outside = base / "outside"
    outside.mkdir()
    (outside / "keep").write_text("keep")
    canary = f"/etc/hearth-canary-{secrets.token_hex(4)}"
    attempts = [
        f"echo x > {outside}/new",
        f": > {outside}/keep",
        f"touch {canary}",
        "echo x > ../escape",
        f"echo x > {base}/state/audit.db",
        f"mkdir {outside}/dir",
        f"ln -s /etc {outside}/link",
        f"cp /etc/hostname {base}/state/",
        f'{PY} -c \'open("{outside}/py", "w")\'',
    ]
    with workspace(base, kind) as ws:
        result = run(ws, "; ".join(f"({a}) 2>/dev/null || echo refused" for a in attempts))
    assert result.output.split()[:-3] == ["refused"] * len(attempts)
    assert sorted(os.listdir(outside)) == ["keep"] and (outside / "keep").read_text() == "keep"
    assert (base / "state" / "audit.db").read_text() == "AUDIT-CANARY"
    assert not os.path.lexists(canary) and not (base / "state" / "agents" / "escape").exists()


def test_run_command_cannot_see_the_state_dir_under_bwrap(base: Path) -> None:
    try:
        detect("bwrap")
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))
    with workspace(base, "bwrap") as ws:
        result = run(ws, f"cat {base}/state/audit.db; ls -A {base}/state")
    assert result.output.splitlines() == [
        f"cat: {base}/state/audit.db: No such file or directory",
        "agents",
        "",
        "[exit code 0]",
    ]


def connect(server: socket.socket) -> str:
    port = server.getsockname()[1]
    return f"{PY} -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('connected')\""


def test_run_command_cannot_reach_a_loopback_listener_without_network(
    base: Path, kind: str, listener: socket.socket
) -> None:
    with workspace(base, kind) as ws:
        result = run(ws, connect(listener))
    assert not result.ok and "connected" not in result.output
    assert accepted(listener) == 0


def test_with_network_granted_a_loopback_listener_is_still_out_of_reach(
    base: Path, kind: str, listener: socket.socket
) -> None:
    """Granted network is the proxy only: the host's loopback is another namespace's."""
    with workspace(base, kind, network=True) as ws:
        result = run(ws, connect(listener))
    assert not result.ok and "connected" not in result.output
    if kind == "landlock":
        assert "Landlock cannot confine a command's TCP to the run's proxy" in result.output
    assert accepted(listener) == 0


def test_a_timeout_kills_the_command_and_leaves_no_process_behind(base: Path, kind: str) -> None:
    marker = f"4{secrets.randbelow(10**6):06d}"
    with workspace(base, kind) as ws:
        result = run(ws, f"sleep {marker} & (sleep {marker}; echo never) & sleep {marker}", timeout_s=1)
    assert not result.ok and result.output.startswith("Error: command timed out after 1s and was killed")
    assert wait_until_gone(marker) == []


def test_the_environment_carries_no_credentials(base: Path, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    canary = secrets.token_hex(8)
    for name in ("HEARTH_API_TOKEN", "HEARTH_STATE_DIR", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "OLLAMA_HOST"):
        monkeypatch.setenv(name, canary)
    with workspace(base, kind) as ws:
        result = run(ws, "env; cat /proc/self/environ")
    assert result.ok and canary not in result.output


def test_limits_on_memory_file_size_and_processes_are_set(base: Path, kind: str) -> None:
    with workspace(base, kind, file_size_bytes=1 << 20, max_procs=64) as ws:
        result = run(
            ws,
            f"grep -E '^Max (processes|file size)' /proc/self/limits; "
            f"head -c 3000000 /dev/zero > big; {PY} -c 'bytearray(4 << 30)'",
        )
    assert not result.ok
    lines = result.output.splitlines()
    assert lines[1].split() == ["Max", "file", "size", "1048576", "1048576", "bytes"]
    assert lines[2].split() == ["Max", "processes", "64", "64", "processes"]
    assert "MemoryError" in result.output
    assert (ws.root / "big").stat().st_size <= 1 << 20


def test_output_is_capped_and_the_exit_code_reported(base: Path, kind: str) -> None:
    with workspace(base, kind) as ws:
        big = run(ws, "seq 1 100000")
        failed = run(ws, "echo oops >&2; exit 3")
    assert big.ok and big.truncated and "characters cut" in big.output
    assert not failed.ok and failed.output == "Error: command failed [exit code 3]\noops"


def test_run_command_refuses_when_no_sandbox_can_be_set_up(base: Path) -> None:
    script = (
        "import sys\nfrom agent.hearth_tools import call_tool\nfrom agent.safety.sandbox import SandboxPolicy\n"
        "from agent.services import RunServices\nfrom agent.safety.workspace import Workspace\n"
        "ws = Workspace(sys.argv[1], services=RunServices(sandbox=SandboxPolicy(kind='bwrap')))\n"
        "print(call_tool('run_command', {'command': 'touch ran'}, ws, mode='bypass').output)\n"
    )
    ws_root = base / "state" / "agents" / "run"
    # a real process with no bwrap on its PATH, so setting up the asked sandbox really fails
    done = subprocess.run(
        [PY, "-c", script, str(ws_root)],
        cwd=REPO,
        env={"PATH": str(ws_root)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.stdout.startswith("Error: run_command refused: no command sandbox can be set up here"), done.stderr
    assert not (ws_root / "ran").exists()


def test_sandbox_none_runs_without_a_wall_only_because_it_was_asked_for(base: Path) -> None:
    with workspace(base, "none") as ws:
        result = run(ws, f"cat {base}/state/audit.db")
    assert result.ok and "AUDIT-CANARY" in result.output  # exactly why `none` is documented as unsafe
