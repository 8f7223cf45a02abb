"""Families that write each argument as an element of its own.

    invoke           <function_calls><invoke name="n"><parameter name="k">v</parameter></invoke>
                     (Claude-style; MiniMax M2 inside <minimax:tool_call>; Step3 as steptml:,
                     Glimmer as atem:, DeepSeek V3.2 as ｜DSML｜ with string="false" for JSON values)
    function=        <function=n><parameter=k>v</parameter></function>   (Qwen3-Coder, Qwen3.5,
                     Seed-OSS in <seed:tool_call>, Nemotron 3, MiMo, Step 3.5), or JSON inside
                     (Llama 3.1 user-defined, Functionary v3.1)
    function name=   <function name="n"><param name="k">v</param></function>   (MiniCPM), or JSON
    GLM              <tool_call>n<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>   (GLM 4.5
                     to 4.7, Poolside; Hunyuan with <tool_sep>); <tool_call>n</tool_call> takes none

Values are text: without the schema nothing says "10" meant a number, and the tool gate coerces
by schema. The syntax says "this is a call", so every hit is marked. An element the text ends
inside is a cut-off call; an element that closes around something else is not a call.
"""

import functools
import re
from collections.abc import Callable
from typing import Any, Literal

from agent.parsing.calls import Candidate, Hit, NextMatch, Reader, ToolSet, arguments_from, resolve
from agent.parsing.json_repair import _CutOff, _Invalid, _value_at, loads_lenient

_Body = dict[str, Any] | Literal["cut"] | None
_JSON_START = re.compile(r"\s*\{")
_SPACE = re.compile(r"\s*")
_BodyReader = Callable[[str, bool], _Body]
_ATTR_NAME = r"name\s*=\s*(?P<q>[\"']?)(?P<name>[^\"'<>\s]+)(?P=q)"
_INVOKE = re.compile(rf"<(?P<ns>(?:[A-Za-z][\w-]*:|｜DSML｜)?)invoke\s+{_ATTR_NAME}\s*>")
_FUNCTION_EQ = re.compile(r"<function=(?P<name>[^>\s]+)>")
_FUNCTION_NAME = re.compile(rf"<function\s+{_ATTR_NAME}\s*>")
_GLM = re.compile(r"<tool_call>\s*(?P<name>[A-Za-z_][\w.:-]*)\s*(?:<tool_sep>\s*)?(?=<arg_key>|</tool_call>)")


def readers() -> list[tuple[re.Pattern[str], Reader]]:
    """One reader per family; they share a cache of close tags for this reply."""
    closes: dict[str, NextMatch] = {}

    def read(text: str, match: re.Match[str], tools: ToolSet, floor: int) -> Hit | None:
        close, body_reader = _SHAPES[match.re](match)
        if match.re is not _GLM and (json_body := _JSON_START.match(text, match.end())):
            return _json_element(text, match, json_body.end() - 1, _compiled(close), tools)
        found = closes.setdefault(close, NextMatch(_compiled(close))).search(text, match.end())
        return _element_call(text, match, found, body_reader, tools)

    return [(pattern, read) for pattern in _SHAPES]


def _element_call(
    text: str, match: re.Match[str], close: re.Match[str] | None, read_body: _BodyReader, tools: ToolSet
) -> Hit | None:
    body = text[match.end() : close.start() if close else len(text)]
    arguments = read_body(body, close is not None)
    if arguments == "cut":
        return Hit(match.start(), len(text), None, True, True)
    if close is None and arguments is None:
        return None  # prose that mentions the tag, with no element around it: not this family's call
    if arguments == {} and (close is None or close.start() == close.end()):
        return None  # no arguments and no end tag of its own: a stray tag, not a call of no arguments
    calls = () if arguments is None else resolve([Candidate(match.group("name"), arguments, True)], tools, True)
    return Hit(match.start(), close.end() if close else len(text), calls, True, True)


