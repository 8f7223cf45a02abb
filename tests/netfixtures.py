"""Real local HTTP servers reached through public-looking test names, and a loopback tripwire.

How tests reach loopback without weakening the guard: `TestNet.resolve` maps test names
(`site.example`) to public stand-in addresses (93.184.216.x), which the production guard checks
and accepts like any public address. `TestNet.connect` (the injected connector) then carries a
connection to a stand-in to the local server behind it on 127.0.0.1. Any other address it is
asked for is recorded in `stray`; a loopback one is really connected (so a `Tripwire` listening
there would see it) and anything else is refused without a packet. The guard has no switch that
allows loopback: a test that needs loopback goes through this connector, never through the guard.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpcore

from agent.net.guard import NetGuard


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Answer:
    status: int = 200
    body: bytes | str = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


Route = Answer | Callable[[Seen], Answer]


class Web:
    """An HTTP server on 127.0.0.1:0 with scripted routes; records every request it receives."""

    def __init__(self, routes: dict[str, Route] | None = None, tls: ssl.SSLContext | None = None) -> None:
        self.routes: dict[str, Route] = dict(routes or {})
        self.seen: list[Seen] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        if tls is not None:  # the handshake runs at accept(); a failed one is dropped by socketserver
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def answer(self, seen: Seen) -> Answer:
        self.seen.append(seen)
        route = self.routes.get(seen.path.split("?", 1)[0])
        if route is None:
            return Answer(404, b"not here", {"content-type": "text/plain"})
        return route(seen) if callable(route) else route

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler(web: Web) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            answer = web.answer(Seen(self.command, self.path, headers, body))
            time.sleep(answer.delay_s)
            data = answer.body.encode() if isinstance(answer.body, str) else answer.body
            self.send_response(answer.status)
            sent = {"content-type": "text/plain; charset=utf-8", "content-length": str(len(data)), **answer.headers}
            for name, value in sent.items():
                self.send_header(name, value)
            self.end_headers()
            if self.command != "HEAD":
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = do_OPTIONS = _serve

    return Handler


class TestNet:
    """Test names -> public stand-in addresses -> local servers. See the module docstring."""

    __test__ = False  # not a test class, whatever pytest thinks of the name

    def __init__(self) -> None:
        self.names: dict[str, list[str]] = {}
        self.servers: dict[str, Web] = {}
        self.lookups: list[str] = []
        self.connections: list[tuple[str, int]] = []
        self.stray: list[tuple[str, int]] = []

    def host(self, name: str, web: Web, address: str | None = None) -> str:
        address = address or f"93.184.216.{10 + len(self.servers)}"
        assert ipaddress.ip_address(address).is_global, "a stand-in must be a public address"
        self.names[name] = [address]
        self.servers[address] = web
        return address

    def alias(self, name: str, *addresses: str) -> None:
        """A name that resolves to these addresses (hostile ones included)."""
        self.names[name] = list(addresses)

    def resolve(self, host: str, port: int) -> list[str]:
        self.lookups.append(host)
        if host not in self.names:
            raise OSError(f"test resolver: no such name {host}")
        return list(self.names[host])

    def connect(self, ip: str, port: int, timeout: float | None) -> httpcore.NetworkStream:
        web = self.servers.get(ip)
        if web is None:
            self.stray.append((ip, port))
            if ipaddress.ip_address(ip).is_loopback:  # let a tripwire see a guard failure
                return httpcore.SyncBackend().connect_tcp(ip, port, timeout=timeout)
            raise OSError(f"test connector: {ip} is not a test server; nothing was sent")
        self.connections.append((ip, port))
        return httpcore.SyncBackend().connect_tcp("127.0.0.1", web.port, timeout=timeout)

    def guard(self, **options: Any) -> NetGuard:
        return NetGuard(resolver=self.resolve, connector=self.connect, **options)


class Tripwire:
    """A listening socket on 127.0.0.1 (and ::1 when there is IPv6) that counts connections."""

    def __init__(self) -> None:
        self.v4 = socket.create_server(("127.0.0.1", 0))
        self.port = self.v4.getsockname()[1]
        self.v6: socket.socket | None = None
        try:
            self.v6 = socket.create_server(("::1", self.port), family=socket.AF_INET6)
        except OSError:
            self.v6 = None
        for sock in self.sockets:
            sock.setblocking(False)

    @property
    def sockets(self) -> list[socket.socket]:
        return [s for s in (self.v4, self.v6) if s is not None]

    def connections(self) -> int:
        count = 0
        for sock in self.sockets:
            while True:
                try:
                    conn, _ = sock.accept()
                except BlockingIOError:
                    break
                conn.close()
                count += 1
        return count

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()


class Backend:
    """Stands in for ddgs.DDGS: same text() signature, scripted answers or ddgs' own exceptions."""

    def __init__(self, answer: list[dict[str, Any]] | Exception) -> None:
        self.answer = answer
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def text(self, query: str, **options: Any) -> list[dict[str, Any]]:
        self.calls.append((query, options))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def certificate(tmp_path: Path, name: str) -> tuple[Path, Path]:
    key, cert = tmp_path / f"{name}.key", tmp_path / f"{name}.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "2",
            "-subj",
            f"/CN={name}",
            "-addext",
            f"subjectAltName=DNS:{name}",
        ],
        check=True,
        capture_output=True,
    )
    return key, cert
