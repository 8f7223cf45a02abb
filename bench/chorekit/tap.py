"""A recording tap in front of the model server: every chat turn's timing and prompt-cache figures.

The bench points hearth and the plain loop at this tap instead of the server, so both are measured
the same way whatever they record themselves. The tap forwards each request as it came, and the
reply byte for byte as it comes (a streamed reply stays streamed), and reads the reply on the side:

- time to first token: from the request to the first chunk that carries text or a tool call; for a
  reply sent whole, its wall time less the server's generation time (both: queue and prompt work);
- prompt tokens, cached and evaluated: llama.cpp's `timings` (`cache_n`, `prompt_n`) or the OpenAI
  `usage` (`prompt_tokens_details.cached_tokens`); Ollama's `prompt_eval_count`, which counts only
  what it evaluated when it reused its cache (an Ollama-API shim may count the whole prompt there);
- whether the server was shared: another client's request ran on it since the tap's previous call
  ended (llama.cpp's `/slots` names each slot's last task), which may have taken the prompt cache.

Chat turns are `/api/chat` and `/v1/chat/completions`; everything else is forwarded unrecorded.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHAT_PATHS = ("/api/chat", "/v1/chat/completions")
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "content-length"}
Slots = tuple[tuple[Any, Any, bool], ...]  # llama.cpp's /slots: (id, id_task, is_processing) each
UPSTREAM_TIMEOUT_S = 3600.0  # a turn of a small model on a busy CPU takes minutes, never an hour


@dataclass
class Turn:
    """One chat request as the tap saw it answered."""

    path: str
    at: float = 0.0  # when it was asked (time.time()), to line it up with a server's own log
    status: int = 0
    seconds: float = 0.0
    ttft_s: float | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    evaluated_tokens: int | None = None
    completion_tokens: int | None = None
    shared: bool | None = None  # another client's request ran since the previous call; None: not known

    def row(self) -> dict[str, Any]:
        return asdict(self)


class Reading:
    """What one reply says, read line by line as it passes (SSE `data:` lines, NDJSON or one JSON)."""

    def __init__(self, started: float) -> None:
        self.started = started
        self.first: float | None = None
        self.tail = b""
        self.whole = bytearray()
        self.last: dict[str, Any] = {}

    def feed(self, data: bytes) -> None:
        self.whole += data if len(self.whole) < 4_000_000 else b""
        lines = (self.tail + data).split(b"\n")
        self.tail = lines.pop()
        for line in lines:
            self._line(line)

    def _line(self, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace").strip().removeprefix("data:").strip()
        if not text.startswith("{"):
            return
        try:
            chunk = json.loads(text)
        except ValueError:
            return
        if self.first is None and _carries_output(chunk):
            self.first = time.monotonic()
        if _has_figures(chunk):
            self.last = chunk

    def finish(self, turn: Turn) -> None:
        self._line(self.tail)
        if not self.last:  # a reply sent whole, perhaps pretty-printed over several lines
            try:
                whole = json.loads(bytes(self.whole))
                self.last = whole if isinstance(whole, dict) else {}
            except ValueError:
                pass
        figures(self.last, turn)
        if self.first is not None:
            turn.ttft_s = round(self.first - self.started, 3)
        elif self.last:
            generation = _generation_s(self.last)
            turn.ttft_s = round(max(turn.seconds - generation, 0.0), 3)


def _carries_output(chunk: dict[str, Any]) -> bool:
    message = chunk.get("message")
    if isinstance(message, dict):  # Ollama
        return bool(message.get("content") or message.get("tool_calls") or message.get("thinking"))
    for choice in chunk.get("choices") or []:  # OpenAI, streamed
        delta = choice.get("delta") if isinstance(choice, dict) else None
        if isinstance(delta, dict) and (delta.get("content") or delta.get("tool_calls")):
            return True
    return False


def _has_figures(chunk: dict[str, Any]) -> bool:
    return bool(chunk.get("timings") or chunk.get("usage") or "prompt_eval_count" in chunk)


def _generation_s(last: dict[str, Any]) -> float:
    timings = last.get("timings") or {}
    if timings.get("predicted_ms") is not None:
        return float(timings["predicted_ms"]) / 1000
    return float(last.get("eval_duration") or 0) / 1e9


def figures(last: dict[str, Any], turn: Turn) -> None:
    """Prompt, cached, evaluated and completion tokens from the reply's final figures."""
    timings, usage = last.get("timings") or {}, last.get("usage") or {}
    if timings.get("prompt_n") is not None:  # llama.cpp: prompt_n is what it evaluated, cache_n what it reused
        turn.evaluated_tokens = int(timings["prompt_n"])
        turn.cached_tokens = int(timings.get("cache_n") or 0)
        turn.prompt_tokens = turn.evaluated_tokens + turn.cached_tokens
        turn.completion_tokens = int(timings.get("predicted_n") or usage.get("completion_tokens") or 0)
    elif usage:
        details = usage.get("prompt_tokens_details") or {}
        turn.prompt_tokens = int(usage.get("prompt_tokens") or 0)
        turn.cached_tokens = int(details.get("cached_tokens") or 0) if details else None
        if turn.cached_tokens is not None:
            turn.evaluated_tokens = turn.prompt_tokens - turn.cached_tokens
        turn.completion_tokens = int(usage.get("completion_tokens") or 0)
    elif "prompt_eval_count" in last:  # Ollama
        turn.evaluated_tokens = int(last.get("prompt_eval_count") or 0)
        turn.completion_tokens = int(last.get("eval_count") or 0)


