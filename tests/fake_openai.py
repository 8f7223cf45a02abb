"""A real HTTP server on 127.0.0.1:0 that speaks OpenAI's `/v1/chat/completions`, as llama.cpp's
`llama-server`, vLLM, LM Studio and LocalAI do, for tests and benchmarks (the OpenAI twin of
tests/fake_ollama.py, with the same script items: a dict assistant message in hearth's own shape,
`Raw`, `Held`, or a callable of the request body).

It streams server-sent events or answers in one body (as the request asks), answers 404 for a model
it does not serve, records every request body, and writes the shapes the servers' tool-call parsers
emit, chosen per server:

- `calls`: "pieces" (the name first, then the arguments string in pieces by index: vLLM, llama.cpp),
  "whole" (each call in one delta), "object" (arguments as a JSON object, not a string: LocalAI and
  some proxies), "text" (no tool parser: the call written in the content as
  `<tool_call>{...}</tool_call>`, what vLLM sends without --enable-auto-tool-choice);
- `ids`: "openai" (`call_...`), "vllm" (`chatcmpl-tool-<hex>`), "mistral" (nine characters);
- `usage`: "openai" (`usage.prompt_tokens_details.cached_tokens`), "llamacpp" (`usage` and `timings`
  with `cache_n` and `prompt_n`), "none" (a server that says nothing).

Prompt tokens are the request's messages at four characters a token; cached tokens are the common
prefix (in the same units) of this request's messages and the previous one's, as a server's prompt
cache would find it. `max_tokens` is honoured: a reply longer than it is cut (`finish_reason`
"length"). `/v1/models` lists `models` (with vLLM's `max_model_len` when `window` is set and
`props` is off), `/props` answers llama.cpp's `n_ctx` when `props` is on, `/slots` its one slot's
last task when `slots` is on (each chat request is a task, and so is `another_client()`'s),
`/v1/embeddings` answers from `embedders` as the Ollama fake does.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fake_ollama import Held, Raw

Script = dict[str, Any] | Raw | Held | Callable[[dict[str, Any]], "dict[str, Any] | Raw | Held"]
Embedder = Callable[[str], list[float]] | Raw
CHARS_PER_TOKEN = 4


class FakeOpenAI:
    """Serve a script of chat replies on a loopback port, OpenAI's way; use as a context manager."""

    def __init__(
        self,
        script: list[Script] | None = None,
        *,
        models: tuple[str, ...] = ("qwen2.5-coder",),
        completion_tokens: int = 20,
        chunk_size: int = 7,
        repeat_last: bool = False,
        calls: str = "pieces",
        ids: str = "openai",
        usage: str = "openai",
        window: int | None = 32768,
        props: bool = False,
        slots: bool = False,
        embedders: dict[str, Embedder] | None = None,
        no_tools: bool = False,
        api_key: str = "",
    ) -> None:
        self.script: list[Script] = list(script or [])
        self.models = models
        self.completion_tokens = completion_tokens
        self.chunk_size = chunk_size
        self.hung_up = threading.Event()  # set when a client closed a stream before its end
        self.repeat_last = repeat_last
        self.calls, self.ids, self.usage = calls, ids, usage
        self.window, self.props, self.slots = window, props, slots
        self.tasks = 0  # llama.cpp's task count, for /slots
        self.embedders: dict[str, Embedder] = dict(embedders or {})
        self.no_tools = no_tools  # answer a request with tools as llama-server without --jinja does: 400
        self.api_key = api_key  # when set, a request without `Authorization: Bearer <key>` is a 401
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.embeds: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._previous = ""  # the last chat request's messages as JSON: what a prompt cache holds
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def host(self) -> str:
        """How hearth names this server: `openai+URL`."""
        return f"openai+{self.url}"

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def add(self, *items: Script) -> None:
        with self._lock:
            self.script.extend(items)

    def another_client(self) -> None:
        """A request of some other client served between two of the test's: a task in /slots."""
        with self._lock:
            self.tasks += 1

    def next_item(self, body: dict[str, Any]) -> tuple[dict[str, Any] | Raw | Held, int, int]:
        """The scripted answer to a request, with its prompt tokens and how many of them were cached."""
        with self._lock:
            self.requests.append(body)
            self.tasks += 1
            shown = json.dumps(body.get("messages"), ensure_ascii=False)
            cached = len(os.path.commonprefix([shown, self._previous])) // CHARS_PER_TOKEN
            self._previous = shown
            if not self.script:
                return Raw(500, json.dumps({"error": {"message": "script exhausted"}})), 0, 0
            item = self.script[0] if self.repeat_last and len(self.script) == 1 else self.script.pop(0)
        answer = item(body) if callable(item) else item
        return answer, max(1, len(shown) // CHARS_PER_TOKEN), cached


def _handler_for(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, *args: object) -> None:
            pass

        def _authorised(self) -> bool:
            if fake.api_key and self.headers.get("Authorization") != f"Bearer {fake.api_key}":
                self._send(401, json.dumps({"error": {"message": "Invalid API Key", "type": "invalid_request_error"}}))
                return False
            return True

        def do_GET(self) -> None:
            fake.paths.append(self.path)
            if not self._authorised():
                return
            if self.path == "/v1/models":
                limit = {} if fake.props or fake.window is None else {"max_model_len": fake.window}
                data = [{"id": m, "object": "model", "owned_by": "fake", **limit} for m in fake.models]
                self._send(200, json.dumps({"object": "list", "data": data}))
            elif self.path == "/props" and fake.props:
                self._send(200, json.dumps({"default_generation_settings": {"n_ctx": fake.window}}))
            elif self.path == "/slots" and fake.slots:
                self._send(200, json.dumps([{"id": 0, "id_task": fake.tasks, "is_processing": False}]))
            elif self.path == "/health":
                self._send(200, json.dumps({"status": "ok"}))
            else:
                self._send(404, json.dumps({"error": {"message": "File Not Found", "code": 404}}))

        def do_POST(self) -> None:
            fake.paths.append(self.path)
            fake.headers.append(dict(self.headers))
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if not self._authorised():
                return
            if self.path == "/v1/embeddings":
                self._embed(json.loads(raw or b"{}"))
            elif self.path == "/v1/chat/completions":
                self._chat(json.loads(raw))
            else:
                self._send(404, json.dumps({"error": {"message": "File Not Found", "code": 404}}))

        def _chat(self, body: dict[str, Any]) -> None:
            if body.get("model") not in fake.models:
                fake.requests.append(body)
                error = {"message": f"The model `{body.get('model')}` does not exist.", "type": "NotFoundError"}
                self._send(404, json.dumps({"error": error, "code": 404}))
                return
            if fake.no_tools and body.get("tools"):
                fake.requests.append(body)
                self._send(400, json.dumps({"error": {"message": "tools param requires --jinja flag", "code": 400}}))
                return
            item, prompt, cached = fake.next_item(body)
            if isinstance(item, Raw):
                time.sleep(item.delay_s)
                self._send(item.status, item.body, item.content_type)
                return
            message = item.message if isinstance(item, Held) else item
            reply = _Reply(fake, body, message, prompt, cached)
            if body.get("stream"):
                self._stream(reply, item if isinstance(item, Held) else None)
            else:
                self._send(200, json.dumps(reply.whole()))

        def _stream(self, reply: _Reply, hold: Held | None) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self._write_chunk(b": a comment line, as some servers send to keep the connection open\n\n")
            try:
                for n, event in enumerate(reply.events()):
                    if hold is not None and n == hold.after:
                        hold.release.wait(60)
                    self._write_chunk(f"data: {json.dumps(event)}\n\n".encode())
                self._write_chunk(b"data: [DONE]\n\n")
                self._write_chunk(b"")
            except (BrokenPipeError, ConnectionResetError):
                fake.hung_up.set()  # the client stopped reading and closed: a server stops generating

        def _embed(self, body: dict[str, Any]) -> None:
            with fake._lock:
                fake.embeds.append(body)
            embedder = fake.embedders.get(body.get("model", ""))
            if embedder is None:
                self._send(404, json.dumps({"error": {"message": f"model {body.get('model')} not found"}}))
            elif isinstance(embedder, Raw):
                time.sleep(embedder.delay_s)
                self._send(embedder.status, embedder.body, embedder.content_type)
            else:
                texts = body.get("input", [])
                texts = [texts] if isinstance(texts, str) else texts
                data = [{"object": "embedding", "index": i, "embedding": embedder(t)} for i, t in enumerate(texts)]
                data.reverse()  # out of order on purpose: a client must sort by index
                self._send(200, json.dumps({"object": "list", "data": data, "model": body["model"]}))

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


class _Reply:
    """One scripted assistant message as a server of the fake's kind writes it."""

    def __init__(self, fake: FakeOpenAI, body: dict[str, Any], message: dict[str, Any], prompt: int, cached: int):
        self.fake, self.body, self.prompt, self.cached = fake, body, prompt, cached
        self.content = str(message.get("content", ""))
        self.thinking = str(message.get("thinking", ""))
        self.calls = [self._call(n, c) for n, c in enumerate(message.get("tool_calls") or [])]
        if fake.calls == "text" and self.calls:
            written = "".join(
                f'<tool_call>\n{{"name": "{c["function"]["name"]}", "arguments": {c["function"]["arguments"]}}}\n</tool_call>'
                for c in self.calls
            )
            self.content, self.calls = self.content + written, []
        cap = body.get("max_tokens")
        self.finish = "tool_calls" if self.calls else "stop"
        if isinstance(cap, int) and len(self.content) > cap * CHARS_PER_TOKEN:
            self.content, self.calls, self.finish = self.content[: cap * CHARS_PER_TOKEN], [], "length"

    def _call(self, n: int, call: dict[str, Any]) -> dict[str, Any]:
        function = call["function"]
        arguments = function.get("arguments", {})
        if self.fake.calls != "object" and not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        return {"id": self._id(n), "type": "function", "function": {"name": function["name"], "arguments": arguments}}

    def _id(self, n: int) -> str:
        seed = hashlib.sha256(f"{len(self.fake.requests)}:{n}".encode()).hexdigest()
        return {"vllm": f"chatcmpl-tool-{seed[:32]}", "mistral": seed[:9]}.get(self.fake.ids, f"call_{seed[:24]}")

    def usage(self) -> dict[str, Any]:
        tokens = {"prompt_tokens": self.prompt, "completion_tokens": self.fake.completion_tokens}
        tokens["total_tokens"] = tokens["prompt_tokens"] + tokens["completion_tokens"]
        if self.fake.usage == "openai":
            return {"usage": {**tokens, "prompt_tokens_details": {"cached_tokens": self.cached}}}
        if self.fake.usage == "llamacpp":
            timings = {
                "cache_n": self.cached,
                "prompt_n": self.prompt - self.cached,
                "predicted_n": tokens["completion_tokens"],
            }
            return {"usage": tokens, "timings": timings}
        return {}

    def whole(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.content or None}
        if self.thinking:
            message["reasoning_content"] = self.thinking
        if self.calls:
            message["tool_calls"] = self.calls
        choice = {"index": 0, "message": message, "finish_reason": self.finish}
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": self.body["model"],
            "choices": [choice],
            **self.usage(),
        }

    def events(self) -> list[dict[str, Any]]:
        step = max(1, self.fake.chunk_size)
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        deltas += [{"reasoning_content": self.thinking[i : i + step]} for i in range(0, len(self.thinking), step)]
        deltas += [{"content": self.content[i : i + step]} for i in range(0, len(self.content), step)]
        for index, call in enumerate(self.calls):
            deltas += self._call_deltas(index, call, step)
        events = [self._event({"delta": d, "finish_reason": None}) for d in deltas]
        events.append(self._event({"delta": {}, "finish_reason": self.finish}))
        if self.body.get("stream_options", {}).get("include_usage") or self.fake.usage == "llamacpp":
            events.append({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "choices": [], **self.usage()})
        return events

    def _call_deltas(self, index: int, call: dict[str, Any], step: int) -> list[dict[str, Any]]:
        function, arguments = call["function"], call["function"]["arguments"]
        head = {"index": index, "id": call["id"], "type": "function"}
        if self.fake.calls in ("whole", "object") or not isinstance(arguments, str):
            return [{"tool_calls": [{**head, "function": {"name": function["name"], "arguments": arguments}}]}]
        first = [{"tool_calls": [{**head, "function": {"name": function["name"], "arguments": ""}}]}]
        return first + [
            {"tool_calls": [{"index": index, "function": {"arguments": arguments[i : i + step]}}]}
            for i in range(0, len(arguments), step)
        ]

    def _event(self, choice: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "model": self.body["model"],
            "choices": [{"index": 0, **choice}],
        }
