"""Families that write the tool's name in their own syntax and the arguments as JSON after it.

    Mistral v11+     [TOOL_CALLS]name[ARGS]{...}   (also [CALL_ID]id, also without [ARGS])
    DeepSeek V3/R1   <｜tool▁call▁begin｜>function<｜tool▁sep｜>name\\n```json\\n{...}\\n```<｜tool▁call▁end｜>
    DeepSeek V3.1    <｜tool▁call▁begin｜>name<｜tool▁sep｜>{...}<｜tool▁call▁end｜>   (and Cogito)
    Kimi K2          <|tool_call_begin|>functions.name:0<|tool_call_argument_begin|>{...}<|tool_call_end|>
    Functionary v3   >>>name\\n{...}>>>name\\n{...}   (>>>all\\n is its prose channel; a chain's first
                     call has no >>>, which its template put in the prompt: name\\n{...}>>>name\\n{...})
    gpt-oss          <|channel|>commentary to=functions.name <|constrain|>json<|message|>{...}<|call|>
    <function>name</function>{...}, also with the JSON in <arguments>...</arguments>
    Gemma 4          <|tool_call>call:name{key:<|"|>text<|"|>,n:1}<tool_call|>
    FunctionGemma    <start_function_call>call:name{key:<escape>text<escape>}<end_function_call>

The syntax itself says "this is a call", so every hit is marked and a name the run lacks comes
back unknown. No arguments after the name means no call here: the text is left to the others.
"""

import json
import re
from typing import Any

from agent.parsing.calls import Candidate, Hit, Reader, ToolSet, arguments_from, resolve
from agent.parsing.json_repair import _CutOff, _Invalid, _value_at

_BAR = "[|｜]"  # DeepSeek's tokens use a full-width bar; text copies often use the ASCII one
_SEP = rf"<{_BAR}tool[▁_ ]sep{_BAR}>"
_FAMILIES = (
    re.compile(r"\[TOOL_CALLS\][ \t]*(?P<name>[A-Za-z_][\w.:-]*)[ \t]*(?:\[CALL_ID\][ \t]*[\w-]*[ \t]*)?(?:\[ARGS\])?"),
    re.compile(rf"(?:<{_BAR}tool[▁_ ]call[▁_ ]begin{_BAR}>[ \t]*)?function[ \t]*{_SEP}[ \t]*(?P<name>[^\s<>]+)"),
    re.compile(rf"<{_BAR}tool[▁_ ]call[▁_ ]begin{_BAR}>[ \t]*(?P<name>[^\s<>]+?)[ \t]*{_SEP}"),
    re.compile(r"<\|tool_call_begin\|>\s*(?P<name>[^\s<>]+?)\s*<\|tool_call_argument_begin\|>\s*"),
    re.compile(r">>>[ \t]*(?P<name>[A-Za-z_][\w.-]*)[ \t]*\n"),
    re.compile(r"\bto=(?P<name>[A-Za-z_][\w.:/-]*)(?:(?!<\|message\|>)[^\n]){0,120}<\|message\|>"),
    re.compile(r"<function>[ \t]*(?P<name>[A-Za-z_][\w.:-]*)[ \t]*</function>\s*(?:<(?:arguments|args|parameters)>)?"),
)
_FENCE_OPEN = re.compile(r"\s*```(?:json)?[ \t]*\n\s*|\s*")
_FENCE_CLOSE = re.compile(r"\s*```")
_CLOSE = re.compile(
    rf"[ \t]*(?:<{_BAR}tool[▁_ ]call[▁_ ]end{_BAR}>|<\|tool_call_end\|>|<\|call\|>|<\|end\|>"
    r"|</(?:arguments|args|parameters)>)?"
)
_NAMESPACE = re.compile(r"^functions\.|:\d+$")  # Kimi and gpt-oss address tools as functions.name(:index)
_GEMMA = re.compile(r"(?P<open><\|tool_call>|<start_function_call>)[ \t]*call:(?P<name>[A-Za-z_][\w.:-]*)[ \t]*(?=\{)")
_GEMMA_CLOSE = {"<|tool_call>": "<tool_call|>", "<start_function_call>": "<end_function_call>"}
# Gemma's argument syntax: strings between <|"|> (or <escape>) tokens, bare keys; the rest is JSON
_GEMMA_TOKEN = re.compile(r'<\|"\|>(.*?)<\|"\|>|<escape>(.*?)<escape>|(?<=[{,])(\s*)([A-Za-z_][\w-]*)(?=\s*:)', re.S)


