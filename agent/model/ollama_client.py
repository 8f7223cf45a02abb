"""The `ollama` row of the backend table: Ollama's `/api/chat`, `/api/tags`, `/api/ps`, `/api/show`,
`/api/embed`, and its load-on-empty-request warm-up.

`OllamaClient` is agent/model/transport.py's client with Ollama's wire: NDJSON streamed chunks, the
window sent as `options.num_ctx` on every request (Ollama otherwise truncates at its own default
silently), the reply cap as `options.num_predict`, `think` as Ollama's switch. The error tree is
agent/model/reply.py's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx

from agent.knowledge.embedding import EmbedFailed, EmbedModelMissing, checked_vectors
from agent.model.host import ChatOptions, Host, HostView, Loaded, ModelInfo
from agent.model.reply import (  # noqa: F401  (ChatModel, ModelError: the names scripts import from here)
    BadReply,
    ChatModel,
    ChatReply,
    ModelError,
    ModelUnavailable,
    clip,
    decode_message,
    keeps_thinking,
)
from agent.model.runaway import Runaway
from agent.model.transport import (
    HttpChat,
    cause,
    count,
    error_text,
    member,
    members,
    parse_json_line,
    verify_for,
)

EMBED_BATCH = 64  # texts per request: big enough to keep the model busy, small enough to answer in time


class OllamaClient(HttpChat):
    """Chat with one model on one Ollama server, with bounded retries and a timeout."""

    kind = "ollama"
    what = "Ollama"
    daemon = "ollama"
    path = "/api/chat"

    def request_body(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], schema: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        options = {**self.opts.extra, "num_ctx": self.opts.num_ctx}
        if self.opts.reply_tokens > 0:
            options["num_predict"] = self.opts.reply_tokens
        body: dict[str, Any] = {"model": self.model, "messages": messages, "stream": self.opts.stream}
        body["options"] = options
        if tools and self.tools_supported:
            body["tools"] = tools
        if self.think is not None:
            body["think"] = self.think
        if schema is not None:
            body["format"] = schema
        return body

    def refused(self, status: int, text: str) -> str:
        if status == 404 and "not found" in text.lower():
            raise ModelUnavailable(
                f"model '{self.model}' is not available on {self.base_url}; run: ollama pull {self.model}"
            )
        if status == 400 and "does not support tools" in text and self.tools_supported:
            return "tools"
        if status == 400 and "does not support thinking" in text and self.think is not None:
            return "thinking"
        return ""

    def read(self, lines: Iterator[str], url: str, stream: bool, started: float) -> ChatReply:
        return _read_stream(lines, url, started, self.on_tokens) if stream else _read_whole(lines, url)


def _read_whole(lines: Iterator[str], url: str) -> ChatReply:
    text = "\n".join(lines).strip()
    if not text:
        raise BadReply(f"{url} sent an empty reply")
    data = parse_json_line(text, url)
    if "message" not in data:
        raise BadReply(f"{url} sent a reply without a message: {clip(text)!r}")
    reply = decode_message(
        data["message"], tokens_in=count(data, "prompt_eval_count"), tokens_out=count(data, "eval_count")
    )
    reply.cut = data.get("done_reason") == "length"
    return reply


def _read_stream(
    lines: Iterator[str], url: str, started: float, on_tokens: Callable[[int], None] | None = None
) -> ChatReply:
    calls: list[Any] = []
    final: dict[str, Any] | None = None
    seen_message, first, chunks = False, 0.0, 0
    said, thought = Runaway(), Runaway()  # the reply's text and thinking as they come, watched
    for line in lines:
        if not line.strip() or final is not None:
            continue  # read to the end, so the connection can be reused
        chunk = parse_json_line(line, url)
        message = chunk.get("message")
        if isinstance(message, dict):
            seen_message, first, chunks = True, first or time.monotonic() - started, chunks + 1
            calls.extend(message.get("tool_calls") or [])
            if on_tokens:
                on_tokens(chunks)
            if said.feed(str(message.get("content") or "")) | thought.feed(str(message.get("thinking") or "")):
                return _ran_away(said, thought, calls, chunks, first)
        elif not chunk.get("done"):
            raise BadReply(f"{url} sent a chunk without a message: {clip(line.strip())!r}")
        if chunk.get("done"):
            final = chunk
    if final is None:
        raise BadReply(f"{url} ended the reply before it was done" if chunks else f"{url} sent an empty reply")
    if not seen_message:
        raise BadReply(f"{url} sent a reply without a message")
    merged = {"content": said.text(), "thinking": thought.text(), "tool_calls": calls}
    reply = decode_message(merged, tokens_in=count(final, "prompt_eval_count"), tokens_out=count(final, "eval_count"))
    reply.first_token_s, reply.cut = first, final.get("done_reason") == "length"
    return reply


def _ran_away(said: Runaway, thought: Runaway, calls: list[Any], chunks: int, first: float) -> ChatReply:
    """A reply left unread once it repeats itself (closing the stream stops the server): its text up to
    the first writing of what it repeated; the server's token counts never came, so each chunk counts one."""
    merged = {"content": said.text(), "thinking": thought.text(), "tool_calls": calls}
    reply = decode_message(merged, tokens_out=chunks)
    reply.first_token_s, reply.cut, reply.runaway = first, True, True
    return reply


