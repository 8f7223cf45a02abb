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
reported (the run's tripwires). It sees one stream (`_Watch`): each window carries the tail of what
came before it, the head included, and a chunked body is scanned with its framing taken out too,
so neither a read boundary nor a chunk boundary hides a value split across it.
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

BODY_LIMIT = 1 << 20  # a request body up to this is read whole and scanned before it is sent on
SCAN_TAIL = 1024  # bytes each scan window carries from the one before: more than any spelling of a canary
_SIZE_LINE_LIMIT = 1024  # a chunk-size line longer than this is no framing: the body is scanned as sent
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
        watch = _Watch(self.scan, f"a request to {host}:{port}") if self.scan else None
        seen = watch.head(head) if watch else None
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
                record.bytes_up, record.bytes_down = _relay(client, upstream, None)
            else:
                first = _origin_form(head)
                upstream.sendall(first)
                up, record.bytes_down = _relay(client, upstream, watch)
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


def _relay(client: socket.socket, upstream: socket.socket, watch: _Watch | None) -> tuple[int, int]:
    """Copy both ways until a side closes or both idle; (bytes up, bytes down). ``watch`` looks at
    what goes up (a body in the clear) as it goes on from the head; a hit cuts the connection."""
    sent = [0, 0]

    def pump(src: socket.socket, dst: socket.socket, index: int) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if index == 0 and watch is not None and watch.feed(data):
                    break
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


class _Watch:
    """What one connection sends up, scanned as one stream: `head` first (the head and whatever
    body came with it), then `feed` for each read after it. Each scan window is the tail of the
    last (SCAN_TAIL bytes) and the new bytes; a chunked body is scanned twice, as sent and as its
    data without the framing (`_Dechunk`), each view with its own tail."""

    def __init__(self, scan: Scan, where: str) -> None:
        self.scan, self.where = scan, where
        self._sent = b""  # the tail of the bytes as sent
        self._data = b""  # the tail of a chunked body's data
        self._chunks: _Dechunk | None = None

    def head(self, head: bytes) -> str | None:
        seen = self.feed(head)
        block, end, body = head.partition(b"\r\n\r\n")
        if seen or not end or not _chunked(block):
            return seen
        self._chunks = _Dechunk()
        return self._view_data(body)

    def feed(self, data: bytes) -> str | None:
        window = self._sent + data
        seen = self.scan(window, self.where)
        self._sent = window[-SCAN_TAIL:]
        return seen or self._view_data(data)

    def _view_data(self, data: bytes) -> str | None:
        if self._chunks is None:
            return None
        window = self._data + self._chunks.feed(data)
        self._data = window[-SCAN_TAIL:]
        return self.scan(window, self.where)


def _chunked(block: bytes) -> bool:
    return any(
        name.strip().lower() == b"transfer-encoding" and b"chunked" in value.lower()
        for name, _, value in (line.partition(b":") for line in block.split(b"\r\n")[1:])
    )


class _Dechunk:
    """A chunked body's data without its framing, fed as it arrives (sizes, extensions and the
    CRLFs taken out). After the last chunk, or on framing it cannot read, it hands bytes on as
    they are: the view as sent is scanned as well, so a lenient reading here hides nothing."""

    def __init__(self) -> None:
        self._line = b""  # a size line read so far
        self._left = 0  # data bytes still to come in this chunk
        self._as_sent = False

    def feed(self, data: bytes) -> bytes:
        out, at = bytearray(), 0
        while at < len(data):
            if self._as_sent:
                out += data[at:]
                break
            if self._left:
                piece = data[at : at + self._left]
                out += piece
                at += len(piece)
                self._left -= len(piece)
                continue
            end = data.find(b"\n", at)
            self._line += data[at : len(data) if end < 0 else end]
            at = len(data) if end < 0 else end + 1
            if end >= 0:
                out += self._size_line()
            elif len(self._line) > _SIZE_LINE_LIMIT:
                self._as_sent, out = True, out + self._line
        return bytes(out)

    def _size_line(self) -> bytes:
        """Take one size line (or the CRLF after a chunk's data); what it was, when it was no size."""
        line, self._line = self._line.strip(), b""
        if not line:
            return b""
        size = line.split(b";", 1)[0].strip()
        if not size or any(c not in b"0123456789abcdefABCDEF" for c in size):
            self._as_sent = True
            return line
        self._left = int(size, 16)
        self._as_sent = self._left == 0  # the trailers, and anything after them, as sent
        return b""


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
