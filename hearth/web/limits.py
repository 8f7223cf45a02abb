"""Body limits: the first wall a request meets, before the Host check, any sign-in work or parsing.

A declared Content-Length over the route's limit is answered 413 before a byte of the body is
read. A body without one (chunked) is read into memory up to the limit, and only a whole one
reaches the app: no handler, form parser or spool file ever sees more. Pure ASGI, outside every
other middleware. Each route takes at most intake's 1 MiB (a request file's own limit); the
sign-in and sign-out forms, the only posts before sign-in, 16 KiB.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from hearth.queue.intake import MAX_BYTES
from hearth.web.security import ACT_PREFIX, HEADERS

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

DEFAULT_LIMIT = MAX_BYTES
LIMITS = {"/signin": 16 * 1024, "/signout": 16 * 1024}
ACT_LIMIT = 16 * 1024  # signed alert links (hearth/web/routes/alert_actions.py)


def limit_for(path: str) -> int:
    return ACT_LIMIT if path.startswith(ACT_PREFIX) else LIMITS.get(path, DEFAULT_LIMIT)


class BodyLimit:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit, path = limit_for(scope["path"]), scope["path"]
        declared = _content_length(scope)
        if declared is None:
            return await _refuse(send, 400, "the Content-Length header is not one number", path)
        if declared > limit:
            return await _refuse(send, 413, _too_large(path, limit, f"{declared} bytes declared"), path)
        if declared >= 0:
            return await self.app(scope, receive, send)
        body = await _read_up_to(receive, limit)
        if body is None:
            return await _refuse(send, 413, _too_large(path, limit, "a chunked body past it"), path)
        await self.app(scope, _replay(body, receive), send)


def _content_length(scope: Scope) -> int | None:
    """The declared length; -1 when there is none (chunked, or no body); None when it is not a number."""
    values = [v for k, v in scope["headers"] if k == b"content-length"]
    if not values:
        return -1
    text = values[0].decode("latin-1").strip()
    return int(text) if text.isdigit() and len(text) < 20 and len(set(values)) == 1 else None


async def _read_up_to(receive: Receive, limit: int) -> bytes | None:
    """The whole body if it is at most `limit` bytes (or the client left); None past the limit."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(parts)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def again() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return again


def _too_large(path: str, limit: int, seen: str) -> str:
    return f"request body too large: {path} takes at most {limit} bytes ({seen}); send less"


async def _refuse(send: Send, status: int, reason: str, path: str = "") -> None:
    # under /v1 every error is in the OpenAI shape its clients parse (hearth/doors/openai.py)
    if path == "/v1" or path.startswith("/v1/"):
        code = "request_too_large" if status == 413 else "bad_content_length"
        error: dict[str, Any] = {"error": {"message": reason, "type": "invalid_request_error", "code": code}}
    else:
        error = {"error": reason}
    body = json.dumps(error).encode()
    headers = [(k.lower().encode(), v.encode()) for k, v in HEADERS.items()]
    headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers += [(b"cache-control", b"no-store"), (b"connection", b"close")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
