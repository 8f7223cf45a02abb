"""The OpenAI-compatible door, `/v1` on `hearth serve`: models and chat completions as hearth runs.

It is its own small app (hearth/doors/mount.py sends /v1 here, outside the command center's
Guard): its callers carry a `/v1` key (hearth/doors/keys.py) where the command center's carry a
viewer or operator token. The Host check and the security headers are the command center's.
Every answer, an error too, is in OpenAI's shape (`{"error": {"message", "type", "code"}}`).

A completion queues a run (hearth/doors/openai.py) and follows it in the audit: streaming, the
first chunk goes at once, then a line per tool call and result and per approval that waits (with
where to decide it), then the run's answer and its tokens; without streaming, the answer when the
run ends. The call waits at most the run's time limit; a run still going then is said so, with its
page. A client that goes away stops nothing: the run is hearth's.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse, Response, StreamingResponse

from hearth.doors import openai
from hearth.doors.follow import Follower
from hearth.doors.keys import KeyRefused
from hearth.doors.openai import Refused, Started
from hearth.web.context import Web
from hearth.web.security import HEADERS

DEFAULT_WAIT_S = 3600.0  # a request's own timeout_s default: the call never waits past it


def v1_app(web: Web) -> FastAPI:
    app = FastAPI(title="hearth /v1", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.web = web
    app.middleware("http")(_walls(web))
    app.add_exception_handler(KeyRefused, _refused)  # type: ignore[arg-type]
    app.add_exception_handler(HTTPException, _http)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _invalid)  # type: ignore[arg-type]
    app.add_api_route("/v1/models", list_models, methods=["GET"])
    app.add_api_route("/v1/chat/completions", chat_completions, methods=["POST"])
    return app


def _walls(web: Web) -> Callable[[Request, Callable[[Request], Awaitable[Response]]], Awaitable[Response]]:
    async def walls(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        host = request.headers.get("host", "").lower()
        if host not in web.config.allowed_hosts:
            reason = f"Host {host!r} is not one this server answers to (see hearth serve --allowed-host)"
            response: Response = _error(Refused(400, "bad_host", reason))
        else:
            response = await call_next(request)
        for name, value in HEADERS.items():
            response.headers.setdefault(name, value)
        response.headers.setdefault("Cache-Control", "no-store")
        return response

    return walls


def _error(exc: KeyRefused) -> JSONResponse:
    return JSONResponse(openai.error_body(exc), status_code=exc.status)


async def _refused(request: Request, exc: KeyRefused) -> Response:
    return _error(exc)


async def _http(request: Request, exc: HTTPException) -> Response:
    reason = {404: f"no such endpoint {request.url.path}", 405: "this endpoint does not take that method"}
    return _error(
        Refused(
            exc.status_code,
            "not_found" if exc.status_code == 404 else "bad_method",
            reason.get(exc.status_code, str(exc.detail)),
        )
    )


async def _invalid(request: Request, exc: RequestValidationError) -> Response:
    return _error(Refused(400, "invalid_request", "the request is not valid"))


def _web(request: Request) -> Web:
    web: Web = request.app.state.web
    return web


def _models(web: Web, authorization: str) -> dict[str, Any]:
    key = openai.identify(web.config.settings, authorization)
    return {"object": "list", "data": openai.models(web.config.settings, key)}


async def list_models(request: Request) -> Response:
    found = await run_in_threadpool(_models, _web(request), request.headers.get("authorization", ""))
    return JSONResponse(found)


async def chat_completions(request: Request) -> Response:
    web = _web(request)
    key = await run_in_threadpool(openai.identify, web.config.settings, request.headers.get("authorization", ""))
    try:
        raw = json.loads(await request.body())
    except ValueError:
        raise Refused(400, "invalid_json", "the body is not JSON; send a chat completion request") from None
    body = openai.parse(raw)
    headers = {k.lower(): v for k, v in request.headers.items()}
    started = await run_in_threadpool(openai.start, web.config.settings, key, body, headers)
    follower = Follower(web.reader, started.run_id, _base(request))
    said = {"X-Hearth-Conversation": started.conversation, "X-Hearth-Run": started.run_id}
    if body.stream:
        events = _stream(web, started, follower, bool((body.stream_options or {}).get("include_usage")))
        return StreamingResponse(events, media_type="text/event-stream", headers=said)
    await _until_ended(web, follower, lambda lines: None)
    content = follower.answer() if follower.ended else _still_going(follower)
    return JSONResponse(openai.completion(started, content, follower.usage()), headers=said)


def _base(request: Request) -> str:
    return f"{request.url.scheme}://{request.headers.get('host', '')}"


async def _until_ended(web: Web, follower: Follower, say: Callable[[list[str]], None]) -> None:
    """Poll the run until it ends or the call has waited its time limit."""
    deadline = time.monotonic() + DEFAULT_WAIT_S
    while time.monotonic() < deadline:
        say(await asyncio.to_thread(follower.poll))
        if follower.ended:
            return
        await asyncio.sleep(web.config.poll_s)


def _still_going(follower: Follower) -> str:
    return f"(run {follower.run_id} is still going past the time this call waits: {follower.base_url}/runs/{follower.run_id})"


async def _stream(web: Web, started: Started, follower: Follower, usage_chunk: bool) -> AsyncIterator[str]:
    yield _sse(openai.chunk(started, {"role": "assistant", "content": ""}))
    queue: list[str] = []
    waiting = asyncio.create_task(_until_ended(web, follower, queue.extend))
    while not waiting.done() or queue:
        while queue:
            yield _sse(openai.chunk(started, {"content": queue.pop(0) + "\n"}))
        if not waiting.done():
            await asyncio.wait([waiting], timeout=web.config.poll_s)
    answer = follower.answer() if follower.ended else _still_going(follower)
    yield _sse(openai.chunk(started, {"content": ("\n" if follower.seen_steps else "") + answer}))
    yield _sse(openai.chunk(started, {}, "stop", usage=follower.usage()))
    if usage_chunk:
        yield _sse({**openai.chunk(started, {}), "choices": [], "usage": follower.usage()})
    yield "data: [DONE]\n\n"


def _sse(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"
