"""The records every extractor shares, and the one rule for the names a call may carry.

`ToolCall` is what the loop gets. Inside the package an extractor turns a span of the reply into a
`Hit` holding `Candidate`s, and `resolve` decides which candidates are calls (see the name rule in
extractors.py): a name the run has, or an unknown name from a value that is certainly a call.
"""

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from agent.parsing.names import plain_name, resolve_tool_name


@dataclass(frozen=True)
class ToolCall:
    """One request from the model to run a tool.

    `known` is False when the reply named a tool the run does not have; the name is then kept as
    written, so the loop can answer "no tool named X; did you mean Y?". It is not part of equality:
    a call is its name and its arguments."""

    name: str
    arguments: dict[str, Any]
    known: bool = field(default=True, compare=False)
    # the name as the model wrote it, when the name was repaired (`functions.Read_File`); the
    # audit keeps it beside the tool that ran
    written: str = field(default="", compare=False)


class Candidate(NamedTuple):
    """A call as one format wrote it, before the name rule. `certain` when the format itself says
    this is a call (a name key beside an arguments key, a family's call syntax); not when only the
    shape suggests it (an object keyed by a name, a name line above JSON, Python syntax)."""

    name: str
    arguments: dict[str, Any]
    certain: bool


class Hit(NamedTuple):
    """A span an extractor consumed. `calls` is None when the reply was cut off inside it, () when
    it holds data. `marked` when a call marker opens it; `attempt` when it started the way a call
    starts, which is what looks_like_tool_call reports for a span that was cut off."""

    start: int
    end: int
    calls: tuple[ToolCall, ...] | None
    marked: bool
    attempt: bool


# A family's reader: (text, the family's match, the run's tools, where unread text begins) -> the
# span it consumed, or None to leave the text to the other families.
Reader = Callable[[str, re.Match[str], "ToolSet", int], Hit | None]


class NextMatch:
    """The next match of one pattern at or after a position, for positions that only grow: each
    search is remembered, so a close tag that never comes is looked for once, not once per opener."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.searched_from = -1
        self.found: re.Match[str] | None = None

    def search(self, text: str, pos: int) -> re.Match[str] | None:
        stale = pos < self.searched_from or (self.found is not None and self.found.start() < pos)
        if self.searched_from < 0 or stale:
            self.searched_from, self.found = pos, self.pattern.search(text, pos)
        return self.found


@dataclass(frozen=True)
class ToolSet:
    """The run's tools as the parser needs them: names, and each tool's parameters in order when
    known (positional Python arguments are mapped by that order, and never guessed without it)."""

    names: list[str]
    params: dict[str, list[str]]

    @classmethod
    def of(cls, tools: Iterable[str] | Mapping[str, Sequence[str]]) -> "ToolSet":
        if isinstance(tools, Mapping):
            return cls(list(tools), {name: list(params) for name, params in tools.items()})
        return cls(list(tools), {})


def parameter_order(schemas: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """{tool name: its parameter names in schema order} from tool schemas as Ollama takes them."""
    order: dict[str, list[str]] = {}
    for schema in schemas:
        function = schema.get("function", schema)
        properties = (function.get("parameters") or {}).get("properties") or {}
        if isinstance(function.get("name"), str):
            order[function["name"]] = list(properties)
    return order


def coerce_arguments(raw: Any) -> dict[str, Any] | None:
    """Arguments of a structured tool call as a dict: a dict as is, a (possibly broken) JSON string
    repaired, None or "" as {}; None for anything else or a string that cannot be repaired."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        return None
    from agent.parsing.json_repair import loads_lenient  # only a string needs repair

    value = loads_lenient(raw)
    if isinstance(value, str):  # double-encoded: a JSON string holding the JSON object
        value = loads_lenient(value)
    return value if isinstance(value, dict) else None


def arguments_from(raw: Any) -> dict[str, Any] | None:
    """Arguments written in a reply: as coerce_arguments, but a JSON Schema is a tool definition:
    an object schema, or a map of parameters to their schemas ({"path": {"type": "string"}})."""
    arguments = coerce_arguments(raw)
    if arguments is None or is_schema(arguments):
        return None
    return arguments


_SCHEMA_TYPES = frozenset(("string", "integer", "number", "boolean", "object", "array", "null"))
_SCHEMA_WORDS = frozenset(
    (
        *("type", "description", "enum", "default", "items", "properties", "required", "format", "title"),
        *("minimum", "maximum", "minLength", "maxLength", "pattern", "examples", "additionalProperties"),
        *("anyOf", "oneOf", "allOf", "const", "nullable"),
    )
)


def is_schema(value: dict[str, Any]) -> bool:
    """Whether a dict is a JSON Schema (an object schema with properties) or a map of names to
    property schemas, each with a JSON type and only schema keywords beside it."""
    if value.get("type") == "object" and isinstance(value.get("properties"), dict):
        return True
    return bool(value) and all(
        isinstance(item, dict)
        and (item.get("type") in _SCHEMA_TYPES or isinstance(item.get("type"), list))
        and set(item) <= _SCHEMA_WORDS
        for item in value.values()
    )


# A tool name is one word: no spaces, no markup. "John Smith" or "<name>" in a name key is data.
_TOOL_NAME = re.compile(r"[A-Za-z_][\w.:/-]{0,79}")
_PLACEHOLDER = re.compile(
    r"\.\.\.|…|name|example\w*|\w*placeholder\w*|(?:your|my|the|some|any)?_?(?:tool|function)(?:_?name)?(?:_here)?",
    re.I,
)


def resolve(candidates: Sequence[Candidate], tools: ToolSet, marked: bool) -> tuple[ToolCall, ...]:
    """The calls among one value's candidates, all or none: a batch with one item that is not a
    call is a table of data. An unknown name comes back only from a value that is certainly a
    call: under a call marker, or a certain candidate alone or batched with a real tool (a batch
    of certain calls naming none of the run's tools is a table of records)."""
    real = [resolve_tool_name(candidate.name, tools.names) for candidate in candidates]
    vouched = any(real) or len(candidates) == 1
    calls = []
    for candidate, name in zip(candidates, real):
        if name is not None:
            calls.append(ToolCall(name, candidate.arguments, written="" if name == candidate.name else candidate.name))
        elif (marked or (candidate.certain and vouched)) and _is_tool_name(plain := plain_name(candidate.name.strip())):
            calls.append(
                ToolCall(
                    plain, candidate.arguments, known=False, written="" if plain == candidate.name else candidate.name
                )
            )
        else:
            return ()
    return tuple(calls)


def _is_tool_name(name: str) -> bool:
    return bool(_TOOL_NAME.fullmatch(name)) and not _PLACEHOLDER.fullmatch(name)


def dedupe(calls: Iterable[ToolCall]) -> list[ToolCall]:
    """Identical calls (the same call fenced and tagged, say) collapse into the first."""
    unique: dict[tuple[str, str], ToolCall] = {}
    for call in calls:
        unique.setdefault((call.name, json.dumps(call.arguments, sort_keys=True, default=str)), call)
    return list(unique.values())
