"""A deterministic model for the self-test and the demo: plays wire-format replies in order.

Each reply goes through the same decoder as a real Ollama reply (`decode_message`), so a
scripted structured call with string arguments is handled exactly as a server's would be.
A reply may be a callable of the messages so far, to answer from what the tools returned.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from agent.model.reply import BadReply, ChatReply, decode_message

Reply = dict[str, Any] | Callable[[list[dict[str, Any]]], dict[str, Any]]


CHARS_PER_TOKEN = 4  # a rough rule for English text and JSON; no tokenizer plays a script


def estimated_tokens(text: str) -> int:
    """Tokens a text would take, estimated from its length (at least 1 for any text)."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


class ScriptedModel:
    """`tokens`: the (in, out) every turn reports; `counted`: estimate them from the text instead
    (the prompt's messages and tool schemas in, the reply out), as the demo does so its turns do
    not read 0 in / 0 out. Each turn's duration is its measured time either way."""

    def __init__(
        self,
        replies: list[Reply],
        *,
        model: str = "scripted",
        tokens: tuple[int, int] = (0, 0),
        counted: bool = False,
    ) -> None:
        self.model = model
        self._replies = list(replies)
        self._tokens = tokens
        self.counted = counted
        self.requests: list[list[dict[str, Any]]] = []
        self.schemas: list[dict[str, Any] | None] = []  # what each turn's reply was held to (None: free)

    def chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], schema: dict[str, Any] | None = None
    ) -> ChatReply:
        self.requests.append([dict(m) for m in messages])
        self.schemas.append(schema)
        if not self._replies:
            raise BadReply("the scripted model has no more replies")
        started = time.perf_counter()
        reply = self._replies.pop(0)
        message = reply(messages) if callable(reply) else reply
        tokens_in, tokens_out = self._tokens
        if self.counted:
            prompt = json.dumps([messages, tools], ensure_ascii=False, default=str)
            tokens_in, tokens_out = estimated_tokens(prompt), estimated_tokens(json.dumps(message, default=str))
        decoded = decode_message(message, tokens_in=tokens_in, tokens_out=tokens_out)
        decoded.duration_s = time.perf_counter() - started
        return decoded
