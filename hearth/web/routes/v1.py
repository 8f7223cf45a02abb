"""The OpenAI-compatible door, `/v1` on `hearth serve`: models and chat completions as hearth runs.

It is its own small app (hearth/doors/mount.py sends /v1 here, outside the command center's
Guard): its callers carry a `/v1` key (hearth/doors/keys.py) where the command center's carry a
viewer or operator token. The Host check and the security headers are the command center's.
Every answer, an error too, is in OpenAI's shape (`{"error": {"message", "type", "code"}}`).

A completion queues a run (hearth/doors/openai.py) and follows it in the audit: streaming, the
first chunk goes at once, then a line per tool call and result and per approval that waits (with
where to decide it), then the run's answer and its tokens; without streaming, the answer when the
run ends. The call waits at most the run's time limit; a run still going then is said so, with its
page. A turn that steered the conversation's working run (hearth/doors/openai.py) follows that run
from where it is, its stream saying first that the turn was given to it. A client that goes away stops the call's following (streamed or not, the audit is no longer
read for it), and nothing else: the run is hearth's, and the conversation's next turn continues it.

A body that is not what OpenAI's clients send (not JSON, nested past what a parser follows, of the
wrong shape) is a 400, and anything that still goes wrong a 500, both in OpenAI's shape.
"""

from __future__ import annotations

import asyncio
import json
import logging
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

log = logging.getLogger(__name__)
Gone = Callable[[], bool]  # whether the call's client has gone away


def v1_app(web: Web) -> FastAPI:
    app = FastAPI(title="hearth /v1", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.web = web
    app.middleware("http")(_walls(web))
    app.add_exception_handler(KeyRefused, _refused)  # type: ignore[arg-type]
    app.add_exception_handler(HTTPException, _http)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _invalid)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _failed)
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


async def _failed(request: Request, exc: Exception) -> Response:
    log.error("/v1 %s failed: %s: %s", request.url.path, type(exc).__name__, exc)
    return _error(Refused(500, "internal_error", "hearth failed to answer this call; see its log", "server_error"))


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
    body = openai.parse(_json(await request.body()))
    headers = {k.lower(): v for k, v in request.headers.items()}
    started = await run_in_threadpool(openai.start, web.config.settings, key, body, headers)
    follower = Follower(web.reader, started.run_id, _base(request))
    if started.steered:  # the call follows the run from here: what it did before was said to earlier calls
        await asyncio.to_thread(follower.skip_said)
    said = {"X-Hearth-Conversation": started.conversation, "X-Hearth-Run": started.run_id}
    if body.stream:  # the response hears its client go itself, and ends the stream (see _stream)
        usage = bool((body.stream_options or {}).get("include_usage"))
        events = _stream(web, started, follower, usage)
        return StreamingResponse(events, media_type="text/event-stream", headers=said)
    hangup = Hangup(request)
    try:
        await _until_ended(web, follower, lambda lines: None, hangup)
    finally:
        hangup.close()
    content = follower.answer() if follower.ended else _still_going(follower)
    return JSONResponse(openai.completion(started, content, follower.usage()), headers=said)


class Hangup:
    """Whether a call's client went away: once its body is read, the one message left to receive is
    the disconnect, so a task waits for it. (Starlette's `is_disconnected` peeks and cancels, which
    loses the message behind the walls' middleware.)"""

    def __init__(self, request: Request) -> None:
        self.gone = False
        self._task = asyncio.create_task(self._listen(request))

    async def _listen(self, request: Request) -> None:
        while (await request.receive())["type"] != "http.disconnect":
            continue
        self.gone = True

    def __call__(self) -> bool:
        return self.gone

    def close(self) -> None:
        self._task.cancel()


def _json(raw: bytes) -> Any:
    """The body as JSON; a 400 in OpenAI's shape for what is not, or nests past what the parser follows."""
    try:
        return json.loads(raw)
    except ValueError:
        raise Refused(400, "invalid_json", "the body is not JSON; send a chat completion request") from None
    except RecursionError:
        raise Refused(
            400, "invalid_json", "the body nests deeper than hearth reads; send a chat completion request"
        ) from None


def _base(request: Request) -> str:
    return f"{request.url.scheme}://{request.headers.get('host', '')}"


async def _until_ended(web: Web, follower: Follower, say: Callable[[list[str]], None], gone: Gone) -> None:
    """Poll the run until it ends, the call has waited its time limit, or its client is gone."""
    deadline = time.monotonic() + DEFAULT_WAIT_S
    while time.monotonic() < deadline:
        say(await asyncio.to_thread(follower.poll))
        if follower.ended:
            return
        if gone():
            _went_away(follower)
            return
        await asyncio.sleep(web.config.poll_s)


async def _streamed(web: Web, follower: Follower, say: Callable[[list[str]], None]) -> None:
    """A stream's following, cancelled with its response when the client goes: said from here, where
    the polling stops, so the line is proof of it."""
    try:
        await _until_ended(web, follower, say, lambda: False)
    except asyncio.CancelledError:
        _went_away(follower)
        raise


def _went_away(follower: Follower) -> None:
    log.info("/v1: the client of run %s went away; its call stopped following the run", follower.run_id)


def _still_going(follower: Follower) -> str:
    return f"(run {follower.run_id} is still going past the time this call waits: {follower.base_url}/runs/{follower.run_id})"


async def _stream(web: Web, started: Started, follower: Follower, usage_chunk: bool) -> AsyncIterator[str]:
    """The run as it goes; a client that goes away cancels the response, and the following with it."""
    yield _sse(openai.chunk(started, {"role": "assistant", "content": ""}))
    if started.steered:
        yield _sse(openai.chunk(started, {"content": openai.steered_line(started) + "\n"}))
    queue: list[str] = []
    waiting = asyncio.create_task(_streamed(web, follower, queue.extend))
    try:
        while not waiting.done() or queue:
            while queue:
                yield _sse(openai.chunk(started, {"content": queue.pop(0) + "\n"}))
            if not waiting.done():
                await asyncio.wait([waiting], timeout=web.config.poll_s)
    finally:  # the response was cancelled (its client went away): the following goes with it
        if not waiting.done():
            waiting.cancel()
    answer = follower.answer() if follower.ended else _still_going(follower)
    yield _sse(openai.chunk(started, {"content": ("\n" if follower.seen_steps else "") + answer}))
    yield _sse(openai.chunk(started, {}, "stop", usage=follower.usage()))
    if usage_chunk:
        yield _sse({**openai.chunk(started, {}), "choices": [], "usage": follower.usage()})
    yield "data: [DONE]\n\n"


def _sse(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"
