"""A call's arguments checked against its tool's params: types, enums, lengths and numeric bounds.

The gate's validation step (agent/tools/gate.py), apart because it is the one step that speaks to
weak models' habits: what a small model writes for "no value", numbers sent as text, and the words
it is told when an argument is wrong (never a type name: it copies those into the argument).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agent.safety.display import shorten
from agent.tools.registry import ARGUMENTS_LIMIT, Tool, arguments_size

__all__ = ["validate_arguments"]

_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "boolean": (bool,)}


def validate_arguments(tool: Tool, args: Any) -> dict[str, Any] | str:
    """The arguments, coerced where a weak model's intent is unambiguous, or an error line."""
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return f"Error: arguments of {tool.name} must be a JSON object of named values; you sent {_shown(args)}"
    size = arguments_size(args, ARGUMENTS_LIMIT)
    if size is None:  # nested past any sense, or circular
        return f"Error: arguments of {tool.name} are nested too deeply; give flat values as its schema says"
    if size > ARGUMENTS_LIMIT:
        return f"Error: arguments of {tool.name} are larger than {ARGUMENTS_LIMIT} characters; nothing was run"
    unknown = sorted(set(args) - set(tool.params))
    if unknown:
        return f"Error: {tool.name} has no argument {unknown[0]!r}; it takes: {_signature(tool)}"
    # small models fill every optional argument, with null when they mean "not given": so it is taken
    args = {k: v for k, v in args.items() if k in tool.required or not _unset(v, tool.params[k])}
    missing = [p for p in tool.required if p not in args or args[p] is None]
    if missing:
        return f"Error: {tool.name} needs argument {missing[0]!r}; it takes: {_signature(tool)}"
    out: dict[str, Any] = {}
    for key, value in args.items():
        coerced = _coerce(value, tool.params[key])
        if isinstance(coerced, _Invalid):
            return f"Error: {coerced.reason(key, tool.name, optional=key not in tool.required)}"
        out[key] = coerced
    return out


# what a model writes for "no value" where a number or a switch goes: the argument is taken as not given
_NOTHING = frozenset({"", "null", "none", "nil", "undefined", "nonetype"})


def _unset(value: Any, spec: dict[str, Any]) -> bool:
    if value is None:
        return True
    return spec.get("type", "string") != "string" and isinstance(value, str) and value.strip().lower() in _NOTHING


@dataclass(frozen=True)
class _Invalid:
    problem: str
    out_of_bounds: bool = False

    def reason(self, key: str, tool: str, *, optional: bool = False) -> str:
        # a bound reads as the tools always said it: "max_bytes must be between 1 and 1000000, got 0"
        if self.out_of_bounds:
            return f"{key} {self.problem}"
        # said in words a small model can act on, never a type name (it copies those into the argument)
        leave = f", or leave {key} out" if optional else ""
        return f"argument {key!r} of {tool} {self.problem}{leave}"


def _coerce(value: Any, spec: dict[str, Any]) -> Any:
    kind = spec.get("type", "string")
    if kind == "integer" and isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value.strip())
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        value = int(value)
    if kind == "boolean" and isinstance(value, str) and value.strip().lower() in ("true", "false"):
        value = value.strip().lower() == "true"
    if kind == "string" and isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    expected = _TYPES.get(kind, (object,))
    if not isinstance(value, expected) or (kind == "integer" and isinstance(value, bool)):
        return _Invalid(f"must be {_WANTED.get(kind, kind)}; you sent {_shown(value)}")
    if "enum" in spec and value not in spec["enum"]:
        return _Invalid(f"must be one of {', '.join(map(str, spec['enum']))}, got {value!r}")
    if kind == "integer" and not spec.get("minimum", value) <= value <= spec.get("maximum", value):
        return _Invalid(f"must be between {spec['minimum']} and {spec['maximum']}, got {value}", out_of_bounds=True)
    if isinstance(value, str) and "\x00" in value and not spec.get("binary_ok"):
        return _Invalid("contains a NUL byte")
    if isinstance(value, str) and len(value) > spec.get("maxLength", ARGUMENTS_LIMIT):
        return _Invalid(f"is {len(value)} characters long; the limit is {spec['maxLength']}")
    return value


# what each type is, as a model is told when it sent something else
_WANTED = {
    "integer": "a whole number such as 10",
    "number": "a number such as 1.5",
    "boolean": "true or false",
    "string": 'text in quotes, such as "notes.txt"',
    "array": "a list in square brackets",
    "object": "a JSON object in braces",
}


def _shown(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else shorten(json.dumps(value, default=str))
    return text if len(text) <= 40 else text[:40] + "..."


def _signature(tool: Tool) -> str:
    parts = [
        f"{p} ({s.get('type', 'string')}{'' if p in tool.required else ', optional'})" for p, s in tool.params.items()
    ]
    return ", ".join(parts) or "no arguments"
