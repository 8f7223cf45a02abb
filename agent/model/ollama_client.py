"""The only module that speaks to the model server (Ollama's `/api/chat`).

Why httpx and not the `ollama` package: that package validates
`tool_calls[].function.arguments` as an object, so the JSON-string form that
OpenAI-compatible servers send raises instead of being accepted, and it turns
every connection failure into one fixed sentence without the URL or the cause.
One endpoint, spoken directly, keeps both under our control.

Two optional callbacks let a caller show what happens without speaking to the server itself:
`on_retry(message)` before each new attempt (what failed, when the next try is), and
`on_tokens(count)` as a streamed reply comes in (chunks so far; Ollama streams about one token a
chunk). Without them nothing extra runs per chunk.

Errors, each one line that says what failed and what to do::

    ModelError
    ├── ModelUnavailable   cannot reach the server, it kept failing (5xx, timeout),
    │                      or the model is not pulled
    └── BadReply           the server answered, but not with a usable chat reply
                           (not JSON, empty, no message, an error object)
"""

from __future__ import annotations

import functools
import json
import ssl
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from agent.errors import AgentError
from agent.model import DEFAULT_NUM_CTX
from agent.parsing import ToolCall, coerce_arguments

DEFAULT_HOST = "http://127.0.0.1:11434"


class ModelError(AgentError):
    """A model call failed; str(error) is the one line a user sees."""


class ModelUnavailable(ModelError):
    """The server cannot be reached, keeps failing, or lacks the model."""


class BadReply(ModelError):
    """The server answered with something that is not a usable chat reply."""


@dataclass
class ChatReply:
    """One assistant turn, decoded from the wire."""

    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    malformed: list[str] = field(default_factory=list)  # structured calls we could not decode
    thinking: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    duration_s: float = 0.0
    host: str = ""  # the host that answered, when a HostPool chose among several (agent/model/hosts.py)


class ChatModel(Protocol):
    """What the loop needs from a model: one chat turn."""

    model: str

    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply: ...


def normalize_host(host: str | None) -> str:
    """`127.0.0.1:11434`, `host:port` or a full URL -> a base URL without a trailing slash."""
    host = (host or "").strip() or DEFAULT_HOST
    if "://" not in host:
        host = "http://" + host
    scheme, rest = host.split("://", 1)
    if ":" not in rest.split("/", 1)[0].rsplit("]", 1)[-1]:
        head, _, tail = rest.partition("/")
        rest = f"{head}:11434" + (f"/{tail}" if tail else "")
    return f"{scheme}://{rest}".rstrip("/")


def decode_message(message: Any, *, tokens_in: int = 0, tokens_out: int = 0) -> ChatReply:
    """Turn a wire `message` object into a ChatReply; string arguments are accepted."""
    if not isinstance(message, dict):
        raise BadReply(f"reply has no message object (got {type(message).__name__})")
    reply = ChatReply(
        content=str(message.get("content") or ""),
        thinking=str(message.get("thinking") or ""),
        tokens_in=tokens_in,
        tokens_out=tokens_out,
    )
    for raw in message.get("tool_calls") or []:
        _add_structured_call(reply, raw)
    return reply