def _json_element(text: str, match: re.Match[str], start: int, close: re.Pattern[str], tools: ToolSet) -> Hit | None:
    """A body that is one JSON object, read from the text itself (so a close tag inside one of its
    strings is text), then the element's close, which the end of the text may stand in for."""
    try:
        value, end = _value_at(text, start, at_end="strict")
    except _CutOff:
        return Hit(match.start(), len(text), None, True, True)
    except _Invalid:
        return None
    after = _SPACE.match(text, end)
    end = after.end() if after else end
    closed = close.match(text, end)
    if closed is None and end < len(text):
        return None  # something else follows the object: not this family's element
    arguments = arguments_from(value) if isinstance(value, dict) else None
    calls = () if arguments is None else resolve([Candidate(match.group("name"), arguments, True)], tools, True)
    return Hit(match.start(), closed.end() if closed else end, calls, True, True)


# Each family's close, as a pattern: its end tag, or the next call of the family (a missing end tag is
# common, and the next call ends this one just as well); and how its body is read.
def _invoke(match: re.Match[str]) -> tuple[str, _BodyReader]:
    ns = re.escape(match.group("ns"))
    return rf"</{ns}invoke>|(?=<{ns}invoke\s)", _parameters_of(match.group("ns"))


def _function_eq(match: re.Match[str]) -> tuple[str, _BodyReader]:
    return r"</function>|(?=<function[=\s])", functools.partial(_read, _EQ_PARAMETER, _EQ_PARAMETER_OPEN)


def _function_name(match: re.Match[str]) -> tuple[str, _BodyReader]:
    return r"</function>|(?=<function[=\s])", functools.partial(_read, _NAMED_PARAMETER, _NAMED_PARAMETER_OPEN)


def _glm(match: re.Match[str]) -> tuple[str, _BodyReader]:
    return r"</tool_call>|(?=<tool_call>)", functools.partial(_read, _ARG_PAIR, _ARG_KEY_OPEN)


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


@functools.cache
def _parameters_of(ns: str) -> _BodyReader:
    pattern = re.compile(
        rf"<{re.escape(ns)}parameter\s+{_ATTR_NAME}(?P<attrs>[^>]*)>\n?(?P<value>.*?)\n?</{re.escape(ns)}parameter>",
        re.S,
    )
    return functools.partial(_read, pattern, re.compile(re.escape(f"<{ns}parameter")))


_EQ_PARAMETER = re.compile(r"<parameter=(?P<name>[^>\s]+)>\n?(?P<value>.*?)\n?</parameter>", re.S)
_NAMED_PARAMETER = re.compile(
    rf"<(?P<tag>param|parameter)\s+{_ATTR_NAME}(?P<attrs>[^>]*)>\n?(?P<value>.*?)\n?</(?P=tag)>", re.S
)
_NAMED_PARAMETER_OPEN = re.compile(r"<(?:param|parameter)\s")
_EQ_PARAMETER_OPEN = re.compile(r"<parameter=")
_ARG_KEY_OPEN = re.compile(r"<arg_key>")
_ARG_PAIR = re.compile(r"<arg_key>\s*(?P<name>.*?)\s*</arg_key>\s*<arg_value>\n?(?P<value>.*?)\n?</arg_value>", re.S)
_SHAPES: dict[re.Pattern[str], Callable[[re.Match[str]], tuple[str, _BodyReader]]] = {
    _INVOKE: _invoke,
    _FUNCTION_EQ: _function_eq,
    _FUNCTION_NAME: _function_name,
    _GLM: _glm,
}


def _read(element: re.Pattern[str], opening: re.Pattern[str], body: str, closed: bool) -> _Body:
    """The arguments in a call's body (a JSON body was read before): its parameter elements, or
    none at all; anything else is not this format."""
    opens = len(opening.findall(body))
    if not opens:
        return {} if not body.strip() else None
    found = list(element.finditer(body))
    if len(found) != opens:  # a parameter the text never closed
        return "cut" if not closed else None
    if element.sub("", body).strip():  # something besides parameters: not this format
        return None
    return {match.group("name"): _value(match) for match in found}


def _value(match: re.Match[str]) -> Any:
    value = match.group("value")
    attrs = match.groupdict().get("attrs") or ""
    if re.search(r"string\s*=\s*[\"']false", attrs):  # DeepSeek V3.2 marks JSON values so
        decoded = loads_lenient(value)
        return value if decoded is None and value.strip() != "null" else decoded
    return value
