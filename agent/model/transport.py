"""What every chat client shares, whatever its wire format: one HTTP client per server, a streamed
POST, bounded retries with backoff, the tool list dropped for a model that cannot take one, thinking
dropped for a model that cannot think, and the one-line causes of failures.

A backend's client (agent/model/ollama_client.py, agent/model/openai_client.py) is this class with
four hooks: the path, the request body, how an answer is read, and what a refusal means. Why httpx
and not a vendor package: the `ollama` package validates `tool_calls[].function.arguments` as an
object (the JSON-string form many servers send raises instead of being accepted) and turns every
connection failure into one fixed sentence without the URL or the cause; the `openai` package
brings a second client stack and its own retries into the engine. One endpoint, spoken directly,
keeps both under our control.
"""

from __future__ import annotations

import functools
import json
import ssl
import time
from collections.abc import Callable, Iterator
from dataclasses import fields, replace
from typing import Any

import httpx

from agent.model.host import CONNECT_S, ChatOptions, Host, parse_host
from agent.model.reply import BadReply, ChatReply, ModelUnavailable, clip


class _Retryable(Exception):
    """A failure worth another attempt: connection trouble, timeouts, 5xx, an overloaded server."""


class _NoToolSupport(Exception):
    """The model cannot take a tool list (its template has none): ask again without `tools`."""


class _NoThinking(Exception):
    """The model cannot think: ask again without the thinking switch."""


@functools.cache
def tls() -> ssl.SSLContext:
    """One TLS context per process: building one loads the CA bundle (tens of ms per client)."""
    return ssl.create_default_context()


def verify_for(url: str) -> ssl.SSLContext | bool:
    """Plain HTTP (the usual local server) needs no TLS context: building one costs tens of ms a process."""
    return tls() if url.startswith("https://") else False


