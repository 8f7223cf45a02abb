"""A loopback server answering `/v1/chat/completions` from a script, as llama.cpp's llama-server does:
the reply whole, or streamed as server-sent events when the request asks, with the `usage` and the
llama.cpp `timings` (cache_n: prompt tokens reused, prompt_n: evaluated) it reports. Every request
body is recorded, so tests assert on what the plain loop sent."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def said(content: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def calls(name: str, arguments: dict[str, Any] | str) -> dict[str, Any]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    call = {"id": f"call-{name}", "type": "function", "function": {"name": name, "arguments": text}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


class FakeOpenAI:
    """`script` is the assistant messages in order; `cached` the prompt tokens each reply says it reused."""

    def __init__(self, script: list[dict[str, Any]], cached: int = 90) -> None:
        self.script, self.cached, self.bodies = list(script), cached, []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def reply(self, body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        self.bodies.append(body)
        prompt = 100 + 10 * len(body["messages"])
        cached = 0 if len(self.bodies) == 1 else self.cached
        timings = {"cache_n": cached, "prompt_n": prompt - cached, "predicted_n": 7, "predicted_ms": 20.0}
        usage = {"prompt_tokens": prompt, "completion_tokens": 7, "total_tokens": prompt + 7}
        return self.script.pop(0), {"usage": usage, "timings": timings}


def _handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self._send(200, {"status": "ok"})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            message, figures = fake.reply(body)
            if not body.get("stream"):
                self._send(200, {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}], **figures})
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            delta = {"choices": [{"index": 0, "delta": message}]}
            for event in (delta, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], **figures}):
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            self.close_connection = True

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
