"""The call extraction: reply text -> list[ToolCall] (agent/parsing/__init__.py is its face).

Weak local models often write tool calls into the text instead of the structured field, in
whatever format they were trained on. A reply is read in four steps:

1. `_strip_thinking` drops `<think>` blocks, also one the chat template opened (the reply only
   closes it) and one the model never closed.
2. Extractors run in order; each blanks out what it consumed, so a later one never reads inside
   an earlier find (a shell command that mentions `read_file(...)` stays a string).
   `_function_tags`: `<function=NAME>{json}</function>` (Llama), `<parameter=K>v</parameter>`
   bodies (Qwen3-Coder). `_json_values`: every JSON value left, bare, fenced, or after
   `<tool_call>`, `[TOOL_CALLS]`, `<|python_tag|>`; the wrappers add nothing the value lacks, so
   one extractor serves them all and a missing closing tag costs nothing. `_python_calls`: a line,
   or a whole fenced block, holding only `tool(key=literal)` calls or a list of them, to known
   tools only (Python is too common in ordinary code to trust unknown names), read with
   `ast.literal_eval`, never eval.
3. `_to_call` normalises the shapes (name/tool/function keys; arguments/parameters/args/input;
   OpenAI's `{"function": {...}}`; arguments as a JSON string) and resolves the name. A name that
   does not resolve is kept as written, so the loop can answer "no tool named X; did you mean Y?".
4. Identical calls collapse into one.

Not calls. A missed call costs a nudge; an invented `write_file` changes the workspace. So:
- no name key, or a name that is not a tool and no arguments key: data (`{"name": "Alice"}`);
- a placeholder name (`tool_name`, `<name>`, `your_tool`) or a tool definition (a description
  and no arguments, or arguments shaped like a JSON schema);
- a value cut off mid-string or mid-value; it also swallows the rest of the text;
- an example. A call's lead-in is the last line of prose before it, fences and tags ignored. If
  it holds an example cue ("for example", "e.g.", "Example:", "looks like this", "in this
  format", "you can write", "to call a tool"; see _EXAMPLE_CUE), the message is documenting the
  format: that call and every later one are dropped. Known tools get no exemption (documentation
  shows real tools), but the cue must introduce the block: "Let me read it.\\n{...}" after a long
  answer is a call, and so is "I'll fix the example in README.md:\\n{...}".
"""

import ast
import json
import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from agent.parsing.json_repair import _CutOff, _Invalid, _value_at, loads_lenient
from agent.parsing.names import resolve_tool_name


@dataclass(frozen=True)
class ToolCall:
    """One request from the model to run a tool."""

    name: str
    arguments: dict[str, Any]


class _Hit(NamedTuple):
    """A span an extractor consumed; value is None when it holds nothing usable (a cut-off call)."""

    start: int
    end: int
    value: Any


# --- structured call arguments --------------------------------------------------------------------