def cause(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    if "refused" in text.lower():
        return "connection refused"
    return clip(text.splitlines()[0] if text else type(exc).__name__, 160)


def error_text(body: str) -> str:
    """The error a server put in its body: Ollama's `{"error": "..."}`, OpenAI's `{"error": {"message"}}`."""
    try:
        data = json.loads(body)
    except ValueError:
        return clip(body.strip() or "(empty body)")
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return clip(error["message"])
    if isinstance(error, str):
        return clip(error)
    if isinstance(data, dict) and isinstance(data.get("detail"), str):  # FastAPI servers (vLLM's 4xx)
        return clip(data["detail"])
    return clip(body.strip())


def auth_headers(host: Host) -> dict[str, str]:
    return {"Authorization": f"Bearer {host.api_key}"} if host.api_key else {}


OPTION_NAMES = frozenset(f.name for f in fields(ChatOptions))


class HttpChat:
    """A ChatModel over one server's HTTP API. Subclasses set `what` and `path`, and write
    `request_body`, `read` and `refused`; `chat` does the rest the same way for every kind."""

    kind = ""
    what = "the model server"  # how a line names the server
    daemon = "it"  # how a line names what should be running there
    path = ""

    def __init__(
        self,
        model: str,
        host: Host | str | None = None,
        settings: ChatOptions | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        options: dict[str, Any] | None = None,
        **overrides: Any,
    ) -> None:
        unknown = set(overrides) - OPTION_NAMES
        if unknown:
            raise TypeError(f"unknown option(s) of a chat client: {', '.join(sorted(unknown))}")
        given = settings or ChatOptions()
        if options is not None:
            overrides["extra"] = dict(options)
        self.opts = replace(given, **overrides) if overrides else given
        self.model = model
        self.host = host if isinstance(host, Host) else replace(parse_host(host), kind=self.kind)
        self.base_url = self.host.base
        self.think = self.opts.think
        # told once when the server says the model cannot think (the run records it)
        self.on_no_thinking = self.opts.on_no_thinking
        self.on_retry, self.on_tokens = self.opts.on_retry, self.opts.on_tokens
        # False once the server said this model takes no tools: the calls then come as text, which the
        # loop parses, from the tool list in the system prompt
        self.tools_supported = True
        self._sleep = sleep
        timeout = self.host.timeout_s or self.opts.timeout_s
        self._http = httpx.Client(
            timeout=httpx.Timeout(timeout, connect=min(CONNECT_S, timeout)),
            verify=verify_for(self.base_url),
            headers=auth_headers(self.host),
        )

    @property
    def num_ctx(self) -> int:
        return self.opts.num_ctx

    @property
    def stream(self) -> bool:
        return self.opts.stream

    def close(self) -> None:
        self._http.close()

    def request_body(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], schema: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        raise NotImplementedError

    def read(self, lines: Iterator[str], url: str, stream: bool, started: float) -> ChatReply:
        raise NotImplementedError

    def refused(self, status: int, text: str) -> str:
        """What a 4xx answer means for this kind: "tools" (the model takes no tool list), "thinking"
        (it cannot think), "" (nothing this kind knows: a BadReply); or raise ModelUnavailable."""
        raise NotImplementedError

    def chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], schema: dict[str, Any] | None = None
    ) -> ChatReply:
        started = time.monotonic()
        try:
            reply = self._with_retries(lambda: self._post(self.request_body(messages, tools, schema)))
        except _NoToolSupport:
            self.tools_supported = False
            reply = self._with_retries(lambda: self._post(self.request_body(messages, tools, schema)))
        except _NoThinking as refused:
            self.think = None
            if self.on_no_thinking:
                self.on_no_thinking(str(refused))
            return self.chat(messages, tools, schema)
        reply.duration_s = time.monotonic() - started
        return reply

    def _with_retries(self, attempt: Callable[[], ChatReply]) -> ChatReply:
        retries = self.opts.retries
        for n in range(retries + 1):
            try:
                return attempt()
            except _Retryable as failure:
                if n == retries:
                    raise ModelUnavailable(str(failure)) from None
                delay = self.opts.backoff_s * (2**n)
                if self.on_retry:
                    self.on_retry(f"trying again in {delay:g} s (attempt {n + 2} of {retries + 1}): {failure}")
                self._sleep(delay)
        raise AssertionError("unreachable")

    def _post(self, body: dict[str, Any]) -> ChatReply:
        url = f"{self.base_url}{self.path}"
        started = time.monotonic()
        try:
            with self._http.stream("POST", url, json=body) as response:
                self._check_status(response)
                return self.read(response.iter_lines(), url, bool(body.get("stream")), started)
        except httpx.TimeoutException as exc:
            waited = self.host.timeout_s or self.opts.timeout_s
            raise _Retryable(
                f"{self.what} at {self.base_url} did not answer within {waited:g} s ({type(exc).__name__}); "
                "a busy CPU box may need a longer timeout (the host's timeout_s, HEARTH_MODEL_TIMEOUT_S)"
            ) from None
        except (httpx.TransportError, OSError) as exc:
            raise _Retryable(
                f"cannot reach {self.what} at {self.base_url}: {cause(exc)}; is {self.daemon} running there?"
            ) from None

    def _check_status(self, response: httpx.Response) -> None:
        if response.status_code < 400:
            return
        response.read()
        text = error_text(response.text)
        if response.status_code >= 500 or response.status_code == 429:
            raise _Retryable(f"{self.what} at {self.base_url} failed with HTTP {response.status_code}: {text}")
        meaning = self.refused(response.status_code, text)
        if meaning == "tools" and self.tools_supported:
            raise _NoToolSupport(text)
        if meaning == "thinking" and self.think is not None:
            raise _NoThinking(text)
        raise BadReply(f"{self.what} at {self.base_url} refused the request (HTTP {response.status_code}): {text}")


def parse_json_line(line: str, url: str) -> dict[str, Any]:
    """One JSON object of a reply; BadReply when it is not one, or is the server's error."""
    try:
        data = json.loads(line)
    except ValueError:
        raise BadReply(f"{url} sent a reply that is not JSON: {clip(line.strip())!r}") from None
    if not isinstance(data, dict):
        raise BadReply(f"{url} sent JSON that is not an object: {clip(line.strip())!r}")
    error = data.get("error")
    if isinstance(error, str | dict):
        raise BadReply(f"{url} reported an error: {error_text(json.dumps(data))}")
    return data


def member(data: Any, key: str) -> dict[str, Any]:
    """`data[key]` when both are JSON objects, else an empty one: a server's optional parts, read safely."""
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, dict) else {}


def members(data: Any, key: str) -> list[Any]:
    """`data[key]` when it is a JSON list, else an empty one."""
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, list) else []


def count(data: dict[str, Any] | None, key: str, default: int = 0) -> int:
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default
