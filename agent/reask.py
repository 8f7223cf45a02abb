"""A reply that could be neither parsed nor accepted, asked again with its shape constrained.

A server can hold what a model writes to a JSON schema (Ollama's `format`, llama.cpp's and vLLM's
`response_format`): the same turn is asked again, the same messages (so the server's prompt cache
holds and no message is added to the conversation), with the reply held to one step: a call of one of
the run's tools with its own arguments, or the final answer. What comes back is read here; a reply
that still cannot be read leaves the loop to its nudge.

    {"name": "read_file", "arguments": {"path": "notes.txt"}}      a call
    {"name": "answer", "arguments": {"text": "..."}}                 the final answer
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from agent.parsing.calls import ToolCall

ANSWER = "answer"  # the step that ends the run; never a tool's name (a tool of that name is left out)


def step_schema(tool_schemas: list[dict[str, Any]]) -> dict[str, Any]:
    """One step as a JSON schema: each tool with its own parameters, or the answer."""
    steps = [_call_schema(s["function"]) for s in tool_schemas if s["function"]["name"] != ANSWER]
    answer = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    steps.append(_shape(ANSWER, answer))
    return {"anyOf": steps}


def _call_schema(function: dict[str, Any]) -> dict[str, Any]:
    parameters = function.get("parameters") or {"type": "object", "properties": {}}
    closed = {**parameters, "additionalProperties": False}
    return _shape(function["name"], closed)


def _shape(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"name": {"const": name}, "arguments": arguments},
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }


def call_shaped(text: str, names: list[str]) -> bool:
    """Whether a reply is nothing but one call's JSON (fenced or not) that the parser declined: an
    object naming one of the run's tools (a small model adds a made-up "result" to it), one shaped
    as a call of a tool the run lacks (a real 0.5B model called `is_even` with a schema for its
    argument, asked to write that function), or a call begun and written broken. Never a final answer."""
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[-1] if "\n" in body else ""
        body = body.rsplit("```", 1)[0].strip()
    try:
        data = json.loads(body)
    except ValueError:
        return _CALL_BEGUN.match(body) is not None
    if not isinstance(data, dict):
        return False
    return data.get("name") in names or (isinstance(data.get("name"), str) and isinstance(data.get("arguments"), dict))


_CALL_BEGUN = re.compile(r'\{\s*"name"\s*:\s*"[^"\n]{1,80}"\s*,\s*"arguments"\s*:')


@dataclass(frozen=True)
class Step:
    """What a constrained reply said: its calls, or its answer."""

    calls: tuple[ToolCall, ...] = ()
    answer: str = ""


def read_step(text: str, names: list[str]) -> Step | None:
    """The step a constrained reply holds, or None when it holds none the run can use."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("arguments"), dict):
        return None
    name, arguments = data.get("name"), data["arguments"]
    if name == ANSWER:
        said = arguments.get("text")
        return Step(answer=said.strip()) if isinstance(said, str) and said.strip() else None
    if isinstance(name, str) and name in names:
        return Step(calls=(ToolCall(name, arguments),))
    return None