def _add_structured_call(reply: ChatReply, raw: Any) -> None:
    function = raw.get("function") if isinstance(raw, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(function, dict) or not isinstance(name, str) or not name.strip():
        reply.malformed.append(f"a tool call without a function name: {_clip(json.dumps(raw))}")
        return
    arguments = coerce_arguments(function.get("arguments"))
    if arguments is None:
        shown = _clip(str(function.get("arguments")))
        reply.malformed.append(f"arguments of {name.strip()} are not a JSON object: {shown}")
        return
    reply.tool_calls.append(ToolCall(name, arguments))  # as written: the loop repairs it and records both


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context per process: building one loads the CA bundle (tens of ms per client)."""
    return ssl.create_default_context()


class OllamaClient:
    """Chat with one model on one Ollama server, with bounded retries and a timeout."""

    def __init__(
        self,
        model: str,
        host: str | None = None,
        *,
        num_ctx: int = DEFAULT_NUM_CTX,
        timeout_s: float = 300.0,
        retries: int = 3,
        backoff_s: float = 0.5,
        stream: bool = True,
        sleep: Callable[[float], None] = time.sleep,
        options: dict[str, Any] | None = None,
        on_retry: Callable[[str], None] | None = None,
        on_tokens: Callable[[int], None] | None = None,
        think: bool | str | None = None,
    ) -> None:
        self.model = model
        # Ollama's `think` (None: not sent, the model's default); dropped for good once the server
        # says the model does not support thinking, and `on_no_thinking` is told once
        self.think = think
        self.on_no_thinking: Callable[[str], None] | None = None
        self.on_retry = on_retry
        self.on_tokens = on_tokens
        self.base_url = normalize_host(host)
        self.num_ctx = num_ctx
        self.retries = retries
        self.backoff_s = backoff_s
        self.stream = stream
        self._sleep = sleep
        self._options = dict(options or {})
        # False once the server said this model's template has no tools: the calls then come as
        # text, which the loop parses, from the tool list in the system prompt
        self.tools_supported = True
        # The read timeout bounds the wait for each chunk; a stream keeps a slow
        # but live model going while a dead one is noticed.
        # Plain HTTP (the usual local server) needs no TLS context: building one, and a client
        # around it, costs tens of ms a process, more than a whole short run's other work.
        verify: ssl.SSLContext | bool = _tls() if self.base_url.startswith("https://") else False
        self._http = httpx.Client(timeout=httpx.Timeout(timeout_s, connect=min(10.0, timeout_s)), verify=verify)

    def close(self) -> None:
        self._http.close()

    def request_body(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        # num_ctx always goes out: Ollama otherwise truncates at its own default silently.
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "stream": self.stream,
            "options": {**self._options, "num_ctx": self.num_ctx},
        }
        if tools and self.tools_supported:
            body["tools"] = tools
        if self.think is not None:
            body["think"] = self.think
        return body

    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        started = time.monotonic()
        try:
            reply = self._with_retries(lambda: self._post_chat(self.request_body(messages, tools)))
        except _NoToolSupport:
            self.tools_supported = False
            reply = self._with_retries(lambda: self._post_chat(self.request_body(messages, tools)))
        except _NoThinking as refused:
            self.think = None
            if self.on_no_thinking:
                self.on_no_thinking(str(refused))
            return self.chat(messages, tools)
        reply.duration_s = time.monotonic() - started
        return reply

    def _with_retries(self, attempt: Callable[[], ChatReply]) -> ChatReply:
        for n in range(self.retries + 1):
            try:
                return attempt()
            except _Retryable as failure:
                if n == self.retries:
                    raise ModelUnavailable(str(failure)) from None
                delay = self.backoff_s * (2**n)
                if self.on_retry:
                    self.on_retry(f"trying again in {delay:g} s (attempt {n + 2} of {self.retries + 1}): {failure}")
                self._sleep(delay)
        raise AssertionError("unreachable")

    def _post_chat(self, body: dict[str, Any]) -> ChatReply:
        url = f"{self.base_url}/api/chat"
        try:
            with self._http.stream("POST", url, json=body) as response:
                self._check_status(response)
                lines = response.iter_lines()
                return _read_stream(lines, url, self.on_tokens) if body["stream"] else _read_whole(lines, url)
        except httpx.TimeoutException as exc:
            raise _Retryable(f"Ollama at {self.base_url} did not answer in time ({type(exc).__name__})") from None
        except (httpx.TransportError, OSError) as exc:
            cause = _cause(exc)
            raise _Retryable(f"cannot reach Ollama at {self.base_url}: {cause}; is ollama running there?") from None

    def _check_status(self, response: httpx.Response) -> None:
        if response.status_code < 400:
            return
        response.read()
        text = _error_text(response.text)
        if response.status_code >= 500:
            raise _Retryable(f"Ollama at {self.base_url} failed with HTTP {response.status_code}: {text}")
        if response.status_code == 404 and "not found" in text.lower():
            raise ModelUnavailable(
                f"model '{self.model}' is not available on {self.base_url}; run: ollama pull {self.model}"
            )
        if response.status_code == 400 and "does not support tools" in text and self.tools_supported:
            raise _NoToolSupport(text)
        if response.status_code == 400 and "does not support thinking" in text and self.think is not None:
            raise _NoThinking(text)
        raise BadReply(f"Ollama at {self.base_url} refused the request (HTTP {response.status_code}): {text}")


class _Retryable(Exception):
    """A failure worth another attempt: connection trouble, timeouts, 5xx."""


class _NoToolSupport(Exception):
    """The model's template has no tool support (Ollama answers 400): ask again without `tools`."""


class _NoThinking(Exception):
    """The model cannot think (Ollama answers 400 to `think`): ask again without it."""


# The families whose thinking must go back with the turn that carries it: gpt-oss (the harmony
# format) forgets why it called a tool when the reasoning of that turn is dropped (Ollama's thinking
# page, docs.ollama.com/capabilities/thinking, lists it as the one model that takes levels; the
# Codex CLI change for gpt-oss over Chat Completions sends the reasoning back for that reason).
# Every other family is sent its history without it: the templates of qwen3, deepseek-r1 and the
# rest drop earlier thinking anyway, and it would only cost the window.
THINKING_KEPT = ("gpt-oss",)


def keeps_thinking(model: str) -> bool:
    """Whether a model's own thinking goes back into its history (see THINKING_KEPT)."""
    name = model.rsplit("/", 1)[-1].lower()
    return name.startswith(THINKING_KEPT)


def _cause(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    if "refused" in text.lower():
        return "connection refused"
    return _clip(text.splitlines()[0] if text else type(exc).__name__, 160)


def _error_text(body: str) -> str:
    try:
        data = json.loads(body)
    except ValueError:
        return _clip(body.strip() or "(empty body)")
    if isinstance(data, dict) and isinstance(data.get("error"), str):
        return _clip(data["error"])
    return _clip(body.strip())


def _parse_json_line(line: str, url: str) -> dict[str, Any]:
    try:
        data = json.loads(line)
    except ValueError:
        raise BadReply(f"{url} sent a reply that is not JSON: {_clip(line.strip())!r}") from None
    if not isinstance(data, dict):
        raise BadReply(f"{url} sent JSON that is not an object: {_clip(line.strip())!r}")
    if isinstance(data.get("error"), str):
        raise BadReply(f"{url} reported an error: {_clip(data['error'])}")
    return data


def _read_whole(lines: Iterator[str], url: str) -> ChatReply:
    text = "\n".join(lines).strip()
    if not text:
        raise BadReply(f"{url} sent an empty reply")
    data = _parse_json_line(text, url)
    if "message" not in data:
        raise BadReply(f"{url} sent a reply without a message: {_clip(text)!r}")
    return decode_message(
        data["message"], tokens_in=_count(data, "prompt_eval_count"), tokens_out=_count(data, "eval_count")
    )


def _read_stream(lines: Iterator[str], url: str, on_tokens: Callable[[int], None] | None = None) -> ChatReply:
    content: list[str] = []
    thinking: list[str] = []
    calls: list[Any] = []
    final: dict[str, Any] | None = None
    seen_message = False
    for line in lines:
        if not line.strip() or final is not None:
            continue  # read to the end, so the connection can be reused
        chunk = _parse_json_line(line, url)
        message = chunk.get("message")
        if isinstance(message, dict):
            seen_message = True
            content.append(str(message.get("content") or ""))
            thinking.append(str(message.get("thinking") or ""))
            calls.extend(message.get("tool_calls") or [])
            if on_tokens:
                on_tokens(len(content))
        elif not chunk.get("done"):
            raise BadReply(f"{url} sent a chunk without a message: {_clip(line.strip())!r}")
        if chunk.get("done"):
            final = chunk
    if final is None:
        raise BadReply(f"{url} ended the reply before it was done" if content else f"{url} sent an empty reply")
    if not seen_message:
        raise BadReply(f"{url} sent a reply without a message")
    merged = {"content": "".join(content), "thinking": "".join(thinking), "tool_calls": calls}
    return decode_message(merged, tokens_in=_count(final, "prompt_eval_count"), tokens_out=_count(final, "eval_count"))


def _count(data: dict[str, Any], key: str) -> int:
    value = data.get(key)
    return value if isinstance(value, int) and value >= 0 else 0


def probe(host: str | None, *, timeout_s: float = 1.5) -> list[str] | None:
    """Names of the models an Ollama server has, or None when nothing answers there."""
    try:
        base = normalize_host(host)
        # as in OllamaClient: plain HTTP needs no TLS context, whose certificates cost tens of ms
        verify: ssl.SSLContext | bool = _tls() if base.startswith("https://") else False
        response = httpx.get(f"{base}/api/tags", timeout=timeout_s, verify=verify)
        models = response.json().get("models", []) if response.status_code == 200 else None
    except (httpx.HTTPError, OSError, ValueError, AttributeError):
        return None
    if not isinstance(models, list):
        return None
    return [str(m.get("name")) for m in models if isinstance(m, dict) and m.get("name")]


def server_models(host: str | None, *, timeout_s: float = 2.0) -> dict[str, list[dict[str, Any]]]:
    """What the server holds: `pulled` (/api/tags) and `loaded` (/api/ps, with their memory), each
    a list of Ollama's own objects; ModelUnavailable, one line with the URL, when it does not answer."""
    base = normalize_host(host)
    verify: ssl.SSLContext | bool = _tls() if base.startswith("https://") else False
    found: dict[str, list[dict[str, Any]]] = {}
    for key, path in (("pulled", "/api/tags"), ("loaded", "/api/ps")):
        try:
            response = httpx.get(f"{base}{path}", timeout=timeout_s, verify=verify)
            models = response.json().get("models") if response.status_code == 200 else None
        except (httpx.HTTPError, OSError) as exc:
            raise ModelUnavailable(
                f"cannot reach Ollama at {base}: {_cause(exc)}; is ollama.service running?"
            ) from None
        except (ValueError, AttributeError):
            models = None
        if not isinstance(models, list):
            raise ModelUnavailable(
                f"Ollama at {base} answered {path} with {response.status_code}, not a list of models"
            )
        found[key] = [m for m in models if isinstance(m, dict)]
    return found
