"""Guarded HTTP for the network tools: httpx over a transport that connects only where the guard said.

Every hop (the first request and each redirect, at most 5) goes through `NetGuard.check`; the
hop's transport holds the checked addresses and its network backend opens a TCP connection to
one of them, whatever name the URL carries. The URL keeps the host name, so the Host header,
TLS SNI and certificate verification all use the name while the socket goes to the checked IP:
there is no second DNS lookup to rebind.

Bodies are read raw and decoded here (gzip and deflate only, the only encodings we ask for) with
a cap on the bytes on the wire and another on the decoded bytes, so neither a big body nor a
compression bomb gets into memory. A whole request has one deadline (`timeout_s`) that every
connect, TLS handshake, read and write of every hop honours, headers included. Outgoing headers are
bounded in count and size. Header values may carry `cred:NAME`; they are resolved per hop for that
hop's host and dropped, with Authorization, Proxy-Authorization and Cookie, when a redirect leaves
the origin (each drop recorded through the guard); a 307/308 to another origin that would resend a
body or an unsafe method is refused. No hop sends a credential's value, in any spelling, in its
URL, headers or body toward a host the credential is not bound to (`NetGuard.refuse_secrets`).
"""

from __future__ import annotations

import functools
import re
import ssl
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin

import httpcore
import httpx

from agent.net.guard import FetchFailed, NetGuard, NetRefused, Target

MAX_REDIRECTS = 5
RAW_CAP = 5_000_000  # bytes on the wire
BODY_CAP = 10_000_000  # bytes after decompression
TIMEOUT_S = 20.0
USER_AGENT = "hearth/0.1 (local agent appliance)"
REDIRECTS = {301, 302, 303, 307, 308}
CRED_TOKEN = re.compile(r"(?<![\w.-])cred:([^\s,;]+)")
SENSITIVE = {"authorization", "proxy-authorization", "cookie"}
MAX_HEADERS = 64  # a request sends a handful; ten thousand is a flood
MAX_HEADER_BYTES = 8_192  # name and value of one header (servers refuse more anyway)
MAX_HEADERS_TOTAL = 32_768
CredentialLookup = Callable[[str, str], str]  # (name, host) -> value; raises with a clear message


@dataclass
class Reply:
    url: str  # the final URL, after redirects
    status: int
    reason: str
    headers: httpx.Headers
    body: bytes
    redirects: list[str] = field(default_factory=list)

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    @property
    def charset(self) -> str | None:
        match = re.search(r"charset=\"?([\w.:-]+)", self.headers.get("content-type", ""), re.I)
        return match.group(1) if match else None

    def text(self) -> str:
        try:
            return self.body.decode(self.charset or "utf-8", errors="replace")
        except LookupError:  # an unknown charset name
            return self.body.decode("utf-8", errors="replace")


def request(
    guard: NetGuard,
    method: str,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
    credentials: CredentialLookup | None = None,
    timeout_s: float = TIMEOUT_S,
    raw_cap: int = RAW_CAP,
    body_cap: int = BODY_CAP,
) -> Reply:
    """One request with guarded redirects; raises NetError subclasses, one line each.

    `timeout_s` is one deadline for all of it (every hop's connect, TLS, headers and body)."""
    deadline = time.monotonic() + timeout_s
    target = guard.check(url)
    wanted = dict(headers or {})
    check_header_bounds(wanted)
    seen: list[str] = []
    while True:
        sent = _resolve_credentials(wanted, target.host, credentials)
        _refuse_secrets(guard, target, sent, body)
        reply = _send(guard, target, method, sent, body, deadline, timeout_s, (raw_cap, body_cap))
        location = reply.headers.get("location")
        if reply.status not in REDIRECTS or not location:
            reply.redirects = seen
            return reply
        if len(seen) >= MAX_REDIRECTS:
            raise NetRefused(f"refused {url}: more than {MAX_REDIRECTS} redirects")
        seen.append(target.url)
        following = guard.check(urljoin(target.url, location))
        method, body, wanted = _redirected(reply.status, method, body, wanted)
        if following.origin != target.origin:
            wanted = _leave_origin(guard, reply.status, method, body, wanted, target, following)
        target = following