def coerce_arguments(raw: Any) -> dict[str, Any] | None:
    """Arguments of a structured tool call as a dict: a dict as is, a (possibly broken) JSON string
    repaired, None or "" as {}; None for anything else or a string that cannot be repaired."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        return None
    value = loads_lenient(raw)
    if isinstance(value, str):  # double-encoded: a JSON string holding the JSON object
        value = loads_lenient(value)
    return value if isinstance(value, dict) else None


# --- reading a reply ----------------------------------------------------------------------------

_THINK_BLOCK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.S | re.I)
_THINK_CLOSE = re.compile(r"</(?:think|thinking|reasoning)>", re.I)
_THINK_OPEN = re.compile(r"<(?:think|thinking|reasoning)>", re.I)
_OPENER = re.compile(r"[{\[]")
_FUNCTION_TAG = re.compile(r"<function=([^>\s]+)>(.*?)(?:</function>|(?=<function=)|\Z)", re.S)
_PARAMETER = re.compile(r"<parameter=([^>\s]+)>\n?(.*?)\n?</parameter>", re.S)
_FENCED = re.compile(r"```[\w-]*[ \t]*\n(.*?)```", re.S)
_LINE = re.compile(r"[^\n]+")
_TAG = re.compile(r"<\|?/?[\w=.-]+\|?>|\[TOOL_CALLS\]|```[\w-]*")
_CALL_MARKER = re.compile(r"<tool_call>|<function_call>|<function=|\[TOOL_CALLS\]|<\|python_tag\|>")
_NAME_KEY_START = re.compile(r"[\[\s]*\{\s*[\"']?(?:name|function|tool)[\"']?\s*:")
_NAME_KEYS = ("name", "tool", "tool_name", "function")
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input", "tool_input", "params")
_PLACEHOLDER = re.compile(
    r"<.*>|\{.*\}|\.\.\.|…|name|example\w*|\w*placeholder\w*"
    r"|(?:your|my|the|some|any)?_?(?:tool|function)(?:_?name)?(?:_here)?",
    re.I,
)
_EXAMPLE_CUE = re.compile(
    r"(?<![\w/.-])(?:for example|for instance|e\.g\.|as an example|here(?: is|'s) an example"
    r"|examples?\s*:|(?:an )?example (?:of|call|usage|request)\b|looks? like this|would look like"
    r"|(?:this|following|call|request|output|response|tool[ -]call) format"
    r"|you (?:can|could|should|would|must|need to|might) (?:write|use|call|send|output|emit|reply)"
    r"|to (?:call|use|invoke) (?:a|any) tool)",
    re.I,
)


def parse_tool_calls(content: str, tool_names: Iterable[str]) -> list[ToolCall]:
    """The tool calls written in a reply's text, in order; [] when it holds none (see module doc)."""
    names = list(tool_names)
    text = _strip_thinking(content)
    hits = _function_tags(text)
    hits += _json_values(_mask(text, hits))
    hits += _python_calls(_mask(text, hits), names)
    prose = _mask(text, hits)  # lead-ins are read from prose, not from the calls themselves
    calls: list[ToolCall] = []
    documenting = False
    for hit in sorted(hits, key=lambda h: h.start):
        found = _to_calls(hit.value, names)
        if found and _EXAMPLE_CUE.search(_lead_in(prose, hit.start)):
            documenting = True
        if not documenting:
            calls += found
    return _dedupe(calls)


def looks_like_tool_call(content: str) -> bool:
    """True when a reply seems to attempt a call that parse_tool_calls could not read: a call
    marker, or a JSON object begun with a name key that the text cuts off. Complete JSON does not
    count, so an answer that only shows an example is not mistaken for a failed call."""
    text = _strip_thinking(content)
    if _CALL_MARKER.search(text):
        return True
    hits = _json_values(_mask(text, _function_tags(text)))
    # _json_values gives value None only to a cut-off value: JSON null cannot start with { or [.
    return any(hit.value is None and _NAME_KEY_START.match(text, hit.start) for hit in hits)


def _strip_thinking(content: str) -> str:
    text = _THINK_BLOCK.sub("\n", content)
    if close := _THINK_CLOSE.search(text):  # the template opened <think>; the reply only closes it
        text = text[close.end() :]
    if opened := _THINK_OPEN.search(text):  # never closed: the rest is thinking too
        text = text[: opened.start()]
    return text


def _mask(text: str, hits: list[_Hit]) -> str:
    """text with every hit blanked to spaces, newlines kept so lines and offsets stay put."""
    chars = list(text)
    for hit in hits:
        chars[hit.start : hit.end] = re.sub(r"[^\n]", " ", text[hit.start : hit.end])
    return "".join(chars)


def _function_tags(text: str) -> list[_Hit]:
    hits = []
    for match in _FUNCTION_TAG.finditer(text):
        arguments = _tag_arguments(match.group(2))
        value = None if arguments is None else {"name": match.group(1), "arguments": arguments}
        hits.append(_Hit(match.start(), match.end(), value))
    return hits


def _tag_arguments(body: str) -> dict[str, Any] | None:
    """Arguments inside <function=...>: JSON or <parameter=...> elements; None if cut off."""
    if "<parameter=" in body:
        pairs = _PARAMETER.findall(body)
        # Values stay strings: without the schema we cannot know that "10" was meant as a number.
        return dict(pairs) if len(pairs) == body.count("<parameter=") else None
    if not body.strip():
        return {}
    value = loads_lenient(body)
    return value if isinstance(value, dict) else None


def _json_values(text: str) -> list[_Hit]:
    hits: list[_Hit] = []
    doomed: set[int] = set()
    i = 0
    while match := _OPENER.search(text, i):
        start, i = match.start(), match.start() + 1
        if start in doomed:
            continue
        try:
            found = _value_at(text, start)
        except _CutOff:  # whatever follows a cut-off value is part of it, never a new call
            return hits + [_Hit(start, len(text), None)]
        except _Invalid as invalid:
            doomed.update(invalid.args[0])
            continue
        if found is not None:
            hits.append(_Hit(start, found[1], found[0]))
            i = found[1]
    return hits


