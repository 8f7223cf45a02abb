"""The guard proxy: ddgs' own connections go through the network guard like every other tool's."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agent.net.proxy import GuardProxy
from agent.safety.workspace import Workspace
from agent.services import RunServices
from agent.tools.gate import call_tool
from tests.netfixtures import Answer, TestNet, Tripwire, Web, certificate


@pytest.fixture
def tripwire() -> Iterator[Tripwire]:
    wire = Tripwire()
    yield wire
    wire.close()


def raw_request(proxy: GuardProxy, head: str) -> str:
    host, port = proxy.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(head.encode())
        return sock.recv(4096).decode("latin-1")


def test_hostile_tunnels_are_refused_with_403_and_never_connect(tripwire: Tripwire) -> None:
    net = TestNet()
    net.alias("loop.test", "127.0.0.1")
    p = tripwire.port
    with GuardProxy(net.guard()) as proxy:
        for target in (
            f"127.0.0.1:{p}",
            f"localhost:{p}",
            f"[::1]:{p}",
            f"loop.test:{p}",
            f"2130706433:{p}",
            "169.254.169.254:443",
            "10.0.0.1:443",
            "nonsense",
        ):
            answer = raw_request(proxy, f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n")
            assert answer.startswith("HTTP/1.1 403"), (target, answer)
        assert raw_request(proxy, "GET http://loop.test/ HTTP/1.1\r\n\r\n").startswith("HTTP/1.1 405")
        assert len(proxy.refused) == 8 and proxy.tunnels == []
    assert tripwire.connections() == 0 and net.stray == []


def test_a_permitted_tunnel_reaches_the_checked_address_with_tls_end_to_end(tmp_path: Path) -> None:
    key, cert = certificate(tmp_path, "secure.test")
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(cert, key)
    web = Web({"/": Answer(200, "through the tunnel")}, tls=server_side)
    net = TestNet()
    address = net.host("secure.test", web)
    with GuardProxy(net.guard()) as proxy:
        with httpx.Client(proxy=proxy.url, verify=ssl.create_default_context(cafile=str(cert))) as client:
            assert client.get("https://secure.test/").text == "through the tunnel"
        assert proxy.tunnels == ["secure.test:443"]
    assert net.connections == [(address, 443)]
    web.close()


def search_offline(tmp_path: Path, net: TestNet, **guard: object) -> tuple[bool, str]:
    """The real ddgs through web_search, with a guard whose test resolver knows no provider."""
    ws = Workspace(tmp_path, services=RunServices(net=net.guard(**guard)))
    result = call_tool("web_search", {"query": "hearth"}, ws, mode="bypass")
    return result.ok, result.output


def test_the_real_ddgs_asks_the_guard_for_every_provider_connection(tmp_path: Path) -> None:
    net = TestNet()
    ok, out = search_offline(tmp_path, net)
    assert not ok and "refused by the network guard" in out and "cannot resolve host" in out
    assert net.lookups and net.connections == [] and net.stray == []
    assert any("duckduckgo" in host or "bing" in host or "brave" in host for host in net.lookups)


def test_with_an_egress_list_ddgs_goes_only_to_duckduckgo_and_hostile_answers_are_refused(tmp_path: Path) -> None:
    net = TestNet()
    net.alias("html.duckduckgo.com", "127.0.0.1")  # a poisoned answer
    ok, out = search_offline(tmp_path, net, egress=("*.duckduckgo.com",))
    assert not ok and "loopback" in out
    assert set(net.lookups) == {"html.duckduckgo.com"} and net.stray == []