class Tap:
    """A loopback server forwarding to `upstream` (http://host:port), recording every chat turn."""

    def __init__(self, upstream: str) -> None:
        parts = urllib.parse.urlsplit(upstream)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"the tap forwards to http://HOST:PORT only, not {upstream!r}")
        self.upstream = (parts.hostname, parts.port or 80)
        self.turns: list[Turn] = []
        self.lock = threading.Lock()
        self.after: Slots | None = None  # the server's slots when the last chat call ended
        self.no_slots = False  # the server has no /slots (Ollama, vLLM, llama-server --no-slots)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="tap", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def mark(self) -> int:
        """Where the next run's turns will start in `turns`."""
        with self.lock:
            return len(self.turns)

    def since(self, mark: int) -> list[Turn]:
        with self.lock:
            return list(self.turns[mark:])

    def record(self, turn: Turn) -> None:
        with self.lock:
            self.turns.append(turn)

    def slots(self) -> Slots | None:
        """Each slot's id, last task and whether it is busy, as llama.cpp says; None where nothing says."""
        if self.no_slots:
            return None
        upstream = http.client.HTTPConnection(*self.upstream, timeout=30)
        try:
            upstream.request("GET", "/slots")
            reply = upstream.getresponse()
            self.no_slots = reply.status in (404, 501)  # not there, or turned off: not asked again
            data = json.loads(reply.read()) if reply.status == 200 else None
            return tuple((s["id"], s["id_task"], bool(s["is_processing"])) for s in data) if data else None
        except (OSError, ValueError, KeyError, TypeError):
            self.no_slots = True
            return None
        finally:
            upstream.close()

    def shared_since(self, before: Slots | None, after: Slots | None) -> bool | None:
        """Whether another client's request ran between the previous call's end and `before` (this
        call's start), or was running then; keeps `after` (this call's end) for the next call."""
        last, self.after = self.after, after
        if before is None or last is None:
            return None
        return before != last or any(busy for *_, busy in before + last)

    def __enter__(self) -> Tap:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _handler(tap: Tap) -> type[BaseHTTPRequestHandler]:
    class Forward(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # the client keeps its connection, as it would with the server

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._forward()

        def do_POST(self) -> None:
            self._forward()

        def do_DELETE(self) -> None:
            self._forward()

        def _forward(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            chat = urllib.parse.urlsplit(self.path).path in CHAT_PATHS and self.command == "POST"
            before = tap.slots() if chat else None
            asked, started = time.time(), time.monotonic()
            upstream = http.client.HTTPConnection(*tap.upstream, timeout=UPSTREAM_TIMEOUT_S)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP | {"host"}}
            try:
                upstream.request(self.command, self.path, body=body, headers=headers)
                reply = upstream.getresponse()
            except OSError as exc:
                self.send_error(502, f"the tap could not reach the server: {exc}")
                return
            reading = Reading(started)
            # the slots at the call's end are read before the client has the whole reply, so its next
            # call cannot come first
            after = self._relay(reply, reading, tap.slots if chat else lambda: None)
            upstream.close()
            if chat:
                turn = Turn(urllib.parse.urlsplit(self.path).path, round(asked, 3), reply.status)
                turn.seconds = round(time.monotonic() - started, 3)
                reading.finish(turn)
                turn.shared = tap.shared_since(before, after)
                tap.record(turn)

        def _relay(
            self, reply: http.client.HTTPResponse, reading: Reading, at_end: Callable[[], Slots | None]
        ) -> Slots | None:
            """The reply as it comes, re-chunked while it streams; `at_end()` before its last chunk."""
            self.send_response(reply.status, reply.reason)
            for key, value in reply.getheaders():
                if key.lower() not in HOP_BY_HOP:
                    self.send_header(key, value)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                while data := reply.read1(65_536):
                    reading.feed(data)
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()
            except OSError:  # the client went away (a timeout on its side): the server's reply is dropped
                self.close_connection = True
                return at_end()
            ended = at_end()
            try:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except OSError:
                self.close_connection = True
            return ended

    return Forward
