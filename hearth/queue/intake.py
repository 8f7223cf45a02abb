"""A request's intake: untrusted bytes (a queue file) or a JSON object of either shape -> a `Parsed`
request, or `RequestRefused`, whose text is the one line saying what was wrong.

`parse_request(data, name)` reads a queue file; `build_request(obj, file_id=...)` a JSON object (the
command center's launch, `hearth enqueue`, `hearth continue`); `check(request)` what the schema
cannot say (the tools it names exist on this host). Nothing else in hearth interprets a request's bytes.

Its own room because it is a wall: a hostile file is refused here (floods, bad encodings, duplicate
keys, deep nesting, huge numbers, NULs, lone surrogates) before any field means anything, and every
refusal is worded in the sender's own field names (`LEGACY_NAMES` for the legacy shape). The shape
a request must take is hearth/queue/request.py.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from hearth.errors import HearthError
from hearth.ids import printable
from hearth.queue.request import RULES, LegacyRequest, Request

MAX_BYTES = 1 << 20  # a request is a few hundred bytes; a megabyte is a flood or a mistake
MAX_DEPTH = 8  # a request nests two levels (object -> list -> string)
MAX_NUMBER_DIGITS = 20  # every number a request holds fits in 6 digits; 5,000 of them is an attack on int()
UNSUPPORTED_FLAGS = ("checkin", "grow")
BOM = b"\xef\xbb\xbf"  # queue-spec: UTF-8 without a byte-order mark, one rule for every writer


class RequestRefused(HearthError):
    """A request that must not run; str() is the one-line reason recorded beside it."""


# Request field -> legacy field, for mapping and for errors in the sender's own words.
LEGACY_NAMES = {
    "goal": "prompt",
    "label": "name",
    "model": "model",
    "mode": "mode",
    "credentials": "creds",
    "allowed_tools": "tools",
    "egress": "allowed_hosts",
    "evolve": "evolve",
    "id": "file name",
}


@dataclass(frozen=True)
class Parsed:
    request: Request
    shape: str  # "v1" | "legacy"


def parse_request(data: bytes, name: str) -> Parsed:
    """A queue file's bytes and name -> the request; RequestRefused says why not."""
    name = printable(name)
    if not name.endswith(".json"):
        raise RequestRefused("not a .json file; requests are named <id>.json")
    return build_request(load_json(data), file_id=name[: -len(".json")])


