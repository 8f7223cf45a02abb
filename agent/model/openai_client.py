"""The `openai` row of the backend table: any server speaking OpenAI's `/v1/chat/completions` with
tools (llama.cpp's `llama-server`, vLLM, LM Studio, LocalAI, SGLang), its `/v1/models` and
`/v1/embeddings`.

hearth's history is Ollama-shaped (agent/model/reply.py); `wire_messages` translates it the same
way every time (a call's id is its position: `call_<turn>_<n>`, its arguments one JSON string), so
the request of each turn extends the previous one byte for byte and the server's prompt cache holds.
A streamed reply is server-sent events: content, reasoning and tool-call pieces by index, then the
usage (`stream_options.include_usage`). What the server took from its prompt cache is read from
`usage.prompt_tokens_details.cached_tokens`, else llama.cpp's `timings`.

The window: an OpenAI-compatible server fixes it when it starts (llama.cpp's `-c`, vLLM's
`--max-model-len`) and takes none per request; `look` reads it where the server says it
(vLLM's `max_model_len`, llama.cpp's `/props`) so a run can fit its own to it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx

from agent.knowledge.embedding import EmbedFailed, EmbedModelMissing, checked_vectors
from agent.model.host import ChatOptions, Host, HostView, Loaded, ModelInfo
from agent.model.reply import BadReply, ChatReply, ModelUnavailable, add_structured_call, clip, keeps_thinking
from agent.model.runaway import Runaway
from agent.model.transport import (
    HttpChat,
    auth_headers,
    cause,
    count,
    error_text,
    member,
    parse_json_line,
    verify_for,
)

# Ollama's options that mean the same in an OpenAI request (llama.cpp and vLLM take the sampling ones)
SAME_OPTIONS = ("temperature", "top_p", "top_k", "min_p", "seed", "stop", "presence_penalty", "frequency_penalty")
EMBED_BATCH = 64


class OpenAIClient(HttpChat):
    """Chat with one model on one OpenAI-compatible server, with bounded retries and a timeout."""

    kind = "openai"
    what = "the OpenAI-compatible server"
    daemon = "the server"
    path = "/v1/chat/completions"

    def request_body(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], schema: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": wire_messages(messages, keep_thinking=keeps_thinking(self.model)),
            "stream": self.opts.stream,
        }
        if self.opts.stream:
            body["stream_options"] = {"include_usage": True}
        if tools and self.tools_supported:
            body["tools"] = tools
        if self.opts.reply_tokens > 0:
            body["max_tokens"] = self.opts.reply_tokens
        body.update({k: v for k, v in self.opts.extra.items() if k in SAME_OPTIONS})
        if isinstance(self.think, str):
            body["reasoning_effort"] = self.think  # gpt-oss's levels, as OpenAI's API names them
        elif self.think is not None:
            body["chat_template_kwargs"] = {"enable_thinking": self.think}  # Qwen3's switch, on llama.cpp and vLLM
        if schema is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": {"name": "step", "schema": schema}}
        return body

    def refused(self, status: int, text: str) -> str:
        lowered = text.lower()
        if status == 404 or (status == 400 and "model" in lowered and "does not exist" in lowered):
            raise ModelUnavailable(
                f"model '{self.model}' is not served by {self.base_url}; its /v1/models lists the ones it serves"
            )
        if status in (401, 403):
            raise ModelUnavailable(
                f"{self.base_url} refused hearth's key (HTTP {status}): {text}; set the host's api_key"
            )
        if status == 400 and self.tools_supported and "tool" in lowered and _unsupported(lowered):
            return "tools"
        if status == 400 and self.think is not None and _about_thinking(lowered):
            return "thinking"
        return ""

    def read(self, lines: Iterator[str], url: str, stream: bool, started: float) -> ChatReply:
        if not stream:
            return _read_whole(lines, url)
        return _read_events(lines, url, started, self.on_tokens)


def _unsupported(text: str) -> bool:
    return any(w in text for w in ("not supported", "unsupported", "--jinja", "enable-auto-tool-choice", "requires"))


def _about_thinking(text: str) -> bool:
    return any(w in text for w in ("reasoning_effort", "enable_thinking", "chat_template_kwargs", "thinking"))


def wire_messages(messages: list[dict[str, Any]], *, keep_thinking: bool = False) -> list[dict[str, Any]]:
    """hearth's history in OpenAI's shape; the same history gives the same bytes (ids by position)."""
    out: list[dict[str, Any]] = []
    owed: list[str] = []  # ids of the last assistant turn's calls not yet answered, in order
    turn = orphans = 0
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            turn += 1
            wire, owed = _assistant(message, turn, keep_thinking)
        elif role == "tool":
            if not owed:
                orphans += 1
            call_id = owed.pop(0) if owed else f"call_{turn}_r{orphans}"
            wire = {"role": "tool", "tool_call_id": call_id, "content": str(message.get("content") or "")}
        else:
            wire = {"role": role, "content": str(message.get("content") or "")}
        out.append(wire)
    return out


def _assistant(message: dict[str, Any], turn: int, keep_thinking: bool) -> tuple[dict[str, Any], list[str]]:
    wire: dict[str, Any] = {"role": "assistant", "content": str(message.get("content") or "")}
    calls = message.get("tool_calls") or []
    ids = [f"call_{turn}_{n}" for n in range(len(calls))]
    if calls:
        wire["tool_calls"] = [_call(call, call_id) for call, call_id in zip(calls, ids)]
    if keep_thinking and message.get("thinking"):
        wire["reasoning_content"] = str(message["thinking"])
    return wire, ids


def _call(call: dict[str, Any], call_id: str) -> dict[str, Any]:
    function = member(call, "function")
    arguments = function.get("arguments", {})
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return {"id": call_id, "type": "function", "function": {"name": str(function.get("name", "")), "arguments": text}}


def _read_whole(lines: Iterator[str], url: str) -> ChatReply:
    text = "\n".join(lines).strip()
    if not text:
        raise BadReply(f"{url} sent an empty reply")
    data = parse_json_line(text, url)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise BadReply(f"{url} sent a reply without choices: {clip(text)!r}")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise BadReply(f"{url} sent a choice without a message: {clip(text)!r}")
    reply = ChatReply(content=str(message.get("content") or ""), thinking=_reasoning(message))
    for raw in message.get("tool_calls") or []:
        add_structured_call(reply, raw)
    _usage(reply, data)
    reply.cut = choices[0].get("finish_reason") == "length"
    return reply


def _reasoning(part: dict[str, Any]) -> str:
    return str(part.get("reasoning_content") or part.get("reasoning") or "")


def _usage(reply: ChatReply, data: dict[str, Any]) -> None:
    """Token counts from `usage` (and llama.cpp's `timings`): the prompt, the reply, what was cached."""
    usage = member(data, "usage")
    timings = member(data, "timings")
    details = member(usage, "prompt_tokens_details")
    reply.tokens_in = count(usage, "prompt_tokens", reply.tokens_in)
    reply.tokens_out = count(usage, "completion_tokens", reply.tokens_out)
    cached = count(details, "cached_tokens", -1)
    if cached < 0:
        cached = count(timings, "cache_n", -1)
    if cached < 0 and count(timings, "prompt_n", -1) >= 0 and reply.tokens_in:
        cached = max(0, reply.tokens_in - count(timings, "prompt_n"))
    if cached >= 0:
        reply.tokens_cached = cached


class _Pieces:
    """A streamed reply as it comes: text, reasoning, and each tool call's pieces by index."""

    def __init__(self) -> None:
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish = ""
        self.said, self.thought = Runaway(), Runaway()  # the text and reasoning as they come, watched

    def add(self, choice: dict[str, Any]) -> bool:
        """One choice of one event; True when it carried something of the reply."""
        delta = member(choice, "delta")
        self.finish = str(choice.get("finish_reason") or self.finish)
        text, reasoning = delta.get("content"), _reasoning(delta)
        if text:
            self.said.feed(str(text))
        if reasoning:
            self.thought.feed(reasoning)
        for n, piece in enumerate(delta.get("tool_calls") or []):
            if isinstance(piece, dict):
                self._call_piece(piece, n)
        return bool(text or reasoning or delta.get("tool_calls"))

    def _call_piece(self, piece: dict[str, Any], position: int) -> None:
        given = piece.get("index")
        index = given if isinstance(given, int) else position
        call = self.calls.setdefault(index, {"name": "", "arguments": ""})
        function = member(piece, "function")
        if function.get("name"):
            call["name"] = str(function["name"])
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # a server that sends the object whole
            call["arguments"] = arguments
        elif isinstance(arguments, str) and isinstance(call["arguments"], str):
            call["arguments"] += arguments

    @property
    def ran_away(self) -> bool:
        return self.said.keep >= 0 or self.thought.keep >= 0

    def reply(self) -> ChatReply:
        reply = ChatReply(content=self.said.text(), thinking=self.thought.text())
        for index in sorted(self.calls):
            call = self.calls[index]
            arguments = call["arguments"] if call["arguments"] != "" else "{}"
            add_structured_call(reply, {"function": {"name": call["name"], "arguments": arguments}})
        reply.cut, reply.runaway = self.finish == "length" or self.ran_away, self.ran_away
        return reply


def _read_events(
    lines: Iterator[str], url: str, started: float, on_tokens: Callable[[int], None] | None = None
) -> ChatReply:
    pieces, totals = _Pieces(), ChatReply()
    done = seen = False
    first, chunks = 0.0, 0
    for line in lines:
        if done or not line.startswith("data:"):
            continue  # comments, event names, blank separators; and after [DONE], read to the end
        payload = line[5:].strip()
        if payload == "[DONE]":
            done = True
            continue
        event = parse_json_line(payload, url)
        seen = True
        _usage(totals, event)
        for choice in event.get("choices") or []:
            if isinstance(choice, dict) and pieces.add(choice):
                first, chunks = first or time.monotonic() - started, chunks + 1
                if on_tokens:
                    on_tokens(chunks)
        if pieces.ran_away:  # left unread: closing the stream stops the server; its counts never come
            totals.tokens_out = chunks
            break
    if not seen:
        raise BadReply(f"{url} sent an empty reply")
    if not done and not pieces.finish and not pieces.ran_away:
        raise BadReply(f"{url} ended the reply before it was done")
    reply = pieces.reply()
    reply.tokens_in, reply.tokens_out, reply.tokens_cached = totals.tokens_in, totals.tokens_out, totals.tokens_cached
    reply.first_token_s = first
    return reply


class OpenAI:
    """The backend: a chat client, what a server serves, embeddings; no warm-up (the server loads
    its models when it starts)."""

    kind = "openai"

    def client(self, host: Host, model: str, options: ChatOptions) -> OpenAIClient:
        return OpenAIClient(model, host, options)

    def look(self, host: Host, timeout_s: float, *, detail: bool = False) -> HostView:
        """What the server serves (/v1/models); each is loaded, since such a server serves what it holds."""
        base = host.base
        try:
            with httpx.Client(timeout=timeout_s, verify=verify_for(base), headers=auth_headers(host)) as http:
                listed = _listed(http.get(f"{base}/v1/models"))
                window = (
                    _props_window(http, base) if detail or any(m.get("max_model_len") is None for m in listed) else None
                )
        except (httpx.HTTPError, OSError, ValueError) as exc:
            return HostView(host, up=False, why=f"{base}: {cause(exc)}")
        infos = tuple(_info(m, window) for m in listed)
        names = tuple(i.name for i in infos)
        memory = tuple(Loaded(i.name, context=i.context) for i in infos)
        return HostView(host, True, names, names, 0, infos=infos, memory=memory)

    def embed(self, host: Host, model: str, texts: list[str], timeout_s: float) -> list[list[float]]:
        out: list[list[float]] = []
        with httpx.Client(verify=verify_for(host.base), headers=auth_headers(host)) as http:
            for start in range(0, len(texts), EMBED_BATCH):
                part = texts[start : start + EMBED_BATCH]
                raw = _embed(http, host.base, model, part, timeout_s)
                out.extend(checked_vectors(raw, len(part), model, len(out[0]) if out else None))
        return out

    def warm(self, host: Host, model: str, timeout_s: float) -> None:
        """Nothing to do: an OpenAI-compatible server loads its models when it starts."""


def _listed(response: httpx.Response) -> list[dict[str, Any]]:
    if response.status_code != 200:
        raise ValueError(f"/v1/models answered HTTP {response.status_code}")
    data = response.json().get("data")
    if not isinstance(data, list):
        raise ValueError("/v1/models has no list of models")
    return [m for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]


def _props_window(http: httpx.Client, base: str) -> int | None:
    """llama.cpp's `/props`: the window each slot has (`n_ctx`); None where the server has no such page."""
    try:
        response = http.get(f"{base}/props")
        settings = response.json().get("default_generation_settings") if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    window = settings.get("n_ctx") if isinstance(settings, dict) else None
    return window if isinstance(window, int) and window > 0 else None


def _info(model: dict[str, Any], window: int | None) -> ModelInfo:
    own = model.get("max_model_len")
    meta = member(model, "meta")
    size = meta.get("size")
    return ModelInfo(
        name=str(model["id"]),
        context=own if isinstance(own, int) else window,
        size=size if isinstance(size, int) else None,
        family=str(model.get("owned_by")) if model.get("owned_by") else None,
    )


def _embed(http: httpx.Client, base: str, model: str, texts: list[str], timeout_s: float) -> Any:
    url = f"{base}/v1/embeddings"
    try:
        response = http.post(url, json={"model": model, "input": texts}, timeout=timeout_s)
    except httpx.TimeoutException:
        raise EmbedFailed(f"{url} did not answer within {timeout_s:.1f} s") from None
    except (httpx.HTTPError, OSError) as exc:
        raise EmbedFailed(f"cannot reach {url}: {cause(exc)}; is the embedding server running?") from None
    if response.status_code == 404:
        raise EmbedModelMissing(f"{url} does not serve the embedding model {model} (HTTP 404)")
    if response.status_code != 200:
        raise EmbedFailed(f"{url} answered HTTP {response.status_code}: {error_text(response.text)}")
    try:
        data = response.json().get("data")
    except (ValueError, AttributeError):
        raise EmbedFailed(f"{url} answered something that is not JSON") from None
    if not isinstance(data, list):
        return None
    ordered = sorted((d for d in data if isinstance(d, dict)), key=lambda d: d.get("index", 0))
    return [d.get("embedding") for d in ordered]
