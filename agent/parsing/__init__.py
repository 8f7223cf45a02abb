"""Reply text -> list[ToolCall]; all JSON repair lives in this package and nowhere else.

extractors.py    parse_tool_calls, and the rule of what is and is not a call
calls.py         ToolCall and the records extractors share; the name rule (resolve)
reasoning.py     the reply without its reasoning channels
layout.py        where a span stands in the reply, and how the prose before it frames it
xml_calls.py     families whose arguments are elements (invoke/parameter, <function=...>, GLM)
tagged.py        families that name the tool in their own syntax (Mistral, DeepSeek, Kimi, ...)
json_calls.py    calls as JSON values, bare, fenced or after a marker
python_calls.py  calls in Python syntax
names.py         tool names as weak models spell them (resolve, suggest)
sieve.py         may_hold_a_call: the cheap test a reply passes before any reader loads
json_repair.py   lenient JSON: the repairs a weak model's output needs, and nothing more

The names below load their module on first use (PEP 562): the readers compile many patterns, and
a reply that cannot hold a call (`may_hold_a_call`) never needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agent.parsing.sieve import may_hold_a_call

if TYPE_CHECKING:
    from agent.parsing.calls import ToolCall, coerce_arguments, parameter_order
    from agent.parsing.extractors import looks_like_tool_call, parse_tool_calls, prose
    from agent.parsing.json_repair import loads_lenient
    from agent.parsing.names import resolve_tool_name, suggest_tool_name

__all__ = [
    "ToolCall",
    "coerce_arguments",
    "loads_lenient",
    "looks_like_tool_call",
    "may_hold_a_call",
    "parameter_order",
    "parse_tool_calls",
    "prose",
    "resolve_tool_name",
    "suggest_tool_name",
]

_HOMES = {
    "ToolCall": "calls", "coerce_arguments": "calls", "parameter_order": "calls",
    "looks_like_tool_call": "extractors", "parse_tool_calls": "extractors", "prose": "extractors",
    "loads_lenient": "json_repair", "resolve_tool_name": "names", "suggest_tool_name": "names",
}  # fmt: skip


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'agent.parsing' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"agent.parsing.{home}"), name)
    globals()[name] = value
    return value
