"""A stdio MCP server granted egress reaches the network only through a guard proxy of the run's,
held to the server's own list, each connection recorded; one granted none has none; the process
rlimit holds; and the helper that starts it never imports from the workspace it starts in.

Real bwrap, a real server (tests/mcp_servers/fetcher.py, the official SDK), real HTTP servers on
loopback behind public-looking test names (tests/netfixtures.py: the guard's resolver and
connector are the test's; the guard itself is the production one)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.safety.sandbox import SandboxPolicy
from agent.tools.mcp.client import Connection, McpFailed
from hearth.mcp.config import load_server
from hearth.mcp.launch import connection
from hearth.settings import Settings
from tests.hearth.mcp.test_sandbox import bwrap_works
from tests.mcp_servers.declare import declare
from tests.netfixtures import Answer, TestNet, Web

FETCHER = Path(__file__).resolve().parents[2] / "mcp_servers" / "fetcher.py"
pytestmark = pytest.mark.skipif(not bwrap_works(), reason="bubblewrap does not work here")


@pytest.fixture
def net() -> Iterator[TestNet]:
    web = Web({"/hello": Answer(body="hi from the web")})
    test_net = TestNet()
    test_net.host("pkg.example", web)
    test_net.host("other.example", web)
    yield test_net
    web.close()


def started(tmp_path: Path, net: TestNet, extra: str, **policy: Any) -> tuple[Connection, list[dict[str, Any]]]:
    workspace = tmp_path / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    config = load_server(declare(tmp_path / "config", "fetcher", script=FETCHER, extra=extra))
    settings = Settings.from_env(
        {"HEARTH_STATE_DIR": str(tmp_path / "state"), "HEARTH_CONFIG_DIR": str(tmp_path / "config")}
    )
    seen: list[dict[str, Any]] = []
    server = connection(
        config, settings, workspace, SandboxPolicy(kind="auto", **policy), net.guard(), lambda kind, d: seen.append(d)
    )
    return server, seen


def test_a_server_granted_egress_reaches_its_hosts_through_the_guard_and_each_connection_is_recorded(
    tmp_path: Path, net: TestNet
) -> None:
    server, seen = started(tmp_path, net, 'egress = ["pkg.example"]\n')
    try:
        assert server.call("fetch", {"url": "http://pkg.example/hello"}, 30) == "hi from the web"
        with pytest.raises(McpFailed):  # not on the server's list: the proxy refuses it
            server.call("fetch", {"url": "http://other.example/hello"}, 30)
        with pytest.raises(McpFailed):  # around the proxy: the namespace routes nowhere
            server.call("fetch", {"url": "http://93.184.216.10/hello", "direct": True}, 30)
    finally:
        server.close()
    verdicts = [(d["host"], d["verdict"]) for d in seen]
    assert ("pkg.example", "allowed") in verdicts and ("other.example", "refused") in verdicts
    assert all(d["line"].startswith("fetcher: ") for d in seen)
    assert net.stray == []  # nothing went anywhere but the test's server


def test_a_server_granted_no_egress_has_no_network_even_in_a_run_with_a_guard(tmp_path: Path, net: TestNet) -> None:
    server, seen = started(tmp_path, net, "")
    try:
        with pytest.raises(McpFailed):
            server.call("fetch", {"url": "http://pkg.example/hello"}, 30)
        with pytest.raises(McpFailed):
            server.call("fetch", {"url": "http://93.184.216.10/hello", "direct": True}, 30)
    finally:
        server.close()
    assert seen == [] and net.connections == []


def test_the_servers_process_limit_is_the_policys(tmp_path: Path, net: TestNet) -> None:
    for extra in ("", 'egress = ["pkg.example"]\n'):
        server, _ = started(tmp_path / str(len(extra)), net, extra, max_procs=77)
        try:
            server.call("echo", {"text": "up"}, 30)
            limits = Path(f"/proc/{_server_pid(server)}/limits").read_text()
        finally:
            server.close()
        [line] = [line for line in limits.splitlines() if line.startswith("Max processes")]
        assert line.split()[2] == "77", line


def test_a_package_planted_in_the_workspace_is_not_imported_by_the_helper(tmp_path: Path, net: TestNet) -> None:
    marker = tmp_path / "escaped"
    planted = tmp_path / "ws" / "hearth"
    planted.mkdir(parents=True)
    (planted / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('ran outside the walls')\n")
    server, _ = started(tmp_path, net, 'egress = ["pkg.example"]\n')
    try:
        assert server.call("echo", {"text": "still the real one"}, 30) == "still the real one"
    finally:
        server.close()
    assert not marker.exists()


def _server_pid(server: Connection) -> int:
    """The sandboxed server's pid as the host sees it: the newest process running fetcher.py."""
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if (
                    str(FETCHER).encode() in (proc / "cmdline").read_bytes()
                    and b"bwrap" not in (proc / "cmdline").read_bytes()
                ):
                    pids.append(int(proc.name))
            except OSError:
                continue
    assert pids, "the server is not running"
    return max(pids)
