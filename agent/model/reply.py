"""What every model backend hands the loop: one `ChatReply` per turn, through the `ChatModel` Protocol.

The loop, compaction, the extractor and long work speak to a model only through `ChatModel`, so a
backend (agent/model/backends.py: Ollama, OpenAI-compatible servers) is a row of a table, not a
branch in the engine. The history every backend is handed is hearth's own (Ollama-shaped: tool calls
as `{"function": {"name", "arguments": {...}}}`, results as `{"role": "tool", "tool_name"}`); a
backend that speaks another wire format translates it, the same bytes for the same history.

Errors, each one line that says what failed and what to do::

    ModelError
    ├── ModelUnavailable   cannot reach the server, it kept failing (5xx, timeout),
    │                      or the model is not there
    └── BadReply           the server answered, but not with a usable chat reply
                           (not JSON, empty, no message, an error object)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent.errors import AgentError
from agent.parsing import ToolCall, coerce_arguments


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
    # prompt tokens the server took from its cache instead of evaluating (-1: the server did not say)
    tokens_cached: int = -1
    duration_s: float = 0.0
    first_token_s: float = 0.0  # from the request to the first streamed chunk (0: not streamed)
    cut: bool = False  # the reply stopped at the reply-length cap, not where the model ended it
    runaway: bool = False  # cut by hearth: it repeated one stretch of text (agent/model/runaway.py)
    host: str = ""  # the host that answered, when a HostPool chose among several (agent/model/hosts.py)


class ChatModel(Protocol):
    """What the loop needs from a model: one chat turn; with `schema`, a reply held to that JSON
    schema by the server (Ollama's `format`, OpenAI's `response_format`), where it can."""

    model: str

    def chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], schema: dict[str, Any] | None = None
    ) -> ChatReply: ...


def decode_message(message: Any, *, tokens_in: int = 0, tokens_out: int = 0) -> ChatReply:
    """Turn an Ollama-shaped wire `message` object into a ChatReply; string arguments are accepted."""
    if not isinstance(message, dict):
        raise BadReply(f"reply has no message object (got {type(message).__name__})")
    reply = ChatReply(
        content=str(message.get("content") or ""),
        thinking=str(message.get("thinking") or ""),
        tokens_in=tokens_in,
        tokens_out=tokens_out,
    )
    for raw in message.get("tool_calls") or []:
        add_structured_call(reply, raw)
    return reply


def add_structured_call(reply: ChatReply, raw: Any) -> None:
    """One wire tool call into the reply, or its problem into `malformed` (the model is told)."""
    function = raw.get("function") if isinstance(raw, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(function, dict) or not isinstance(name, str) or not name.strip():
        reply.malformed.append(f"a tool call without a function name: {clip(json.dumps(raw))}")
        return
    arguments = coerce_arguments(function.get("arguments"))
    if arguments is None:
        shown = clip(str(function.get("arguments")))
        reply.malformed.append(f"arguments of {name.strip()} are not a JSON object: {shown}")
        return
    reply.tool_calls.append(ToolCall(name, arguments))  # as written: the loop repairs it and records both


def clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


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
