"""One MCP server's connection, through the official `mcp` SDK, for a synchronous engine.

The SDK is asynchronous; hearth's loop is not. A `Connection` runs the SDK's `Client` on an event
loop in its own thread and hands each request to it, waiting at most the call's deadline. The
server is started on first use (`tools()` or `call()`), and stopped by `close()` with its whole
process group (the SDK starts a stdio server in a new session and kills the tree on exit).

Every failure is an `McpFailed` whose text is one line: the server did not start, did not answer
in time, ended mid-call, or answered with an error. After a failure the connection is closed; the
next call starts the server again.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import hashlib
import json
import re
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agent.errors import AgentError
from agent.tools.mcp.errlog import ErrorLog

Save = Callable[[str, bytes], str]  # (mime type, bytes) -> where they were kept, for the model to read
START_S = 60.0  # how long a server may take to start and answer its first request (a loaded machine: tens of seconds)
RESULT_LIMIT = 1_000_000  # characters of one result kept before the gate's own cap


class McpFailed(AgentError):
    """A server or a call that failed; str(error) is the one line the model reads."""


@dataclass(frozen=True)
class Launch:
    """How to reach a server: a stdio program (`argv`, `env`, `cwd`) or a streamable-HTTP `url`,
    sent through `proxy` (the run's guard proxy; "" only for the operator's own review) with
    `headers` (credential values already resolved for the url's host)."""

    argv: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    proxy: str = ""
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolInfo:
    """A tool as the server lists it."""

    name: str
    description: str
    schema: dict[str, Any]
    annotations: dict[str, Any]


def digest(info: ToolInfo) -> str:
    """The pin of a tool: SHA-256 of its name, description and input schema (canonical JSON)."""
    body = json.dumps([info.name, info.description, info.schema], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(body.encode()).hexdigest()


class Connection:
    """`pinned` (tool name -> its pin): every time the server is started for a call (the first call,
    or again after a hang or a crash), its tools are listed first and compared with the pins; a tool
    whose pin no longer matches, or that is no longer listed, is refused for the connection's life
    (`refused`, tool -> why), even if a later start lists it as approved again. `listed` hears each
    such listing (the appliance records it and alerts a change)."""

    def __init__(
        self,
        name: str,
        launch: Launch | Callable[[], Launch],
        *,
        start_s: float = START_S,
        pinned: dict[str, str] | None = None,
        listed: Callable[[list[ToolInfo]], None] | None = None,
    ) -> None:
        self.name = name
        # a callable is asked at each start: the walls a server starts in may go up after the
        # connection was made (the run's cgroup and decoy home, when its first tool is called)
        self.launch = launch
        self.start_s = start_s
        self.pinned = pinned
        self.listed = listed
        self.refused: dict[str, str] = {}
        self.after_call: Callable[[], None] | None = None  # after every call, failed or not
        self.after_close: list[Callable[[], None]] = []  # when close() has stopped the server
        self._starts = 0  # how many times the server was started
        self._checked = -1  # the start whose tool list was compared with the pins
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._client: Any = None
        self._stop: asyncio.Event | None = None
        self._errlog: ErrorLog | None = None

    @property
    def starts(self) -> int:
        """How many times the server was started."""
        return self._starts

    # -- the requests ----------------------------------------------------------------------------
    def tools(self, timeout_s: float = 30.0) -> list[ToolInfo]:
        result = self._request(lambda c: c.list_tools(), timeout_s, "listing its tools")
        self._checked = self._starts
        return [
            ToolInfo(
                t.name,
                t.description or "",
                dict(t.input_schema or {}),
                t.annotations.model_dump(exclude_none=True) if t.annotations else {},
            )
            for t in result.tools
        ]

    def call(self, tool: str, arguments: dict[str, Any], timeout_s: float, save: Save | None = None) -> str:
        """The call's result as text (`save` keeps an image or binary, see `result_text`); McpFailed
        for every way it can fail."""
        try:
            result = self._checked_call(tool, arguments, timeout_s)
        finally:
            if self.after_call is not None:
                self.after_call()
        text = result_text(result, save)
        if result.is_error:
            raise McpFailed(f"{self.name} answered {tool} with an error: {_line(text) or 'no detail'}")
        return text

    def _checked_call(self, tool: str, arguments: dict[str, Any], timeout_s: float) -> Any:
        if self.pinned is not None and (self._checked != self._starts or self._client is None):
            self._check(self.tools(timeout_s))
        if tool in self.refused:
            raise McpFailed(f"MCP server {self.name} {self.refused[tool]} since {tool} was approved; it was not called")
        return self._request(lambda c: c.call_tool(tool, arguments), timeout_s, f"calling {tool}")

    def _check(self, listing: list[ToolInfo]) -> None:
        """Compare a fresh listing with the pins; a changed or missing tool stays refused."""
        now = {info.name: digest(info) for info in listing}
        for tool, pin in (self.pinned or {}).items():
            if tool not in now:
                self.refused.setdefault(tool, "no longer lists it")
            elif now[tool] != pin:
                self.refused.setdefault(tool, "changed its description or input schema")
        if self.listed is not None:
            self.listed(listing)

    def _request(self, make: Callable[[Any], Awaitable[Any]], timeout_s: float, what: str) -> Any:
        with self._lock:
            client, loop = self._started()
            future: concurrent.futures.Future[Any] | None = None
            try:
                # inside the try: the server's thread may end (and close its loop) right after it
                # was found alive, which is the server failing, not hearth
                future = asyncio.run_coroutine_threadsafe(_awaited(make(client)), loop)
                return future.result(timeout=max(0.1, timeout_s))
            except concurrent.futures.TimeoutError:
                if future is not None:
                    future.cancel()
                self._close()
                raise McpFailed(
                    f"MCP server {self.name} did not answer within {timeout_s:g}s {what}; it was stopped"
                ) from None
            except McpFailed:
                raise
            except RuntimeError as exc:
                mismatch = _mismatch(exc)
                if mismatch is None:
                    raise self._failed(what, exc) from None
                # the SDK checked the answer against the tool's declared output schema: the server is sound
                raise McpFailed(
                    f"MCP server {self.name} answered {what} with a result that does not match the tool's output schema: {mismatch}"
                ) from None
            except Exception as exc:
                raise self._failed(what, exc) from None

    def _failed(self, what: str, exc: BaseException) -> McpFailed:
        """The server failed mid-request: its last words (read before it is stopped), then it is stopped."""
        said = self._stderr()
        self._close()
        return McpFailed(f"MCP server {self.name} failed {what}: {_describe(exc)}{said}")

    # -- the server's life -----------------------------------------------------------------------
    def _started(self) -> tuple[Any, asyncio.AbstractEventLoop]:
        if self._client is not None and self._loop is not None and self._thread and self._thread.is_alive():
            return self._client, self._loop
        self._close()
        loop = asyncio.new_event_loop()
        ready: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._errlog = ErrorLog()  # the server's stderr, its tail kept for the one line a failure quotes
        thread = threading.Thread(
            target=self._serve, args=(loop, ready, self._errlog), name=f"mcp-{self.name}", daemon=True
        )
        self._loop, self._thread = loop, thread
        thread.start()
        self._starts += 1
        try:
            self._client = ready.result(timeout=self.start_s)
            self._errlog.started()
        except concurrent.futures.TimeoutError:
            self._close()
            raise McpFailed(f"MCP server {self.name} did not start within {self.start_s:g}s") from None
        except Exception as exc:
            detail = self._stderr()
            self._close()
            raise McpFailed(f"MCP server {self.name} did not start: {_describe(exc)}{detail}") from None
        return self._client, loop

    def _serve(self, loop: asyncio.AbstractEventLoop, ready: concurrent.futures.Future[Any], errlog: ErrorLog) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._session(ready, errlog))
        except BaseException as exc:  # the server's end, whatever it was: the waiting caller learns it
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(str(exc)))
        finally:
            loop.close()

    async def _session(self, ready: concurrent.futures.Future[Any], errlog: ErrorLog) -> None:
        from mcp import StdioServerParameters, stdio_client

        self._stop = asyncio.Event()
        launch = self.launch() if callable(self.launch) else self.launch
        if launch.url:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            timeout = httpx2.Timeout(30.0, read=300.0)  # the SDK's own: a server may hold a stream open
            proxy = launch.proxy or None
            http = httpx2.AsyncClient(proxy=proxy, headers=launch.headers, timeout=timeout, trust_env=False)
            async with http:
                await self._serve_client(ready, streamable_http_client(launch.url, http_client=http))
            return
        command, *args = launch.argv
        params = StdioServerParameters(command=command, args=args, env=launch.env, cwd=launch.cwd)
        await self._serve_client(ready, stdio_client(params, errlog=errlog.writer))  # its stderr kept, not hearth's

    async def _serve_client(self, ready: concurrent.futures.Future[Any], target: Any) -> None:
        from mcp import Client

        assert self._stop is not None
        client = Client(target, cache=None, mode="legacy")
        async with client:
            if not ready.done():
                ready.set_result(client)
            await self._stop.wait()

    def close(self) -> None:
        """Stop the server (its whole process group) and the thread that spoke to it."""
        with self._lock:
            self._close()
            closers, self.after_close = self.after_close, []
        for closer in closers:
            closer()

    def _close(self) -> None:
        loop, thread, stop = self._loop, self._thread, self._stop
        self._loop = self._thread = self._client = self._stop = None
        if loop is not None and thread is not None and thread.is_alive():
            if stop is not None:
                try:
                    loop.call_soon_threadsafe(stop.set)
                except RuntimeError:  # its loop closed between the two looks: the thread is ending anyway
                    pass
            thread.join(timeout=10)
        if self._errlog is not None:
            self._errlog.started()
            self._errlog = None

    def _stderr(self) -> str:
        """The last line the server wrote to its stderr, as `; it said: ...`."""
        last = self._errlog.last_line() if self._errlog is not None else ""
        return f"; it said: {_line(last)}" if last else ""


