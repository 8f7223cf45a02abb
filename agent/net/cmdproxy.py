"""The run's HTTP(S) proxy for commands: their only way out, through the same guard as the web tools.

A command granted network lives in a private network namespace (agent.safety.netns) whose only
listener is 127.0.0.1:3128, a socket this proxy accepts on from the host's namespace. Its
HTTP_PROXY/HTTPS_PROXY point there, so pip, git, curl and Python's clients send it:
- ``CONNECT host:port`` for TLS: checked by `NetGuard.check` (public addresses only, after DNS,
  the run's egress list), connected to the checked address, then bytes both ways (TLS stays end
  to end: the proxy sees only the host);
- ``GET http://host/path`` (any method, absolute form) for plain HTTP: checked the same way, sent
  on in origin form with ``Connection: close`` (one request per connection), the reply relayed back.
Everything else (no proxy form, a refused host, loopback, the LAN unless the operator named the
host) gets a 4xx with the reason and never a connection. Names are resolved here, never by the
command (it has no DNS: no UDP at all).

Every connection is a `Connection` record (host, port, method, allowed, the reason, bytes each
way), which the run drains into its audit after each command. ``scan`` sees what the command sends
in the clear (a CONNECT line, a plain request and its body): a hit refuses the request and is
reported (the run's tripwires).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from agent.net.guard import NetError, NetGuard
from agent.net.proxy import IDLE_TIMEOUT_S, open_checked, read_head

__all__ = ["CommandProxy", "Connection"]

BODY_LIMIT = (
    1 << 20
)  # a request body up to this is read whole and scanned before it is sent on  # how often an accept loop looks whether its listener was detached
_HOP_HEADERS = frozenset({b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive"})
Scan = Callable[[bytes, str], str | None]  # (bytes sent, where) -> what it saw, or None


@dataclass
class Connection:
    host: str
    port: int
    method: str
    allowed: bool
    reason: str = ""
    bytes_up: int = 0  # from the command
    bytes_down: int = 0  # to the command


class CommandProxy:
    """One run's proxy; `attach` a command's listener before it runs, `detach` it after."""

    def __init__(self, guard: NetGuard, *, scan: Scan | None = None) -> None:
        self.guard = guard
        self.scan = scan
        self._records: list[Connection] = []
        self._lock = threading.Lock()
        self._serving: dict[int, tuple[threading.Event, threading.Thread, list[threading.Thread]]] = {}

    def attach(self, listener: socket.socket) -> None:
        stop = threading.Event()
        handlers: list[threading.Thread] = []
        thread = threading.Thread(target=self._accept, args=(listener, stop, handlers), daemon=True)
        self._serving[listener.fileno()] = (stop, thread, handlers)
        thread.start()

    def detach(self, listener: socket.socket) -> None:
        """Stop accepting and wait for this command's connections to end (its sandbox is gone)."""
        stop, thread, handlers = self._serving.pop(listener.fileno())
        stop.set()
        try:
            listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        except OSError:
            pass
        thread.join()
        listener.close()
        for handler in handlers:
            handler.join(IDLE_TIMEOUT_S)

    def drain(self) -> list[Connection]:
        """The connections recorded since the last drain."""
        with self._lock:
            records, self._records = self._records, []
        return records

    def _accept(self, listener: socket.socket, stop: threading.Event, handlers: list[threading.Thread]) -> None:
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            handler = threading.Thread(target=self._handle, args=(client,), daemon=True)
            handlers.append(handler)
            handler.start()

    def _record(self, record: Connection) -> None:
        with self._lock:
            self._records.append(record)

    def _handle(self, client: socket.socket) -> None:
        with client:
            client.settimeout(IDLE_TIMEOUT_S)
            head = read_head(client)
            method, target = _request_line(head)
            record = Connection("", 0, method or "?", False)
            try:
                self._serve(client, head, method, target, record)
            finally:
                self._record(record)

    def _serve(self, client: socket.socket, head: bytes, method: str, target: str, record: Connection) -> None:
        try:
            url, host, port = _destination(method, target)
        except NetError as exc:
            record.reason = str(exc)
            _refuse(client, 400, str(exc))
            return
        record.host, record.port = host, port
        if method != "CONNECT":
            head = _with_body(client, head)  # scanned whole before anything goes upstream
        seen = self.scan(head, f"a request to {host}:{port}") if self.scan else None
        if seen:
            record.reason = f"refused: it carried {seen}"
            _refuse(client, 403, record.reason)
            return
        try:
            stream = open_checked(self.guard, url)
        except NetError as exc:
            record.reason = str(exc)
            _refuse(client, 403, str(exc))
            return
        record.allowed = True
        upstream: socket.socket = stream.get_extra_info("socket")
        try:
            if method == "CONNECT":
                client.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                record.bytes_up, record.bytes_down = _relay(client, upstream, None, "")
            else:
                first = _origin_form(head)
                upstream.sendall(first)
                up, record.bytes_down = _relay(client, upstream, self.scan, f"a request to {host}:{port}")
                record.bytes_up = len(first) + up
        finally:
            stream.close()