def load_json(data: bytes) -> dict[str, Any]:
    """Bytes -> a JSON object, refusing floods, bad encodings (a byte-order mark too), duplicate keys and deep nesting."""
    if len(data) > MAX_BYTES:
        raise RequestRefused(f"larger than 1 MiB ({len(data)} bytes)")
    if data.startswith(BOM):
        raise RequestRefused("starts with a UTF-8 byte-order mark; a request is UTF-8 without one")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RequestRefused(f"not UTF-8: byte 0x{data[exc.start]:02x} at offset {exc.start}") from None
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicates, parse_int=_integer, parse_constant=_no_constant)
    except RecursionError:
        raise RequestRefused(f"nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise RequestRefused(f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except ValueError as exc:  # whatever else the decoder trips on is the file's fault, never a crash
        raise RequestRefused(f"not valid JSON: {str(exc)[:120]}") from None
    if _depth(value) > MAX_DEPTH:
        raise RequestRefused(f"nested deeper than {MAX_DEPTH} levels")
    if not isinstance(value, dict):
        raise RequestRefused(f"not a JSON object but {_json_kind(value)}")
    _check_text(value)
    return value


def _integer(digits: str) -> int:
    count = len(digits.lstrip("-"))
    if count > MAX_NUMBER_DIGITS:
        raise RequestRefused(f"a number with {count} digits; no field takes more than {MAX_NUMBER_DIGITS}")
    return int(digits)


def _no_constant(name: str) -> Any:
    raise RequestRefused(f"not valid JSON: {name} is not a JSON number")


def _check_text(value: Any) -> None:
    """Every string (keys too) is text SQLite, a terminal and a tool can take: no NUL, no lone surrogate."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, where = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                _check_string(key, f"the key {_show(key)}")
                stack.append((child, key if not where else f"{where}.{key}"))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{n}]") for n, child in enumerate(item))
        elif isinstance(item, str):
            _check_string(item, where or "a string")


def _check_string(text: str, where: str) -> None:
    if "\x00" in text:
        raise RequestRefused(f"{where} contains a NUL character (at position {text.index(chr(0))})")
    bad = next((c for c in text if "\ud800" <= c <= "\udfff"), None)
    if bad is not None:
        raise RequestRefused(f"{where} contains a lone surrogate (\\u{ord(bad):04x}), which is not text")


def build_request(obj: dict[str, Any], *, file_id: str | None, names: dict[str, str] | None = None) -> Parsed:
    """A JSON object of either shape -> the request. `file_id` is the id the file name gives;
    `names` how the sender named each field, when not as JSON (a command's flags)."""
    if is_legacy(obj):
        return Parsed(from_legacy(obj, file_id or ""), "legacy")
    try:
        request = Request.model_validate_json(json.dumps(obj))
    except ValidationError as exc:
        raise RequestRefused(describe(exc, names)) from None
    if file_id is not None and request.id != file_id:
        raise RequestRefused(f"id {_show(request.id)} does not match the file name {_show(file_id + '.json')}")
    return Parsed(request, "v1")


def is_legacy(obj: dict[str, Any]) -> bool:
    """The legacy shape is told apart by its `prompt` (version 1 says `goal` and has `version`)."""
    return "prompt" in obj and "goal" not in obj and "version" not in obj


def from_legacy(obj: dict[str, Any], request_id: str) -> Request:
    """Map the command center's shape onto Request; an empty string means the field was not given."""
    try:
        legacy = LegacyRequest.model_validate(obj)
    except ValidationError as exc:
        raise RequestRefused(describe(exc)) from None
    for flag in UNSUPPORTED_FLAGS:
        if getattr(legacy, flag):
            raise RequestRefused(f"{flag} is not supported by this version of hearth")
    mapped: dict[str, Any] = {
        "id": request_id,
        "goal": legacy.prompt,
        "source": "command-center",
        "evolve": legacy.evolve,
        **({"marathon": {}} if legacy.marathon else {}),
        **({"swarm": {}} if legacy.swarm else {}),
    }
    if legacy.name.strip():  # a free-text label; it picks a profile only when one of that name exists
        mapped["label"] = legacy.name.strip()
    for field, value in (("model", legacy.model), ("mode", legacy.mode)):
        if value != "":  # matched exactly: " bypass" and "bypass\n" are not bypass
            mapped[field] = value
    for field, value in (
        ("credentials", legacy.creds),
        ("allowed_tools", legacy.tools),
        ("egress", legacy.allowed_hosts),
    ):
        items = [item.strip() for item in value.split(",") if item.strip()]
        if items:
            mapped[field] = items
    try:
        return Request.model_validate(mapped)
    except ValidationError as exc:
        raise RequestRefused(describe(exc, names=LEGACY_NAMES)) from None


def check_runnable(request: Request, tools: Collection[str]) -> None:
    """What the schema cannot say: the tools it names exist on this host."""
    unknown = [name for name in request.allowed_tools or () if name not in tools]
    if unknown:
        raise RequestRefused(f"allowed_tools names a tool hearth does not have: {_show(unknown[0])}")


def describe(error: ValidationError, names: dict[str, str] | None = None) -> str:
    """Every problem pydantic found, each once, as one line in the sender's field names (`names`: a
    field as the sender wrote it, a legacy key or a command's flag)."""
    # An unknown field explains the rest (a misspelt `goal` is also a missing one): named first.
    problems = sorted(error.errors(include_url=False), key=lambda p: p["type"] != "extra_forbidden")
    return "; ".join(dict.fromkeys(_problem(p, names or {}) for p in problems))


BOUNDS = {
    "less_than_equal": ("le", "at most"),
    "greater_than_equal": ("ge", "at least"),
    "less_than": ("lt", "below"),
    "greater_than": ("gt", "above"),
}


def _problem(problem: ErrorDetails, names: dict[str, str]) -> str:
    loc = [str(part) for part in problem["loc"]]
    kind, value, ctx = problem["type"], problem.get("input"), problem.get("ctx") or {}
    if not loc:  # the request as a whole (fields that exclude each other)
        return problem["msg"].removeprefix("Value error, ")
    field = _field(loc, names)
    if kind == "extra_forbidden":
        return f"unknown field {_show(field if len(loc) > 1 else loc[0])}"
    if kind == "missing":
        return f"missing required field {_show(field)}"
    if kind == "string_pattern_mismatch":
        rule = RULES.get(loc[0], "it has characters outside the allowed set")
        return f"{field} {_show(value)} is not allowed: {rule}"
    if kind in BOUNDS and BOUNDS[kind][0] in ctx:
        key, words = BOUNDS[kind]
        return f"{field} must be {words} {ctx[key]}, got {_show(value)}"
    message = problem["msg"].removeprefix("Value error, ")
    message = message[:1].lower() + message[1:]
    if kind == "value_error":
        return f"{field} {message}"
    if message.startswith("input should be "):  # pydantic's words for what the field must be
        return f"{field} must be {message.removeprefix('input should be ')}, got {_show(value)}"
    return f"{field}: {message}, got {_show(value)}"


def _field(loc: list[str], names: dict[str, str]) -> str:
    if names:
        return names.get(loc[0], loc[0])  # legacy lists were one comma-separated string
    return loc[0] + "".join(f"[{part}]" for part in loc[1:])


def _show(value: Any, limit: int = 60) -> str:
    """A value as the sender wrote it (JSON), cut to `limit` characters, quotes kept; a cut one
    says how long it was."""
    original = value
    if isinstance(value, str) and len(value) > limit:
        value = value[: limit - 1] + "…"
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > limit + 2:
        text = text[: limit - 1] + "…"
    elif value is original:
        return text
    if isinstance(original, str | list | dict):
        text += f" ({len(original)} {'characters' if isinstance(original, str) else 'items'})"
    return text


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise RequestRefused(f"duplicate key {_show(key)}")
        seen[key] = value
    return seen


def _depth(value: Any) -> int:
    """Nesting depth without recursion (a hostile file must not exhaust the stack)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
    return deepest


def _json_kind(value: Any) -> str:
    kinds = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return "null" if value is None else kinds.get(type(value), type(value).__name__)


def check(request: Request) -> None:
    """RequestRefused unless this host can run the request (the tools it names exist)."""
    from agent.tools.builtin import TOOLS  # the whole tool table, only once a request is read

    check_runnable(request, TOOLS)
