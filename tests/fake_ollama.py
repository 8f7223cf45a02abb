"""A real HTTP server on 127.0.0.1:0 that speaks Ollama's `/api/chat`, for tests and benchmarks.

It plays a script of replies in order, streams them as NDJSON or answers in one body (as the
request asks), returns 404 for models it does not have, and records every request body so tests
assert on exactly what was sent. Script items:

- a dict: an assistant message (`{"content": ..., "tool_calls": [...]}`), sent as Ollama would;
- `Raw(status, body)`: these exact bytes, for garbage, HTTP 500, a reply with no message ...;
- `Held(message, after, release)`: streams `after` chunks of the message, waits for the
  `release` event, then the rest (a live token count, a model still thinking);
- a callable taking the request body and returning either of the above (`Gated`: a reply held
  until the test releases it).

When the script runs out it answers HTTP 500 "script exhausted", so an overrun is loud.

`/api/embed` answers from `embedders`: model name -> a function of one text giving its vector (a
test owns its table, e.g. `concept_vectors`, where a paraphrase set shares directions) or a `Raw`
reply (garbage, an error, a slow answer). A model it does not have is a 404, as Ollama answers;
every embed body is recorded in `embeds`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agent.steer import is_steer


@dataclass(frozen=True)
class Raw:
    status: int
    body: bytes | str
    content_type: str = "application/json"
    delay_s: float = 0.0


@dataclass(frozen=True)
class Held:
    message: dict[str, Any]
    after: int
    release: threading.Event


class Gated:
    """A reply given only once the test sets `release` (its marker: a steer accepted, a page
    posted), so the run waits in its model call meanwhile; the bound only ends a broken test."""

    def __init__(self, reply: dict[str, Any], bound_s: float = 120.0) -> None:
        self.reply, self.bound_s, self.release = reply, bound_s, threading.Event()

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        assert self.release.wait(self.bound_s), "the test never released this reply"
        return self.reply


Script = dict[str, Any] | Raw | Held | Callable[[dict[str, Any]], "dict[str, Any] | Raw | Held"]
Embedder = Callable[[str], list[float]] | Raw


def hashed_direction(seed: str, dim: int) -> list[float]:
    """A unit vector fixed by seed; two different seeds give nearly orthogonal ones in high dims."""
    out: list[float] = []
    block = 0
    while len(out) < dim:
        digest = hashlib.blake2b(f"{seed}\0{block}".encode(), digest_size=64).digest()
        out.extend((b - 127.5) / 127.5 for b in digest)
        block += 1
    norm = math.sqrt(sum(x * x for x in out[:dim])) or 1.0
    return [x / norm for x in out[:dim]]


def concept_vectors(concepts: dict[str, tuple[str, ...]], dim: int = 768) -> Callable[[str], list[float]]:
    """text -> vector: the sum of the directions of the concepts whose phrases the text contains,
    plus a small direction of its own, normalised. Texts sharing a concept point the same way;
    a text of no concept points nowhere in particular (nearly orthogonal to everything)."""
    directions = {name: hashed_direction(name, dim) for name in concepts}

    def vector(text: str) -> list[float]:
        lowered = text.lower()
        own = hashed_direction(text, dim)
        total = [0.15 * x for x in own]
        for name, phrases in concepts.items():
            if any(p.lower() in lowered for p in phrases):
                total = [t + d for t, d in zip(total, directions[name])]
        norm = math.sqrt(sum(x * x for x in total)) or 1.0
        return [x / norm for x in total]

    return vector


def final_answer(text: str) -> dict[str, Any]:
    return {"content": text}


def tool_call(name: str, arguments: dict[str, Any] | str, content: str = "") -> dict[str, Any]:
    return {"content": content, "tool_calls": [{"function": {"name": name, "arguments": arguments}}]}


class FakeOllama:
    """Serve a script of chat replies on a loopback port; use as a context manager."""

    def __init__(
        self,
        script: list[Script] | None = None,
        *,
        models: tuple[str, ...] = ("qwen2.5-coder", "qwen2.5-coder:latest"),
        tokens: tuple[int, int] = (100, 20),
        chunk_size: int = 7,
        repeat_last: bool = False,
        port: int = 0,
        tag_details: dict[str, dict[str, Any]] | None = None,
        loaded: list[dict[str, Any]] | None = None,
        embedders: dict[str, Embedder] | None = None,
        no_thinking: tuple[str, ...] = (),
    ) -> None:
        self.no_thinking = no_thinking  # models that answer a `think` request as Ollama does: HTTP 400
        self.script: list[Script] = list(script or [])
        self.models = models
        self.tag_details = tag_details or {}  # more of /api/tags' fields per model (size, details)
        self.loaded = loaded or []  # what /api/ps answers: the models in memory
        self.tokens = tokens
        self.chunk_size = chunk_size
        self.hung_up = threading.Event()  # set when a client closed a stream before its end
        self.repeat_last = repeat_last
        self.requests: list[dict[str, Any]] = []
        self.embedders: dict[str, Embedder] = dict(embedders or {})
        self.embeds: list[dict[str, Any]] = []  # every /api/embed body, in order
        self.paths: list[str] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeOllama:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def add(self, *items: Script) -> None:
        with self._lock:
            self.script.extend(items)

    def next_item(self, body: dict[str, Any]) -> dict[str, Any] | Raw | Held:
        with self._lock:
            self.requests.append(body)
            if not self.script:
                return Raw(500, json.dumps({"error": "script exhausted"}))
            item = self.script[0] if self.repeat_last and len(self.script) == 1 else self.script.pop(0)
        return item(body) if callable(item) else item


def _handler_for(fake: FakeOllama) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # small NDJSON chunks would otherwise wait on delayed ACKs

        def log_message(self, *args: object) -> None:  # keep test output clean
            pass

        def do_GET(self) -> None:
            fake.paths.append(self.path)
            if self.path == "/api/tags":
                names = [*fake.models, *fake.embedders]
                tags = [{"name": m, **fake.tag_details.get(m, {})} for m in names]
                self._send(200, json.dumps({"models": tags}))
            elif self.path == "/api/ps":
                self._send(200, json.dumps({"models": fake.loaded}))
            elif self.path == "/api/version":
                self._send(200, json.dumps({"version": "0.0.0-fake"}))
            else:
                self._send(404, "404 page not found", "text/plain")

        def do_POST(self) -> None:
            fake.paths.append(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if self.path == "/api/show":
                self._show(raw)
                return
            if self.path == "/api/embed":
                self._embed(raw)
                return
            if self.path != "/api/chat":
                self._send(404, "404 page not found", "text/plain")
                return
            body = json.loads(raw)
            if body.get("model") not in fake.models:
                fake.requests.append(body)
                error = f'model "{body.get("model")}" not found, try pulling it first'
                self._send(404, json.dumps({"error": error}))
                return
            if body.get("think") not in (None, False) and body["model"] in fake.no_thinking:
                fake.requests.append(body)
                self._send(400, json.dumps({"error": f'"{body["model"]}" does not support thinking'}))
                return
            item = fake.next_item(body)
            if isinstance(item, Raw):
                time.sleep(item.delay_s)
                self._send(item.status, item.body, item.content_type)
            elif isinstance(item, Held):
                self._stream(body["model"], item.message, hold=item)
            elif body.get("stream", True):
                self._stream(body["model"], item)
            else:
                self._send(200, json.dumps(self._final(body["model"], _message(item))))

        def _show(self, raw: bytes) -> None:
            name = json.loads(raw or b"{}").get("model") or json.loads(raw or b"{}").get("name")
            if name in fake.models:
                self._send(200, json.dumps({"model_info": {"general.context_length": 32768}}))
            else:
                self._send(404, json.dumps({"error": f"model '{name}' not found"}))

        def _embed(self, raw: bytes) -> None:
            body = json.loads(raw or b"{}")
            with fake._lock:
                fake.embeds.append(body)
            embedder = fake.embedders.get(body.get("model", ""))
            if embedder is None:
                error = f'model "{body.get("model")}" not found, try pulling it first'
                self._send(404, json.dumps({"error": error}))
            elif isinstance(embedder, Raw):
                time.sleep(embedder.delay_s)
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a client that gave up
                    self._send(embedder.status, embedder.body, embedder.content_type)
            else:
                texts = body.get("input", [])
                texts = [texts] if isinstance(texts, str) else texts
                vectors = [embedder(text) for text in texts]
                reply = {"model": body["model"], "embeddings": vectors, "prompt_eval_count": len(texts)}
                self._send(200, json.dumps(reply))

        def _final(self, model: str, message: dict[str, Any]) -> dict[str, Any]:
            tokens_in, tokens_out = fake.tokens
            return {
                "model": model,
                "created_at": "2026-01-01T00:00:00Z",
                "message": message,
                "done": True,
                "done_reason": "stop",
                "prompt_eval_count": tokens_in,
                "eval_count": tokens_out,
            }

        def _stream(self, model: str, item: dict[str, Any], hold: Held | None = None) -> None:
            message = _message(item)
            content = message.get("content", "")
            step = max(1, fake.chunk_size)
            thinking = message.get("thinking", "")
            chunks = [
                {"model": model, "message": {"role": "assistant", "content": "", "thinking": thinking[i : i + step]}}
                for i in range(0, len(thinking), step)
            ]
            chunks += [
                {"model": model, "message": {"role": "assistant", "content": content[i : i + step]}, "done": False}
                for i in range(0, len(content), step)
            ]
            if message.get("tool_calls"):
                calls = {"role": "assistant", "content": "", "tool_calls": message["tool_calls"]}
                chunks.append({"model": model, "message": calls, "done": False})
            chunks.append(self._final(model, {"role": "assistant", "content": ""}))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for n, chunk in enumerate(chunks):
                    if hold is not None and n == hold.after:
                        hold.release.wait(60)
                    self._write_chunk((json.dumps(chunk) + "\n").encode())
                self._write_chunk(b"")
            except (BrokenPipeError, ConnectionResetError):
                fake.hung_up.set()  # the client stopped reading and closed: a server stops generating

        def _write_chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def _send(self, status: int, body: bytes | str, content_type: str = "application/json") -> None:
            data = body.encode() if isinstance(body, str) else body
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _message(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": item.get("content", ""),
        **({"tool_calls": item["tool_calls"]} if item.get("tool_calls") else {}),
        **({"thinking": item["thinking"]} if item.get("thinking") else {}),
    }


def assert_roles_legal(messages: list[dict[str, Any]]) -> None:
    assert [m["role"] for m in messages[:2]] == ["system", "user"]
    for prev, cur in zip(messages, messages[1:]):
        assert not (prev["role"] == cur["role"] and cur["role"] in ("user", "assistant", "system"))
        if cur["role"] == "tool":
            assert prev["role"] == "tool" or (prev["role"] == "assistant" and prev.get("tool_calls"))
        if prev["role"] == "assistant" and prev.get("tool_calls"):
            assert cur["role"] == "tool"
    for i, m in enumerate(messages):
        if m["role"] == "assistant" and m.get("tool_calls"):
            following = messages[i + 1 : i + 1 + len(m["tool_calls"])]
            assert [f["role"] for f in following] == ["tool"] * len(m["tool_calls"])


def assert_no_synthetic_user(messages: list[dict[str, Any]]) -> None:
    """Roles legal, and the goal the one user message but a person's steer right after a tool
    result: hearth never writes a user turn of its own (a nudge, a repair) into a conversation."""
    assert_roles_legal(messages)
    later = [
        m["content"][:80]
        for prev, m in zip(messages[1:], messages[2:])
        if m["role"] == "user" and not (is_steer(m) and prev["role"] == "tool")
    ]
    assert not later, f"a user message hearth made up: {later}"


def assert_every_request_legal(requests: list[dict[str, Any]]) -> None:
    """Every conversation a fake was sent (its chat requests) passes assert_no_synthetic_user."""
    chats = [body["messages"] for body in requests if body.get("messages")]
    assert chats, "no chat request was recorded"
    for messages in chats:
        assert_no_synthetic_user(messages)
