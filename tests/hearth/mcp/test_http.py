"""An MCP server over streamable HTTP (tests/mcp_servers/toy.py --http, a real SDK server on
127.0.0.1) as a run reaches it: through the run's network guard like any request (a public-looking
test name resolved to a public stand-in address, carried to the loopback server by the test's
connector, as tests/netfixtures.py does), with a credential bound to the server's host only."""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpcore
import pytest

from agent.services import RunServices
from hearth.run.goal import GoalRequest
from hearth.run.runner import run_goal
from hearth.settings import Settings
from tests.cli_support import run_cli_input
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.mcp_servers.declare import TOY
from tests.mcp_servers.support import steps, until

STAND_IN = "93.184.216.50"
SECRET = "hc-mcp-http-token-7d1f"


@pytest.fixture
def http_toy() -> Iterator[int]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    server = subprocess.Popen([sys.executable, str(TOY), "--http", str(port)], stderr=subprocess.DEVNULL)
    try:
        assert until(lambda: _listening(port)), "the HTTP server never listened"
        yield port
    finally:
        server.terminate()
        server.wait(timeout=30)


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def declare_web(config_dir: Path, host: str, port: int, headers: str = "") -> None:
    path = config_dir / "mcp" / "web.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    tools = '[tools.echo]\nrisk = "safe"\n[tools.whoami]\nrisk = "safe"\n'
    path.write_text(f'transport = "http"\nurl = "http://{host}:{port}/mcp"\n{headers}{tools}')


def run(settings_url: str, port: int, script: list[dict[str, object]]) -> tuple[str, str, list[str]]:
    """One run in this process whose guard resolves mcp.test to the stand-in and carries the
    stand-in to the toy; (run id, status, the addresses the guard let the proxy connect to)."""
    connected: list[str] = []

    def resolve(host: str, _port: int) -> list[str]:
        if host != "mcp.test":
            raise OSError(f"test resolver: no such name {host}")
        return [STAND_IN]

    def connect(ip: str, _port: int, timeout: float | None) -> httpcore.NetworkStream:
        connected.append(ip)
        if ip != STAND_IN:
            raise OSError(f"test connector: {ip} is not the test server; nothing was sent")
        return httpcore.SyncBackend().connect_tcp("127.0.0.1", port, timeout=timeout)

    def configure(services: RunServices) -> None:
        assert services.net is not None
        services.net.resolver, services.net.connector = resolve, connect  # type: ignore[attr-defined]

    with FakeOllama(script) as fake:
        settings = Settings(**{**Settings.from_env().__dict__, "model_host": fake.url})
        request = GoalRequest(goal="use the web server", model="qwen2.5-coder", mode="auto")
        run_id, outcome = run_goal(request, settings, out=io.StringIO(), configure_services=configure)
    return run_id, outcome.status, connected


def test_an_http_server_is_reached_through_the_guard_with_its_credential_for_its_host_only(
    state_dir: Path, tmp_path: Path, http_toy: int
) -> None:
    assert run_cli_input(["creds", "set", "WEBKEY", "--host", "mcp.test"], SECRET).returncode == 0
    declare_web(tmp_path / "config", "mcp.test", http_toy, 'headers = { Authorization = "Bearer cred:WEBKEY" }\n')
    assert (
        run_cli("hearth", "mcp", "approve", "web", "echo", "whoami").returncode == 1
    )  # review: no guard, no such name
    # approve as the operator would, by the address the operator's own machine reaches it at
    declare_web(tmp_path / "config", "127.0.0.1", http_toy)
    approved = run_cli("hearth", "mcp", "approve", "web", "echo", "whoami")
    assert approved.returncode == 0, approved.stderr
    declare_web(tmp_path / "config", "mcp.test", http_toy, 'headers = { Authorization = "Bearer cred:WEBKEY" }\n')
    script = [tool_call("web__echo", {"text": "over http"}), tool_call("web__whoami", {}), final_answer("ok")]
    _, status, connected = run(str(tmp_path), http_toy, script)
    assert status == "done" and connected and set(connected) == {STAND_IN}
    _, recorded = steps(state_dir)
    calls = [(s["tool"], s["verdict"], s["output"]) for s in recorded if s["kind"] == "tool"]
    assert calls == [
        ("web__echo", "run", "over http"),
        ("web__whoami", "run", "authorization: Bearer [redacted:WEBKEY]"),  # sent, and never kept
    ]
    [used] = [json.loads(s["detail"]) for s in recorded if s["kind"] == "credential"]
    assert (used["name"], used["host"], used["verdict"]) == ("WEBKEY", "mcp.test", "used")
    lines = [json.loads(s["detail"])["line"] for s in recorded if s["kind"] == "mcp"]
    assert any(line.startswith("web: POST mcp.test:") and " allowed " in line for line in lines), lines
    assert SECRET not in json.dumps(recorded)


def test_a_credential_not_bound_to_the_servers_host_is_not_sent_and_the_server_is_not_reached(
    state_dir: Path, tmp_path: Path, http_toy: int
) -> None:
    assert run_cli_input(["creds", "set", "WEBKEY", "--host", "api.elsewhere.test"], SECRET).returncode == 0
    declare_web(tmp_path / "config", "127.0.0.1", http_toy)
    assert run_cli("hearth", "mcp", "approve", "web", "echo").returncode == 0
    declare_web(tmp_path / "config", "mcp.test", http_toy, 'headers = { Authorization = "cred:WEBKEY" }\n')
    _, status, connected = run(str(tmp_path), http_toy, [tool_call("web__echo", {"text": "x"}), final_answer("ok")])
    assert status == "done" and connected == []
    _, recorded = steps(state_dir)
    [refused] = [json.loads(s["detail"]) for s in recorded if s["kind"] == "credential"]
    assert refused["verdict"] == "refused" and "is bound to api.elsewhere.test, not to mcp.test" in refused["reason"]
    [call] = [s for s in recorded if s["kind"] == "tool"]
    assert call["output"].startswith("Error: no tool named 'web__echo'")  # its server's tools were not offered


def test_a_loopback_http_server_is_refused_by_the_runs_guard(state_dir: Path, tmp_path: Path, http_toy: int) -> None:
    declare_web(tmp_path / "config", "127.0.0.1", http_toy)
    assert run_cli("hearth", "mcp", "approve", "web", "echo").returncode == 0  # the operator's review reaches it
    _, status, connected = run(str(tmp_path), http_toy, [tool_call("web__echo", {"text": "x"}), final_answer("ok")])
    assert status == "done" and connected == []
    _, recorded = steps(state_dir)
    [call] = [s for s in recorded if s["kind"] == "tool"]
    assert call["output"].startswith("Error: MCP server web ") and "\n" not in call["output"]  # one tool error
    lines = [json.loads(s["detail"])["line"] for s in recorded if s["kind"] == "mcp"]
    assert any("127.0.0.1" in line and "refused" in line and "public addresses" in line for line in lines), lines
