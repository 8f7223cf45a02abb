"""A stdio MCP server granted egress reaches the network only through a guard proxy of the run's,
held to the server's own list, each connection recorded; one granted none has none; the process
rlimit holds; and the helper that starts it never imports from the workspace it starts in.

Real bwrap, a real server (tests/mcp_servers/fetcher.py, the official SDK), real HTTP servers on
loopback behind public-looking test names (tests/netfixtures.py: the guard's resolver and
connector are the test's; the guard itself is the production one)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
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
from tests.walls_support import WHO, as_who, checkout, give_to_user, python

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


@pytest.mark.parametrize("who", WHO)
def test_as_root_and_as_an_ordinary_user_egress_holds_to_the_list(who: str) -> None:
    """Root makes the server's network namespace directly; a user inside a user namespace of its own."""
    # hearth starts the server's helper with its own interpreter: the user must be able to exec it
    # from its own process (setpriv's first exec can reach an interpreter under /root; a second cannot)
    again = "import os, sys; os.execv(sys.executable, [sys.executable, '-c', ''])"
    tried = subprocess.run([*as_who(who), python(who), "-c", again], cwd=checkout(who), capture_output=True, text=True)
    if tried.returncode != 0:
        pytest.skip(
            f"the ordinary user cannot start {python(who)} from its own process here: {(tried.stderr.strip().splitlines() or ['?'])[-1]}"
        )
    where = Path(tempfile.mkdtemp(prefix="hearth-mcp-egress-", dir="/var/tmp"))
    give_to_user(who, where)
    try:
        done = subprocess.run(
            [*as_who(who), python(who), "-m", "tests.mcp_servers.egress_probe", str(where)],
            cwd=checkout(who),
            capture_output=True,
            text=True,
            timeout=240,
            env={**os.environ, "PYTHONPATH": str(checkout(who))},
        )
    finally:
        shutil.rmtree(where, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["answers"]["allowed"] == "hi from the web", found
    assert found["answers"]["unlisted"].startswith("refused: ") and found["answers"]["direct"].startswith("refused: ")
    assert ["pkg.example", "allowed"] in found["seen"] and ["other.example", "refused"] in found["seen"]
    assert found["stray"] == []
