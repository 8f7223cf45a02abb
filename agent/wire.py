"""How the loop writes calls into the history and its step list: a flood of arguments is not carried
into every later request, a repaired name stands under the real tool's, and a call that could not
be read stands under one name, `invalid_call`."""

from __future__ import annotations

from typing import Any

from agent.parsing.calls import ToolCall
from agent.parsing.names import resolve_tool_name
from agent.tools.registry import ARGUMENTS_LIMIT, arguments_size

INVALID_CALL = "invalid_call"  # the name a malformed call stands under in the history


def invalid_call() -> dict[str, Any]:
    return {"function": {"name": INVALID_CALL, "arguments": {}}}


def kept(arguments: dict[str, Any]) -> dict[str, Any]:
    """A call's arguments as the history keeps them: a flood (which the gate refuses) is not
    carried into every later request."""
    size = arguments_size(arguments, ARGUMENTS_LIMIT)
    if size is not None and size <= ARGUMENTS_LIMIT:
        return arguments
    return {"omitted": f"arguments over the limit of {ARGUMENTS_LIMIT} characters (or nested too deeply)"}


def short_args(arguments: dict[str, Any], limit: int = 60) -> str:
    # each value cut before repr: a flood of an argument is never copied whole
    text = ", ".join(f"{k}={v[: limit + 1] if isinstance(v, str) else v!r}" for k, v in arguments.items())
    return text if len(text) <= limit else text[:limit] + "..."


def repaired(call: ToolCall, names: list[str]) -> ToolCall:
    """A structured call under its real tool's name, keeping the name the model wrote."""
    name = resolve_tool_name(call.name, names) or call.name
    return ToolCall(name, call.arguments, written="" if name == call.name else call.name)