def _binary(kind: str, mime: str, data: str, save: Save | None) -> str:
    """`[image image/png, 68 bytes, saved as mcp-output/x.png]`: what the model reads of binary content."""
    try:
        raw = base64.b64decode(data, validate=False)
    except ValueError:
        return f"[{kind} {mime}: not valid base64, not shown]"
    where = ""
    if save is not None:
        try:
            where = f", saved as {save(mime, raw)}"
        except Exception as exc:  # the note says why it was not kept; the call's text still counts
            where = f", not saved: {_line(str(exc))}"
    return f"[{kind} {mime}, {len(raw)} bytes{where}, not shown]"


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def result_text(result: Any, save: Save | None = None) -> str:
    """A call's result as the model reads it: text as is, structured content as JSON, an image,
    audio or binary as a short note of its type and size (and, with `save`, where it was saved),
    a resource link as its address."""
    parts: list[str] = []
    for block in result.content or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            parts.append(_binary(kind, block.mime_type, block.data, save))
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            blob = getattr(resource, "blob", None) or ""
            mime = getattr(resource, "mime_type", None) or "application/octet-stream"
            parts.append(text if text is not None else _binary(f"resource {resource.uri}:", mime, blob, save))
        elif kind == "resource_link":
            parts.append(f"[resource link {block.uri}]")
        else:
            parts.append(f"[{kind or 'unknown'} content, not shown]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n".join(parts)
    return text if len(text) <= RESULT_LIMIT else text[:RESULT_LIMIT] + f"\n[... cut at {RESULT_LIMIT} characters]"


_MISMATCH = re.compile(
    r"^(?:Invalid structured content returned by tool \S+: (?P<why>[^\n]*)|Tool \S+ has an output schema but did not return structured content)"
)


def _mismatch(exc: RuntimeError) -> str | None:
    """What the SDK's output-schema check found (`Client.call_tool` raises it as a RuntimeError), or None."""
    found = _MISMATCH.match(str(exc))
    if found is None:
        return None
    return _line(found.group("why") or "it returned no structured content", 200)


def _describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return _line(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)


def _line(text: str, limit: int = 300) -> str:
    first = " ".join(text.split())
    return first if len(first) <= limit else first[: limit - 3] + "..."
