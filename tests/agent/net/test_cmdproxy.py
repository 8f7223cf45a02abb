"""The command proxy's eyes, without a sandbox: a real listener, a real upstream that records every
byte it receives, and a client that sends a canary split across reads, chunks and the head's limit.

The proxy reads what the client sent so far; a test waits until the upstream has what came before a
split (the proxy read it and sent it on) before it sends the rest, so the two halves are two reads."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import httpcore
import pytest

from agent.net.cmdproxy import CommandProxy
from agent.net.guard import NetGuard
from agent.net.proxy import HEAD_LIMIT
from tests.queue_support import wait_for

CANARY = "c4a1f0e2b7d94e3a8f6b2c1d"  # the shape of a tripwire's canary: 24 hex characters


class Sink:
    """An upstream on 127.0.0.1:0 that keeps every byte it is sent; it answers 200 and closes once
    what it received ends with `end` (the end of the request a test sends)."""

    def __init__(self, end: bytes = b"\r\n0\r\n\r\n") -> None:
        self.received = bytearray()
        self.end = end
        self._server = socket.create_server(("127.0.0.1", 0))
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self._server.getsockname()[1])

    def _serve(self) -> None:
        try:
            conn, _ = self._server.accept()
        except OSError:
            return
        with conn:
            while data := conn.recv(65536):
                self.received += data
                if self.received.endswith(self.end):
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                    return

    def close(self) -> None:
        self._server.close()


class Scans:
    """The scan the run's tripwires give the proxy: a hit names the decoy."""

    def __init__(self) -> None:
        self.hits: list[str] = []

    def __call__(self, data: bytes, where: str) -> str | None:
        if CANARY.encode() in data:
            self.hits.append(where)
            return "~/.netrc"
        return None


@pytest.fixture
def sink() -> Iterator[Sink]:
    upstream = Sink()
    yield upstream
    upstream.close()


def send_in_parts(sink: Sink, scans: Scans, parts: list[bytes]) -> bytes:
    """Each part after the upstream has everything before it (so each is a read of its own); what
    the proxy answered."""
    guard = NetGuard(
        resolver=lambda host, port: ["93.184.216.50"],
        connector=lambda ip, port, timeout: httpcore.SyncBackend().connect_tcp("127.0.0.1", sink.port, timeout=timeout),
    )
    proxy = CommandProxy(guard, scan=scans)
    listener = socket.create_server(("127.0.0.1", 0))
    proxy.attach(listener)
    try:
        with socket.create_connection(listener.getsockname()[:2], timeout=10) as client:
            for n, part in enumerate(parts):
                if n:
                    wait_for(lambda: len(sink.received) or scans.hits, timeout=10, what="the first read sent on")
                if scans.hits:
                    break
                client.sendall(part)
            answer = b""  # until the proxy closes: after the upstream's answer, or on a refusal
            while data := client.recv(65536):
                answer += data
    finally:
        proxy.detach(listener)
    return answer


def test_a_canary_split_across_two_reads_of_a_chunked_body_is_refused_and_not_sent_on(sink: Sink) -> None:
    head = b"POST http://up.test/ HTTP/1.1\r\nHost: up.test\r\nTransfer-Encoding: chunked\r\n\r\n"
    scans = Scans()
    send_in_parts(sink, scans, [head + b"18\r\n" + CANARY[:10].encode(), CANARY[10:].encode() + b"\r\n0\r\n\r\n"])
    assert scans.hits == ["a request to up.test:80"]
    assert CANARY[10:].encode() not in sink.received


def test_a_canary_split_across_two_chunks_is_seen_through_the_chunk_framing(sink: Sink) -> None:
    head = b"POST http://up.test/ HTTP/1.1\r\nHost: up.test\r\nTransfer-Encoding: chunked\r\n\r\n"
    first, rest = CANARY[:12].encode(), CANARY[12:].encode()
    scans = Scans()
    send_in_parts(sink, scans, [head + b"c\r\n" + first + b"\r\n", b"c;x=1\r\n" + rest + b"\r\n0\r\n\r\n"])
    assert scans.hits == ["a request to up.test:80"] and rest not in sink.received


def test_a_canary_in_one_read_of_chunks_is_seen_too(sink: Sink) -> None:
    head = b"POST http://up.test/ HTTP/1.1\r\nHost: up.test\r\nTransfer-Encoding: chunked\r\n\r\n"
    body = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in (CANARY[:5].encode(), CANARY[5:].encode())) + b"0\r\n\r\n"
    scans = Scans()
    answer = send_in_parts(sink, scans, [head + body])
    assert scans.hits and answer.startswith(b"HTTP/1.1 403") and not sink.received


def test_a_canary_across_the_end_of_the_head_s_first_read_is_refused(sink: Sink) -> None:
    start = b"GET http://up.test/ HTTP/1.1\r\nHost: up.test\r\nX-Pad: "
    line = start + b"p" * (HEAD_LIMIT - len(start) - 10) + CANARY.encode() + b"\r\n\r\n"
    scans = Scans()
    sink.end = CANARY[-4:].encode() + b"\r\n\r\n"
    send_in_parts(sink, scans, [line[:HEAD_LIMIT], line[HEAD_LIMIT:]])
    assert scans.hits and CANARY[10:].encode() not in sink.received


def test_a_chunked_body_without_a_canary_goes_through_whole(sink: Sink) -> None:
    head = b"POST http://up.test/ HTTP/1.1\r\nHost: up.test\r\nTransfer-Encoding: chunked\r\n\r\n"
    scans = Scans()
    answer = send_in_parts(sink, scans, [head + b"5\r\nhello\r\n", b"6\r\n world\r\n0\r\n\r\n"])
    assert scans.hits == [] and answer.startswith(b"HTTP/1.1 200")
    assert sink.received.endswith(b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