def check_header_bounds(headers: dict[str, str]) -> None:
    """Outgoing headers are few and small: a flood is refused before anything is sent."""
    if len(headers) > MAX_HEADERS:
        raise NetRefused(f"refused: {len(headers)} request headers, over the limit of {MAX_HEADERS}; nothing was sent")
    total = 0
    for name, value in headers.items():
        size = len(str(name)) + len(str(value))
        if size > MAX_HEADER_BYTES:
            raise NetRefused(
                f"refused: header {str(name)[:40]!r} is {size} characters, over the limit of {MAX_HEADER_BYTES}; "
                "nothing was sent"
            )
        total += size
    if total > MAX_HEADERS_TOTAL:
        raise NetRefused(
            f"refused: the request headers are {total} characters, over the limit of {MAX_HEADERS_TOTAL}; "
            "nothing was sent"
        )


def _refuse_secrets(guard: NetGuard, target: Target, headers: dict[str, str], body: bytes | None) -> None:
    """No credential value leaves, in any spelling, toward a host it is not bound to."""
    for name, value in headers.items():
        guard.refuse_secrets(target.host, f"header {name!r}", f"{name}: {value}")
    guard.refuse_secrets(target.host, "body", body)


def _leave_origin(
    guard: NetGuard,
    status: int,
    method: str,
    body: bytes | None,
    headers: dict[str, str],
    here: Target,
    there: Target,
) -> dict[str, str]:
    """A redirect to another origin: no body or unsafe method goes along (307/308 would resend
    them), and credentials, cookies and proxy credentials are dropped, each drop recorded."""
    if body is not None or method not in ("GET", "HEAD"):
        raise NetRefused(
            f"refused the {status} redirect from {here.url} to {there.url}: it would resend the {method} "
            "and its body to another origin"
        )
    dropped = [k for k, v in headers.items() if _sensitive(k, v)]
    for name in dropped:
        guard.note("redirect", header=name, source=here.url, target=there.url, verdict="dropped")
    return {k: v for k, v in headers.items() if k not in dropped}


def _sensitive(name: str, value: str) -> bool:
    return name.lower() in SENSITIVE or bool(CRED_TOKEN.search(value))


def _redirected(
    status: int, method: str, body: bytes | None, headers: dict[str, str]
) -> tuple[str, bytes | None, dict[str, str]]:
    """303 (and 301/302 after a POST) turn into a body-less GET, as browsers do; 307/308 keep all."""
    if status == 303 and method != "HEAD" or status in (301, 302) and method == "POST":
        dropped = {"content-type", "content-length", "content-encoding"}
        return "GET", None, {k: v for k, v in headers.items() if k.lower() not in dropped}
    return method, body, headers


def _resolve_credentials(headers: dict[str, str], host: str, lookup: CredentialLookup | None) -> dict[str, str]:
    def value(match: re.Match[str]) -> str:
        if lookup is None:
            raise NetRefused(f"credential {match.group(1)!r} cannot be used: this run has no credentials")
        return lookup(match.group(1), host)

    return {name: CRED_TOKEN.sub(value, text) for name, text in headers.items()}


def _send(
    guard: NetGuard,
    target: Target,
    method: str,
    headers: dict[str, str],
    body: bytes | None,
    deadline: float,
    timeout_s: float,
    caps: tuple[int, int],
) -> Reply:
    sent = {"user-agent": USER_AGENT, "accept-encoding": "gzip, deflate", **headers}
    transport = PinnedTransport(
        target, guard.connector or plain_connector, guard.ssl_context or _ssl_context(), deadline=deadline
    )
    timeout = httpx.Timeout(max(0.05, min(timeout_s, deadline - time.monotonic())))
    try:
        with (
            httpx.Client(transport=transport, timeout=timeout, follow_redirects=False, trust_env=False) as client,
            client.stream(method, target.url, headers=sent, content=body) as response,
        ):
            data = _read(response, deadline, caps, target.url)
            return Reply(target.url, response.status_code, response.reason_phrase, response.headers, data)
    except (httpx.TimeoutException, httpcore.TimeoutException):
        raise FetchFailed(f"{target.url} timed out after {timeout_s:g}s") from None
    except (httpx.HTTPError, httpcore.NetworkError, httpcore.ProtocolError, OSError) as exc:
        raise FetchFailed(f"cannot fetch {target.url}: {_reason(exc)}") from None


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[-1][:200] if text else type(exc).__name__


