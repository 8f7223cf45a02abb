"""Calls written as JSON values: bare, fenced, or after any family's marker.

Every `{` or `[` left in the text starts a scan; a value either holds calls, is data, or runs to the
end of the text (cut off). One reader serves Hermes/Qwen `<tool_call>`, Llama 3 `<|python_tag|>`,
Mistral's old `[TOOL_CALLS] [...]`, Granite, Jamba, Hunyuan, InternLM, xLAM, Phi-4 `functools[`,
Command R `<|START_ACTION|>`, Nemotron `<TOOLCALL>`, Apertus, GigaChat, LongCat: their wrappers add
nothing the value lacks. The shapes a value may take are in `_candidates`.
"""

import re
from typing import Any

from agent.parsing.calls import Candidate, Hit, Reader, ToolSet, arguments_from, resolve
from agent.parsing.json_repair import _CutOff, _Invalid, _value_at
from agent.parsing.layout import opened_by_marker

# An opener followed by what JSON allows there (a key or "}", a value or "]", or the end): any
# other brace fails at its second token, so the search itself skips most braces of prose.
_OPENER = re.compile(r"\{(?=\s*(?:[\"'}]|\Z))|\[(?=\s*(?:[\[{\"'\-\d\]tfnTFN]|\Z))")
_NAME_KEY_START = re.compile(r"[\[\s]*\{\s*[\"']?(?:name|function|tool\w*|action|recipient_name)[\"']?\s*:")
# a name alone on its line, tags around it allowed (never a fence: "```json" names no tool)
_NAME_LINE = re.compile(r"(?:[ \t]|<[^<>\n`]{1,80}>)*(?P<name>[A-Za-z_][\w.:-]*)(?:[ \t]|<[^<>\n`]{1,80}>)*\n[ \t]*\Z")
_NAME_KEYS = ("name", "tool", "tool_name", "function", "recipient_name", "action")
_ARGUMENT_KEYS = (
    *("arguments", "parameters", "args", "input", "tool_input", "params"),
    *("tool_args", "tool_arguments", "action_input", "kwargs"),
)
# Keys a call object may carry besides its name and arguments; any other key makes it a record
# (a log line has a result, a status, a time), and a record is data.
_BOOKKEEPING = frozenset(
    ("id", "type", "index", "call_id", "tool_call_id", "thought", "thoughts", "reasoning", "reason", "explanation")
)
# Keys that hold calls, at any depth of an API-shaped object (OpenAI, Ollama, llama.cpp generic)
_CALL_LISTS = ("tool_calls", "tool_uses", "calls")
_CALL_ONE = ("tool_call", "function_call")
_ENVELOPES = ("message", "choices", "delta")
# What only a server's response carries (OpenAI, Ollama, Anthropic, llama.cpp): a value with any of
# these at any level of its envelope is a response being shown; its calls were made, not asked for.
_RESPONSE_KEYS = frozenset(
    (
        *("object", "created", "created_at", "model", "usage", "system_fingerprint", "finish_reason"),
        *("done", "done_reason", "stop_reason", "logprobs", "eval_count", "prompt_eval_count", "total_duration"),
    )
)
_DEPTH = 6


def readers() -> list[tuple[re.Pattern[str], Reader]]:
    doomed: set[int] = set()  # starts known to fail: see json_repair._Invalid

    def read(text: str, match: re.Match[str], tools: ToolSet, floor: int) -> Hit | None:
        start = match.start()
        if start in doomed:
            return None
        try:
            value, end = _value_at(text, start, at_end="strict")
        except _CutOff:  # whatever follows a cut-off value is part of it, never a new call
            marked = opened_by_marker(text, start)
            return Hit(start, len(text), None, marked, marked or bool(_NAME_KEY_START.match(text, start)))
        except _Invalid as invalid:
            doomed.update(invalid.args[0])
            return None
        return _hit(text, start, end, value, tools, floor)

    return [(_OPENER, read)]


