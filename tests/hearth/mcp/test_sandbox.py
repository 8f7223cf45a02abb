"""A stdio MCP server started by hearth runs inside the command sandbox (bubblewrap): as nobody,
under the seccomp filter and the rlimits, the workspace its only writable path, hearth's state
hidden. The server's own tools are the probe: what it can read and write is what it is allowed."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.safety.sandbox import SandboxPolicy, SandboxUnavailable, detect
from agent.tools.mcp.client import Connection, McpFailed
from hearth.mcp.config import load_server
from hearth.mcp.launch import connection
from hearth.settings import Settings
from tests.mcp_servers.declare import declare


def bwrap_works() -> bool:
    try:
        return detect("auto") == "bwrap"
    except SandboxUnavailable:
        return False


pytestmark = pytest.mark.skipif(not bwrap_works(), reason="bubblewrap does not work here")


@pytest.fixture
def walled(tmp_path: Path) -> Iterator[tuple[Connection, Path, Path]]:
    workspace, state = tmp_path / "ws", tmp_path / "state"
    workspace.mkdir()
    state.mkdir()
    (state / "audit.db").write_text("the audit")
    config = load_server(declare(tmp_path / "config"))
    settings = Settings.from_env({"HEARTH_STATE_DIR": str(state), "HEARTH_CONFIG_DIR": str(tmp_path / "config")})
    server = connection(config, settings, workspace, SandboxPolicy(kind="auto", hide=(str(state),)))
    yield server, workspace, state
    server.close()


def test_the_server_runs_as_nobody_under_seccomp_with_no_core_dumps(walled: tuple[Connection, Path, Path]) -> None:
    server, _, _ = walled
    status = dict(
        line.split(":", 1) for line in server.call("read_note", {"name": "/proc/self/status"}, 30).splitlines()
    )
    assert status["Uid"].split()[0] == "65534" and status["Seccomp"].strip() == "2"
    assert status["NoNewPrivs"].strip() == "1"
    limits = server.call("read_note", {"name": "/proc/self/limits"}, 30)
    assert any(line.startswith("Max core file size") and line.split()[4] == "0" for line in limits.splitlines())


def test_the_workspace_is_writable_and_hearths_state_is_not_there(walled: tuple[Connection, Path, Path]) -> None:
    server, workspace, state = walled
    server.call("write_note", {"name": "made.txt", "text": "inside"}, 30)
    assert (workspace / "made.txt").read_text() == "inside"
    with pytest.raises(McpFailed):
        server.call("read_note", {"name": str(state / "audit.db")}, 30)
    with pytest.raises(McpFailed):
        server.call("write_note", {"name": "/tmp/../etc/escaped", "text": "x"}, 30)
    with pytest.raises(McpFailed):
        server.call("write_note", {"name": str(Path(sys.prefix) / "planted.py"), "text": "x"}, 30)
    assert not (Path(sys.prefix) / "planted.py").exists()


def landlock_works() -> bool:
    try:
        return detect("landlock") == "landlock"
    except SandboxUnavailable:
        return False


@pytest.mark.skipif(not landlock_works(), reason="Landlock does not work here")
def test_under_landlock_the_server_writes_only_the_workspace_and_cannot_read_hearths_state(tmp_path: Path) -> None:
    workspace, state = tmp_path / "ws", tmp_path / "state"
    workspace.mkdir()
    state.mkdir()
    (state / "audit.db").write_text("the audit")
    config = load_server(declare(tmp_path / "config"))
    settings = Settings.from_env({"HEARTH_STATE_DIR": str(state), "HEARTH_CONFIG_DIR": str(tmp_path / "config")})
    server = connection(config, settings, workspace, SandboxPolicy(kind="landlock", hide=(str(state),)))
    try:
        assert server.call("write_note", {"name": "made.txt", "text": "inside"}, 60) == "wrote 6 characters to made.txt"
        assert (workspace / "made.txt").read_text() == "inside"
        with pytest.raises(McpFailed):
            server.call("read_note", {"name": str(state / "audit.db")}, 30)
        with pytest.raises(McpFailed):
            server.call("write_note", {"name": str(tmp_path / "outside.txt"), "text": "x"}, 30)
        assert not (tmp_path / "outside.txt").exists()
        status = server.call("read_note", {"name": "/proc/self/status"}, 30)
        assert "Seccomp:\t2" in status and "NoNewPrivs:\t1" in status
    finally:
        server.close()


@pytest.mark.skipif(not landlock_works(), reason="Landlock does not work here")
def test_under_landlock_the_helper_imports_nothing_from_the_workspace_and_sets_the_process_limit(
    tmp_path: Path,
) -> None:
    workspace, marker = tmp_path / "ws", tmp_path / "escaped"
    (workspace / "hearth").mkdir(parents=True)  # the model may write any file here, a package too
    (workspace / "hearth" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('ran outside the walls')\n")
    config = load_server(declare(tmp_path / "config"))
    settings = Settings.from_env(
        {"HEARTH_STATE_DIR": str(tmp_path / "state"), "HEARTH_CONFIG_DIR": str(tmp_path / "config")}
    )
    server = connection(config, settings, workspace, SandboxPolicy(kind="landlock", max_procs=77))
    try:
        limits = server.call("read_note", {"name": "/proc/self/limits"}, 60)
    finally:
        server.close()
    assert not marker.exists()
    [line] = [line for line in limits.splitlines() if line.startswith("Max processes")]
    assert line.split()[2] == "77", line


def test_a_server_starts_in_the_walls_the_run_put_up_after_its_connection_was_made(tmp_path: Path) -> None:
    """The run's cgroup and decoy home are made when its first tool is called: a server started
    then is in that cgroup, and its HOME is the decoy home, so opening a decoy trips the wire."""
    import uuid
    from dataclasses import replace

    from agent.safety import cgroups, tripwires

    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    config = load_server(declare(tmp_path / "config"))
    settings = Settings.from_env(
        {"HEARTH_STATE_DIR": str(tmp_path / "state"), "HEARTH_CONFIG_DIR": str(tmp_path / "config")}
    )
    now = [SandboxPolicy(kind="bwrap")]
    server = connection(config, settings, workspace, lambda: now[0])  # no walls yet
    wires = tripwires.plant(home)
    cgroup, why = cgroups.create(f"mcp-test-{uuid.uuid4().hex[:12]}", max_procs=64, memory_bytes=512 << 20)
    now[0] = replace(now[0], home=str(home), cgroup=cgroup.dirs if cgroup else ())  # the walls go up
    try:
        key = server.call("read_note", {"name": "/home/nobody/.ssh/id_ed25519"}, 60)
        members = [pid for d in (cgroup.dirs if cgroup else ()) for pid in cgroups._pids(d)]
        opened = wires.opened()
    finally:
        server.close()
        wires.close()
        if cgroup:
            cgroup.remove()
    [ssh] = [d for d in wires.decoys if d.name == "~/.ssh/id_ed25519"]
    assert wires.seen(key) == [ssh] and ssh in opened
    if cgroup is None:
        pytest.skip(f"no cgroup can be made here ({why}); the decoy home was checked")
    assert members, "the server's processes are in the run's cgroup"