def _request_line(head: bytes) -> tuple[str, str]:
    parts = head.split(b"\r\n", 1)[0].decode("latin-1").split()
    return (parts[0].upper(), parts[1]) if len(parts) >= 2 else ("", "")


def _with_body(client: socket.socket, head: bytes) -> bytes:
    """The head and, when it says how long its body is (up to BODY_LIMIT), the whole body."""
    block, _, body = head.partition(b"\r\n\r\n")
    length = next(
        (
            line.split(b":", 1)[1].strip()
            for line in block.split(b"\r\n")[1:]
            if line.lower().startswith(b"content-length:")
        ),
        b"",
    )
    if not length.isdigit() or int(length) > BODY_LIMIT:
        return head  # chunked or large: streamed, and scanned as it goes
    while len(body) < int(length):
        chunk = client.recv(int(length) - len(body))
        if not chunk:
            break
        body += chunk
    return block + b"\r\n\r\n" + body


def _destination(method: str, target: str) -> tuple[str, str, int]:
    """The URL to check, its host and port; NetError for anything but the two proxy forms."""
    if not method:
        raise NetError("not an HTTP proxy request")
    if method == "CONNECT":
        host, _, port = target.rpartition(":")
        if not host or not port.isdigit():
            raise NetError(f"bad CONNECT target {target[:100]!r}")
        host = host.strip("[]")
        return f"https://{target}/", host, int(port)
    parts = urlsplit(target)
    if parts.scheme != "http" or not parts.hostname:
        raise NetError(f"only CONNECT and absolute http:// requests are proxied, not {target[:100]!r}")
    return target, parts.hostname, parts.port or 80


def _origin_form(head: bytes) -> bytes:
    """The request as the origin server wants it: a path, its own headers but the proxy's, and
    Connection: close (one request per connection, so every request is checked)."""
    block, _, body = head.partition(b"\r\n\r\n")
    lines = block.split(b"\r\n")
    method, _, rest = lines[0].partition(b" ")
    target, _, version = rest.rpartition(b" ")
    parts = urlsplit(target.decode("latin-1"))
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    kept = [line for line in lines[1:] if line.split(b":", 1)[0].strip().lower() not in _HOP_HEADERS]
    request = [b" ".join((method, path.encode("latin-1"), version or b"HTTP/1.1")), *kept, b"Connection: close"]
    return b"\r\n".join(request) + b"\r\n\r\n" + body


def _relay(client: socket.socket, upstream: socket.socket, scan: Scan | None, where: str) -> tuple[int, int]:
    """Copy both ways until a side closes or both idle; (bytes up, bytes down). ``scan`` looks at
    what goes up (a body in the clear); a hit cuts the connection."""
    sent = [0, 0]
    tail = [b""]

    def pump(src: socket.socket, dst: socket.socket, index: int) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if index == 0 and scan is not None:
                    window = tail[0] + data
                    if scan(window, where):
                        break
                    tail[0] = window[-256:]
                dst.sendall(data)
                sent[index] += len(data)
        except OSError:
            pass
        for sock in (dst, src):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    down = threading.Thread(target=pump, args=(upstream, client, 1), daemon=True)
    down.start()
    pump(client, upstream, 0)
    down.join(IDLE_TIMEOUT_S)
    return sent[0], sent[1]


def _refuse(client: socket.socket, status: int, reason: str) -> None:
    text = {400: "Bad Request", 403: "Forbidden"}[status]
    body = reason.encode("utf-8", "replace")[:500]
    try:
        client.sendall(
            b"HTTP/1.1 %d %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
            % (status, text.encode(), len(body), body)
        )
    except OSError:
        pass