def _hit(text: str, start: int, end: int, value: Any, tools: ToolSet, floor: int) -> Hit:
    """The span of one value: its calls, or data. A plain object may take the name on the line above."""
    candidates = _candidates(value, tools)
    marked = opened_by_marker(text, start)
    calls = resolve(candidates, tools, marked) if candidates else ()
    if not calls and isinstance(value, dict) and (named := _name_above(text, start, floor)):
        above, name = named
        marked = opened_by_marker(text, above)
        arguments = arguments_from(value)  # a name above its JSON Schema lists a tool, it calls none
        calls = resolve([Candidate(name, arguments, certain=False)], tools, marked) if arguments is not None else ()
        if calls:
            return Hit(above, end, calls, marked, True)
    return Hit(start, end, calls, marked, bool(calls))


def _name_above(text: str, start: int, floor: int) -> tuple[int, str] | None:
    line_start = text.rfind("\n", floor, start) + 1
    if line_start <= floor or text[line_start:start].strip():
        return None
    above = max(floor, text.rfind("\n", floor, line_start - 1) + 1)
    match = _NAME_LINE.match(text, above, start)
    return (above, match.group("name")) if match else None


def _candidates(value: Any, tools: ToolSet, depth: int = 0) -> list[Candidate] | None:
    """The calls a JSON value holds, or None when it is data. A list is a batch: every item a call."""
    if depth > _DEPTH:
        return None
    if isinstance(value, list):
        items = [_candidates(item, tools, depth + 1) for item in value]
        if not value or any(item is None for item in items):
            return None
        return [candidate for item in items if item for candidate in item]
    if not isinstance(value, dict):
        return None
    wrapped = _unwrap(value, tools, depth)
    if wrapped is not None:
        return wrapped
    single = _call_object(value, tools)
    return None if single is None else [single]


def _unwrap(obj: dict[str, Any], tools: ToolSet, depth: int) -> list[Candidate] | None:
    """Calls under a wrapper key: {"tool_calls": [...]}, {"tool_call": {...}}, and the same inside
    an API response's message, choices or delta; None when no wrapper leads to calls."""
    if len(obj) > 1 and not _RESPONSE_KEYS.isdisjoint(obj):
        return None  # a response shown (see _RESPONSE_KEYS); _call_object finds no call in it either
    for key in (*_CALL_LISTS, *_CALL_ONE):
        if isinstance(obj.get(key), (list, dict)):
            return _candidates(obj[key], tools, depth + 1)
    for key in _ENVELOPES:
        if isinstance(obj.get(key), (list, dict)):
            inner = obj[key] if isinstance(obj[key], list) else [obj[key]]
            found = [_unwrap(item, tools, depth + 1) if isinstance(item, dict) else None for item in inner]
            if found and all(item is not None for item in found):
                return [candidate for item in found if item for candidate in item]
    return None


def _call_object(obj: dict[str, Any], tools: ToolSet) -> Candidate | None:
    """One object as a call: named by a name key, OpenAI's {"type": "function", "function": {...}},
    or keyed by a tool's name ({"read_file": {"path": "x"}}); None when it is data."""
    if isinstance(obj.get("function"), dict) and set(obj) - {"function"} <= _BOOKKEEPING:
        obj = obj["function"]
    name_key = next((k for k in _NAME_KEYS if isinstance(obj.get(k), str) and obj[k].strip()), None)
    if name_key is None:
        return _keyed_by_name(obj)
    name = obj[name_key]  # as written (`"read_file "`): the name rule repairs it, the audit keeps both
    argument_key = next((k for k in _ARGUMENT_KEYS if k in obj), None)
    if argument_key is not None:
        if set(obj) - {name_key, argument_key} - _BOOKKEEPING:
            return None  # a record: it reports a call (its result, its time), it does not make one
        arguments = arguments_from(obj[argument_key])
        return None if arguments is None else Candidate(name, arguments, certain=True)
    if "description" in obj:  # a tool definition: it describes the tool, it does not call it
        return None
    # Some models flatten the arguments beside the name; the rule counts that only for a real tool,
    # and only with keys that are its parameters when those are known.
    rest = {key: value for key, value in obj.items() if key not in (name_key, "id", "type")}
    params = tools.params.get(name.strip())
    return None if params is not None and set(rest) - set(params) else Candidate(name, rest, certain=False)


def _keyed_by_name(obj: dict[str, Any]) -> Candidate | None:
    if len(obj) != 1:
        return None
    name, raw = next(iter(obj.items()))
    arguments = arguments_from(raw) if isinstance(raw, dict) else None
    return None if arguments is None else Candidate(name, arguments, certain=False)
