"""Calls in Python syntax: `tool(k=v)` on a line of its own, or the pythonic list `[a(k=v), b()]`
(Llama 3.2/4, LFM2, Olmo 3 `<function_calls>`, `<|python_tag|>name.call(...)`, Gemma's
`print(default_api.tool(...))` in a tool_code fence).

A candidate is a line that starts with a name and `(`, or `[` and a name; its extent is found by a
scanner that knows Python's brackets, strings (triple-quoted too) and comments, then the span is
read by `ast`, never run: literal arguments only (`True`/`None`, nested dicts and lists), keyword
or positional, positional only when the tool's parameter order is known. Python is too common in
ordinary code to take a name on trust: only the pythonic list is a format of its own (certain);
a bare `f(k=v)` line needs one of the run's tools, or a marker before it.
"""

import ast
import json
import re
from typing import Any

from agent.parsing.calls import Candidate, Hit, Reader, ToolSet, resolve
from agent.parsing.layout import opened_by_marker
from agent.parsing.names import resolve_tool_name

# a line's start, tags and space allowed before the call: `<|python_tag|>f(...)`, `<function_calls>f(...)`
_LEAD = r"(?:[ \t]|<[^<>\n]{1,60}>)*"
# or right after LFM2's marker mid-line: `Let me look.<|tool_call_start|>[f(x=1)]<|tool_call_end|>`
_START = re.compile(
    rf"(?:^{_LEAD}|<\|tool_call_start\|>[ \t]*)(?P<call>(?P<list>\[[ \t]*)?(?:print\([ \t]*)?(?P<name>[A-Za-z_][\w.]*)[ \t]*\()",
    re.M,
)
_OPEN, _CLOSE = "([{", ")]}"
# what moves the bracket scanner: brackets, a comment, a quote (a string prefix is just a letter)
_SYNTAX = re.compile(r"""[()\[\]{}#]|'''|\"\"\"|['"]""")
_STRING_STOP = {
    quote: re.compile(r"\\|" + re.escape(quote) + ("" if len(quote) == 3 else r"|\n"))
    for quote in ("'''", '"""', "'", '"')
}


def readers() -> list[tuple[re.Pattern[str], Reader]]:
    return [(_START, _read_call)]


def _read_call(text: str, match: re.Match[str], tools: ToolSet, floor: int) -> Hit | None:
    start = match.start("call")
    marked = opened_by_marker(text, start)
    if not (marked or match.group("list") or resolve_tool_name(_base(match.group("name")), tools.names)):
        return None
    end = _extent(text, start)
    if end is None:  # the text ends inside the call's brackets: cut off
        return Hit(start, len(text), None, marked, True)
    calls = _read(text[start:end], tools, marked)
    # not literal calls: still one bracketed span, so nothing inside it starts a call of its own
    return Hit(start, end, calls or (), marked, bool(calls))


def _extent(text: str, start: int) -> int | None:
    """The index just past the bracket opened first at text[start:], or None if it never closes."""
    depth, i = 0, start
    while found := _SYNTAX.search(text, i):
        token, i = found.group(), found.end()
        if token in _OPEN:
            depth += 1
        elif token in _CLOSE:
            depth -= 1
            if depth == 0:
                return i
        elif token == "#":
            newline = text.find("\n", i)
            i = len(text) if newline < 0 else newline
        else:
            i = _string_end(text, i, token)
            if i < 0:
                return None
    return None


def _string_end(text: str, i: int, quote: str) -> int:
    """The index past the string whose body starts at text[i]; -1 if the text ends first. A
    one-line string stops at a newline (a syntax error that ast will report, not a cut-off)."""
    stop = _STRING_STOP[quote]
    while found := stop.search(text, i):
        if found.group() != "\\":
            return found.end()
        i = found.end() + 1
    return -1


def _read(source: str, tools: ToolSet, marked: bool) -> tuple[Any, ...] | None:
    """The calls a span of Python holds; None when it is not (only) literal calls."""
    try:
        tree = ast.parse(source.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    pythonic = isinstance(tree, (ast.List, ast.Tuple))
    nodes = tree.elts if isinstance(tree, (ast.List, ast.Tuple)) else [tree]
    candidates = [_candidate(node, tools, certain=pythonic) for node in nodes]
    if not candidates or any(candidate is None for candidate in candidates):
        return None
    return resolve([c for c in candidates if c is not None], tools, marked)


def _candidate(node: ast.expr, tools: ToolSet, *, certain: bool) -> Candidate | None:
    if isinstance(node, ast.Call) and _callee(node) == "print" and len(node.args) == 1 and not node.keywords:
        node = node.args[0]  # Gemma's tool_code: print(default_api.read_file(path="a"))
    if not isinstance(node, ast.Call) or any(keyword.arg is None for keyword in node.keywords):
        return None
    name = _callee(node)
    if name is None:
        return None
    try:
        arguments = {keyword.arg: ast.literal_eval(keyword.value) for keyword in node.keywords if keyword.arg}
        positional = [ast.literal_eval(arg) for arg in node.args]
        # The round trip turns tuples into lists and refuses sets and bytes, which JSON cannot carry.
        arguments = json.loads(json.dumps(arguments))
        positional = json.loads(json.dumps(positional))
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None
    return _with_positional(_base(name), arguments, positional, tools, certain)


def _with_positional(
    name: str, arguments: dict[str, Any], positional: list[Any], tools: ToolSet, certain: bool
) -> Candidate | None:
    """Positional arguments named by the tool's parameter order; without that order they cannot be
    named, and a call we would have to guess at is no call."""
    if not positional:
        return Candidate(name, arguments, certain)
    real = resolve_tool_name(name, tools.names)
    order = tools.params.get(real) if real else None
    if order is None or len(positional) > len(order) or set(order[: len(positional)]) & set(arguments):
        return None
    return Candidate(name, {**dict(zip(order, positional)), **arguments}, certain)


def _callee(node: ast.Call) -> str | None:
    if isinstance(node.func, (ast.Name, ast.Attribute)):
        return ast.unparse(node.func)
    return None


def _base(name: str) -> str:
    """Llama 3.1's built-in tools are called as `brave_search.call(query=...)`."""
    return name.removesuffix(".call")