# Functionary's first call of a chain: a name at the start of the reply, its JSON, then `>>>`
_FUNCTIONARY_FIRST = re.compile(r"\A\s*(?P<name>[A-Za-z_][\w.-]*)[ \t]*\n")
_CHAIN = re.compile(r"\s*>>>")


def readers() -> list[tuple[re.Pattern[str], Reader]]:
    return [
        *((family, _arguments_after) for family in _FAMILIES),
        (_GEMMA, _gemma_call),
        (_FUNCTIONARY_FIRST, _chain_start),
    ]


def _chain_start(text: str, match: re.Match[str], tools: ToolSet, floor: int) -> Hit | None:
    """A name line and JSON at the reply's start are Functionary's first call when `>>>` (its next
    call, or its prose channel) follows them; without it, the name line is left to json_calls."""
    hit = _arguments_after(text, match, tools, floor)
    if hit is None or hit.calls is None or _CHAIN.match(text, hit.end) is None:
        return None
    return hit


def _arguments_after(text: str, match: re.Match[str], tools: ToolSet, floor: int) -> Hit | None:
    name = _NAMESPACE.sub("", match.group("name"))
    opened = _FENCE_OPEN.match(text, match.end())
    start = opened.end() if opened else match.end()
    if name == "all" or start >= len(text) or text[start] != "{":
        return None
    try:
        value, end = _value_at(text, start, at_end="strict")
    except _CutOff:
        return Hit(match.start(), len(text), None, True, True)
    except _Invalid:
        return None
    arguments = arguments_from(value) if isinstance(value, dict) else None
    if arguments is None:
        return None
    if opened and "```" in opened.group() and (fence := _FENCE_CLOSE.match(text, end)):
        end = fence.end()
    close = _CLOSE.match(text, end)
    end = close.end() if close else end
    return Hit(match.start(), end, resolve([Candidate(name, arguments, certain=True)], tools, True), True, True)


def _gemma_call(text: str, match: re.Match[str], tools: ToolSet, floor: int) -> Hit | None:
    close = _GEMMA_CLOSE[match.group("open")]
    end = text.find(close, match.end())
    body = text[match.end() : end if end >= 0 else len(text)]
    arguments = _gemma_arguments(body, closed=end >= 0)
    if end < 0 and arguments is None:  # no close and no whole value: the text ends inside the call
        return Hit(match.start(), len(text), None, True, True)
    calls = () if arguments is None else resolve([Candidate(match.group("name"), arguments, True)], tools, True)
    return Hit(match.start(), end + len(close) if end >= 0 else len(text), calls, True, True)


def _gemma_arguments(body: str, *, closed: bool) -> dict[str, Any] | None:
    converted = _GEMMA_TOKEN.sub(_gemma_token, body)
    try:
        value, end = _value_at(converted, 0, at_end="repair" if closed else "strict")
    except (_CutOff, _Invalid):
        return None
    return arguments_from(value) if isinstance(value, dict) and not converted[end:].strip() else None


def _gemma_token(match: re.Match[str]) -> str:
    if match.group(4) is not None:  # a bare key
        return match.group(3) + json.dumps(match.group(4))
    return json.dumps(match.group(1) if match.group(1) is not None else match.group(2))