def _read(response: httpx.Response, deadline: float, caps: tuple[int, int], url: str) -> bytes:
    raw_cap, body_cap = caps
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > raw_cap:
        raise FetchFailed(f"{url} is {int(declared)} bytes, over the cap of {raw_cap} bytes")
    decoder = _decoder(response.headers.get("content-encoding", ""), url)
    out, raw_total, size = [], 0, 0
    for chunk in response.iter_raw():
        raw_total += len(chunk)
        if raw_total > raw_cap:
            raise FetchFailed(f"{url} sent more than the cap of {raw_cap} bytes")
        piece = decoder(chunk, body_cap - size + 1)
        size += len(piece)
        if size > body_cap:
            raise FetchFailed(f"{url} decompresses to more than the cap of {body_cap} bytes")
        out.append(piece)
        if time.monotonic() > deadline:
            raise FetchFailed(f"{url} was still sending at the deadline; it was cut off")
    return b"".join(out)


def _decoder(encoding: str, url: str) -> Callable[[bytes, int], bytes]:
    """chunk, room -> at most `room` decoded bytes (more is never produced, so a bomb stays small)."""
    name = encoding.strip().lower()
    if name in ("", "identity"):
        return lambda chunk, room: chunk
    if name in ("gzip", "x-gzip", "deflate"):
        inflater = zlib.decompressobj(47 if name != "deflate" else 15)  # 47: gzip or zlib header
        return lambda chunk, room: _inflate(inflater, chunk, room, url)
    raise FetchFailed(f"{url} answered with content-encoding {encoding!r}, which hearth does not decode")


def _inflate(inflater: Any, chunk: bytes, room: int, url: str) -> bytes:
    try:
        return inflater.decompress(chunk, max(1, room))
    except zlib.error as exc:
        raise FetchFailed(f"{url} sent a corrupt compressed body ({exc})") from None


def plain_connector(ip: str, port: int, timeout: float | None) -> httpcore.NetworkStream:
    """The production connector: a TCP connection to exactly this address."""
    return httpcore.SyncBackend().connect_tcp(ip, port, timeout=timeout)


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    return httpx.create_ssl_context()


class _DeadlineStream(httpcore.NetworkStream):
    """A connection that honours the request's one deadline on every read, write and TLS
    handshake: a server that trickles headers (or anything else) forever is cut off at it."""

    def __init__(self, stream: httpcore.NetworkStream, deadline: float) -> None:
        self.stream = stream
        self.deadline = deadline

    def _left(self, timeout: float | None, error: type[Exception]) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise error("the request's deadline passed")
        return left if timeout is None else min(timeout, left)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.stream.read(max_bytes, self._left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.stream.write(buffer, self._left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self.stream.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        secured = self.stream.start_tls(ssl_context, server_hostname, self._left(timeout, httpcore.ConnectTimeout))
        return _DeadlineStream(secured, self.deadline)

    def get_extra_info(self, info: str) -> Any:
        return self.stream.get_extra_info(info)


class _PinnedBackend(httpcore.NetworkBackend):
    """Opens connections for one checked target only, to its checked addresses only, under the deadline."""

    def __init__(
        self, target: Target, connector: Callable[[str, int, float | None], Any], deadline: float | None = None
    ) -> None:
        self.target = target
        self.connector = connector
        self.deadline = deadline

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        if (host.strip("[]").lower(), port) != (self.target.host, self.target.port):
            raise httpcore.ConnectError(f"refusing to connect to {host}:{port}: it was not checked")
        failure: Exception = httpcore.ConnectError("no address to connect to")
        for address in self.target.addresses:
            if self.deadline is not None:
                left = self.deadline - time.monotonic()
                if left <= 0:
                    raise httpcore.ConnectTimeout("the request's deadline passed")
                timeout = left if timeout is None else min(timeout, left)
            try:
                stream = self.connector(address, port, timeout)
                return stream if self.deadline is None else _DeadlineStream(stream, self.deadline)
            except (OSError, httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        raise failure

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("unix sockets are not reachable from network tools")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class PinnedTransport(httpx.BaseTransport):
    """An httpx transport over an httpcore pool whose backend is pinned to one checked target."""

    def __init__(
        self,
        target: Target,
        connector: Callable[[str, int, float | None], Any],
        ssl_context: ssl.SSLContext,
        *,
        deadline: float | None = None,
    ) -> None:
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context, max_connections=1, network_backend=_PinnedBackend(target, connector, deadline)
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        response = self._pool.handle_request(core)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_CoreStream(response),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self._pool.close()


class _CoreStream(httpx.SyncByteStream):
    def __init__(self, response: httpcore.Response) -> None:
        self._response = response

    def __iter__(self) -> Iterator[bytes]:
        yield from self._response.iter_stream()

    def close(self) -> None:
        self._response.close()