def _python_calls(text: str, names: list[str]) -> list[_Hit]:
    fenced = [_Hit(m.start(1), m.end(1), m.group(1)) for m in _FENCED.finditer(text)]
    chunks = [(hit.start, hit.value) for hit in fenced]
    # A fenced block counts only whole: one `read_file(...)` line inside a script is not a call.
    chunks += [(m.start(), m.group()) for m in _LINE.finditer(_mask(text, fenced))]
    hits = []
    for start, chunk in chunks:
        calls = _python_chunk(chunk, names)
        if calls:
            hits.append(_Hit(start, start + len(chunk), calls))
    return hits


def _python_chunk(chunk: str, names: list[str]) -> list[dict[str, Any]] | None:
    """The calls in a chunk made only of `tool(k=v)` statements or lists of them, else None."""
    source = textwrap.dedent(_TAG.sub("", chunk)).strip().strip("`")
    if "(" not in source:
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return None
    calls: list[dict[str, Any]] = []
    for statement in tree.body:
        node = statement.value if isinstance(statement, ast.Expr) else None
        items = node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node]
        for item in items:
            call = _python_call(item, names)
            if call is None:
                return None
            calls.append(call)
    return calls or None


def _python_call(node: ast.AST | None, names: list[str]) -> dict[str, Any] | None:
    if not isinstance(node, ast.Call) or node.args or not isinstance(node.func, (ast.Name, ast.Attribute)):
        return None
    name = resolve_tool_name(ast.unparse(node.func), names)
    if name is None or any(keyword.arg is None for keyword in node.keywords):
        return None
    try:
        arguments = {keyword.arg: ast.literal_eval(keyword.value) for keyword in node.keywords}
        # The round trip turns tuples into lists and refuses sets and bytes, which JSON cannot carry.
        return {"name": name, "arguments": json.loads(json.dumps(arguments))}
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return None


def _lead_in(text: str, start: int) -> str:
    """The last line of prose before text[start], fences and tags ignored."""
    for line in reversed(text[:start].split("\n")):
        prose = _TAG.sub("", line).strip()
        if prose:
            return prose
    return ""


def _to_calls(value: Any, names: list[str]) -> list[ToolCall]:
    if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
        value = value["tool_calls"]
    items = value if isinstance(value, list) else [value]
    return [call for item in items if (call := _to_call(item, names)) is not None]


def _to_call(obj: Any, names: list[str]) -> ToolCall | None:
    """One parsed value as a ToolCall, or None when it is data, a placeholder or a definition."""
    parts = _name_and_arguments(obj)
    if parts is None:
        return None
    name, raw_arguments, explicit = parts
    resolved = resolve_tool_name(name, names)
    if resolved is None and (not explicit or _PLACEHOLDER.fullmatch(name)):
        return None
    arguments = coerce_arguments(raw_arguments)
    if arguments is None or (arguments.get("type") == "object" and "properties" in arguments):
        return None
    return ToolCall(resolved or name, arguments)


def _name_and_arguments(obj: Any) -> tuple[str, Any, bool] | None:
    """(name, raw arguments, whether an arguments key was given) from any shape models use."""
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):
        obj = obj["function"]
    name_key = next((k for k in _NAME_KEYS if isinstance(obj.get(k), str) and obj[k].strip()), None)
    if name_key is None:
        return None
    argument_key = next((k for k in _ARGUMENT_KEYS if k in obj), None)
    if argument_key is not None:
        return obj[name_key].strip(), obj[argument_key], True
    if "description" in obj:  # a tool definition: it describes the tool, it does not call it
        return None
    # Some models flatten the arguments beside the name; that only counts for a known tool.
    rest = {key: value for key, value in obj.items() if key not in (name_key, "id", "type")}
    return obj[name_key].strip(), rest, False


def _dedupe(calls: list[ToolCall]) -> list[ToolCall]:
    unique: dict[tuple[str, str], ToolCall] = {}
    for call in calls:
        unique.setdefault((call.name, json.dumps(call.arguments, sort_keys=True, default=str)), call)
    return list(unique.values())
