"""A loopback CONNECT proxy that puts the network guard in front of clients we cannot hand a transport.

ddgs talks to its search providers through its own HTTP client (primp), so web_search starts one
of these for the search and passes it as ddgs' proxy. Every tunnel it is asked for goes through
`NetGuard.check` (egress list, address checks) and is connected with the guard's connector to
the checked address, exactly like agent/net/client.py's requests; anything else gets a 403 with the
reason and never a connection. Only CONNECT is served (the providers are https); TLS stays end
to end between the client and the provider.
"""

from __future__ import annotations

import selectors
import socket
import socketserver
import threading
from types import TracebackType
from typing import Any

from agent.net.client import plain_connector
from agent.net.guard import NetError, NetGuard

HEAD_LIMIT = 8192
IDLE_TIMEOUT_S = 60.0
CONNECT_TIMEOUT_S = 10.0


class GuardProxy:
    """Serve on 127.0.0.1:0 for the duration of a `with` block; `refused` lists what it turned away."""

    def __init__(self, guard: NetGuard) -> None:
        self.guard = guard
        self.tunnels: list[str] = []
        self.refused: list[str] = []
        self._server = _Server(("127.0.0.1", 0), _Tunnel)
        self._server.proxy = self
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> GuardProxy:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()

    def open(self, authority: str) -> Any:
        """The checked upstream stream for 'host:port', or NetError saying why not."""
        host, _, port = authority.rpartition(":")
        if not host or not port.isdigit():
            raise NetError(f"bad CONNECT target {authority[:100]!r}")
        return open_checked(self.guard, f"https://{host}:{port}/")


def open_checked(guard: NetGuard, url: str) -> Any:
    """A stream to the address the guard checked for ``url`` (its connector, pinned), or NetError.

    Shared by this proxy and the command proxy (agent/net/cmdproxy.py): both connect exactly
    where `NetGuard.check` said, like agent/net/client.py's requests.
    """
    target = guard.check(url)
    connector = guard.connector or plain_connector
    failure: Exception = NetError(f"cannot connect to {target.host}:{target.port}")
    for address in target.addresses:
        try:
            return connector(address, target.port, CONNECT_TIMEOUT_S)
        except Exception as exc:
            failure = exc
    raise NetError(f"cannot connect to {target.host}:{target.port}: {failure}")


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    proxy: GuardProxy


class _Tunnel(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        client: socket.socket = self.request
        client.settimeout(CONNECT_TIMEOUT_S)
        method, authority = _request_line(client)
        proxy = self.server.proxy
        if method != "CONNECT":
            client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            return
        try:
            upstream = proxy.open(authority)
        except NetError as exc:
            proxy.refused.append(f"{authority}: {exc}")
            reason = str(exc).encode("utf-8", "replace")[:500]
            client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: %d\r\n\r\n%s" % (len(reason), reason))
            return
        proxy.tunnels.append(authority)
        try:
            client.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            _relay(client, upstream.get_extra_info("socket"))
        finally:
            upstream.close()


def read_head(client: socket.socket, limit: int = HEAD_LIMIT) -> bytes:
    """What the client sent up to the end of its request head (and whatever came with it)."""
    head = b""
    while b"\r\n\r\n" not in head and len(head) < limit:
        try:
            chunk = client.recv(limit - len(head))
        except OSError:
            break
        if not chunk:
            break
        head += chunk
    return head


def _request_line(client: socket.socket) -> tuple[str, str]:
    parts = read_head(client).split(b"\r\n", 1)[0].decode("latin-1").split()
    return (parts[0].upper(), parts[1]) if len(parts) >= 2 else ("", "")


def _relay(one: socket.socket, two: socket.socket) -> None:
    """Copy bytes both ways until either side closes or both are idle for IDLE_TIMEOUT_S."""
    with selectors.DefaultSelector() as selector:
        selector.register(one, selectors.EVENT_READ, two)
        selector.register(two, selectors.EVENT_READ, one)
        while True:
            ready = selector.select(IDLE_TIMEOUT_S)
            if not ready:
                return
            for key, _ in ready:
                try:
                    data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                    if not data:
                        return
                    key.data.sendall(data)
                except OSError:
                    return