class Ollama:
    """The backend: a chat client, what a server has, embeddings, warm-up (agent/model/backends.py)."""

    kind = "ollama"

    def client(self, host: Host, model: str, options: ChatOptions) -> OllamaClient:
        return OllamaClient(model, host, options)

    def look(self, host: Host, timeout_s: float, *, detail: bool = False) -> HostView:
        """Tags and loaded models; with `detail`, each model's window and capabilities (/api/show)."""
        base = host.base
        try:
            with httpx.Client(timeout=timeout_s, verify=verify_for(base)) as http:
                tags = _models(http.get(f"{base}/api/tags"), "tags")
                ps = _models(http.get(f"{base}/api/ps"), "ps")
                shown = {str(m.get("name")): _show(http, base, str(m.get("name"))) for m in tags} if detail else {}
        except (httpx.HTTPError, OSError, ValueError) as exc:
            return HostView(host, up=False, why=f"{base}: {cause(exc)}")
        names = tuple(str(m["name"]) for m in tags if m.get("name"))
        memory = tuple(_loaded(m) for m in ps if m.get("name") or m.get("model"))
        infos = tuple(_info(m, shown.get(str(m.get("name")), {})) for m in tags if m.get("name"))
        vram = sum(m.vram for m in memory)
        return HostView(host, True, names, tuple(m.name for m in memory), vram, infos=infos, memory=memory)

    def embed(self, host: Host, model: str, texts: list[str], timeout_s: float) -> list[list[float]]:
        out: list[list[float]] = []
        with httpx.Client(verify=verify_for(host.base)) as http:
            for start in range(0, len(texts), EMBED_BATCH):
                part = texts[start : start + EMBED_BATCH]
                raw = _embed(http, host.base, model, part, timeout_s)
                out.extend(checked_vectors(raw, len(part), model, len(out[0]) if out else None))
        return out

    def warm(self, host: Host, model: str, timeout_s: float) -> None:
        """Ask Ollama to load the model (a chat request without messages loads it and answers)."""
        try:
            httpx.post(
                f"{host.base}/api/chat",
                json={"model": model, "messages": []},
                timeout=timeout_s,
                verify=verify_for(host.base),
            )
        except (httpx.HTTPError, OSError):
            pass  # a warm-up is a courtesy: the run's first turn meets whatever is wrong and says it


def _models(response: httpx.Response, what: str) -> list[dict[str, Any]]:
    if response.status_code != 200:
        raise ValueError(f"/api/{what} answered HTTP {response.status_code}")
    models = response.json().get("models")
    if not isinstance(models, list):
        raise ValueError(f"/api/{what} has no list of models")
    return [m for m in models if isinstance(m, dict)]


def _show(http: httpx.Client, base: str, name: str) -> dict[str, Any]:
    try:
        response = http.post(f"{base}/api/show", json={"model": name})
        data = response.json() if response.status_code == 200 else {}
    except (httpx.HTTPError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _info(tag: dict[str, Any], shown: dict[str, Any]) -> ModelInfo:
    found = tag.get("details")
    details: dict[str, Any] = found if isinstance(found, dict) else {}
    model_info = member(shown, "model_info")
    window = next((v for k, v in model_info.items() if k.endswith(".context_length") and isinstance(v, int)), None)
    capabilities = members(shown, "capabilities")
    size = tag.get("size")
    return ModelInfo(
        name=str(tag.get("name")),
        context=window,
        size=size if isinstance(size, int) else None,
        family=details.get("family"),
        parameter_size=details.get("parameter_size"),
        quantization=details.get("quantization_level"),
        modified_at=tag.get("modified_at"),
        capabilities=tuple(str(c) for c in capabilities),
    )


def _loaded(model: dict[str, Any]) -> Loaded:
    value = model.get("size_vram") or model.get("size") or 0
    return Loaded(
        name=str(model.get("name") or model.get("model")),
        vram=value if isinstance(value, int) and value >= 0 else 0,
        expires_at=model.get("expires_at"),
        context=_whole(model.get("context_length")),
        size=_whole(model.get("size")),
        in_gpu=_whole(model.get("size_vram")),
    )


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _embed(http: httpx.Client, base: str, model: str, texts: list[str], timeout_s: float) -> Any:
    url = f"{base}/api/embed"
    try:
        response = http.post(url, json={"model": model, "input": texts}, timeout=timeout_s)
    except httpx.TimeoutException:
        raise EmbedFailed(f"{url} did not answer within {timeout_s:.1f} s") from None
    except (httpx.HTTPError, OSError) as exc:
        raise EmbedFailed(f"cannot reach {url}: {cause(exc)}; is ollama.service running?") from None
    if response.status_code == 404:
        raise EmbedModelMissing(f"the embedding model {model} is not pulled; run: ollama pull {model}")
    if response.status_code != 200:
        raise EmbedFailed(f"{url} answered HTTP {response.status_code}: {error_text(response.text)}")
    try:
        data = response.json()
    except ValueError:
        raise EmbedFailed(f"{url} answered something that is not JSON") from None
    return data.get("embeddings") if isinstance(data, dict) else None
