"""A deterministic model for the self-test and the demo: plays wire-format replies in order.

Each reply goes through the same decoder as a real Ollama reply (`decode_message`), so a
scripted structured call with string arguments is handled exactly as a server's would be.
A reply may be a callable of the messages so far, to answer from what the tools returned.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent.model.ollama_client import BadReply, ChatReply, decode_message

Reply = dict[str, Any] | Callable[[list[dict[str, Any]]], dict[str, Any]]


class ScriptedModel:
    def __init__(self, replies: list[Reply], *, model: str = "scripted", tokens: tuple[int, int] = (0, 0)) -> None:
        self.model = model
        self._replies = list(replies)
        self._tokens = tokens
        self.requests: list[list[dict[str, Any]]] = []

    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        self.requests.append([dict(m) for m in messages])
        if not self._replies:
            raise BadReply("the scripted model has no more replies")
        reply = self._replies.pop(0)
        message = reply(messages) if callable(reply) else reply
        return decode_message(message, tokens_in=self._tokens[0], tokens_out=self._tokens[1])
