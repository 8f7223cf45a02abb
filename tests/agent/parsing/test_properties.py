"""Properties of the text parser, over generated tool names, arguments, prose, data and code.

1. Every supported format round-trips: a call written in it parses back to exactly that call.
   Each format carries what it can: JSON formats any JSON-able arguments; Python syntax any
   values under identifier keys; Gemma's syntax identifier keys at every depth; the XML formats
   text (they carry no types, and the tool gate coerces text by schema).
2. Prose, JSON data and code that hold no call never yield one, and no input makes it raise.
"""

import json
import keyword
import os
import re
import string
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.parsing import ToolCall, parse_tool_calls

# A few seconds in `make test`; HEARTH_PROPERTY_EXAMPLES=5000 for a long hunt. No example database,
# so every run draws fresh examples (hypothesis still keeps its small, self-ignoring .hypothesis/).
EXAMPLES = int(os.environ.get("HEARTH_PROPERTY_EXAMPLES", "100"))
FAST = settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
OTHER_TOOLS = ["read_file", "list_files", "run_command"]
# keys that make an object a call or a wrapper of calls; data and name-line arguments avoid them
CALL_KEYS = {
    *("name", "tool", "tool_name", "function", "recipient_name", "action", "tool_calls", "tool_call"),
    *("function_call", "tool_uses", "calls", "message", "choices", "delta", "arguments", "parameters"),
    *("args", "input", "tool_input", "params", "tool_args", "tool_arguments", "action_input", "kwargs"),
}
PLACEHOLDER = re.compile(
    r"(?:your|my|the|some|any)?_?(?:tool|function)(?:_?name)?(?:_here)?|\w*placeholder\w*|example\w*"
)

tool_names = st.from_regex(r"[a-z]{2,7}(?:_[a-z0-9]{2,7}){1,2}", fullmatch=True).filter(
    lambda name: name not in CALL_KEYS and not PLACEHOLDER.fullmatch(name) and name not in OTHER_TOOLS
)
identifiers = st.text(string.ascii_lowercase + "_", min_size=1, max_size=6).filter(lambda k: not keyword.iskeyword(k))
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()


def json_like(keys: st.SearchStrategy[str], strings: st.SearchStrategy[str] = st.text()) -> st.SearchStrategy[Any]:
    leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | strings
    return st.recursive(
        leaves, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(keys, kids, max_size=3), max_leaves=8
    )


def not_a_schema(arguments: dict[str, Any]) -> bool:
    return not (arguments.get("type") == "object" and "properties" in arguments)


json_arguments = st.dictionaries(st.text(max_size=12), json_like(st.text(max_size=8)), max_size=4).filter(not_a_schema)
python_arguments = st.dictionaries(identifiers, json_like(st.text(max_size=8)), max_size=4).filter(not_a_schema)
gemma_strings = st.text().filter(lambda s: '<|"|>' not in s and "<tool_call|>" not in s)
gemma_arguments = st.dictionaries(identifiers, json_like(identifiers, gemma_strings), max_size=4).filter(not_a_schema)
# text without a tag in it, and no newline at either end (the templates put one there themselves)
element_text = st.text(st.characters(blacklist_characters="<", blacklist_categories=("Cs",))).filter(
    lambda s: not s.startswith("\n") and not s.endswith("\n")
)
text_arguments = st.dictionaries(identifiers, element_text, max_size=4)
plain_arguments = json_arguments.filter(
    lambda a: not set(a) & CALL_KEYS and not (len(a) == 1 and isinstance(next(iter(a.values())), dict))
)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def gemma(value: Any) -> str:
    if isinstance(value, str):
        return f'<|"|>{value}<|"|>'
    if isinstance(value, dict):
        return "{" + ",".join(f"{key}:{gemma(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(gemma(item) for item in value) + "]"
    return json.dumps(value)


def keywords(arguments: dict[str, Any]) -> str:
    return ", ".join(f"{key}={value!r}" for key, value in arguments.items())


Render = Callable[[str, dict[str, Any]], str]
JSON_FORMATS: dict[str, Render] = {
    "bare": lambda n, a: dumps({"name": n, "arguments": a}),
    "fenced": lambda n, a: f"```json\n{dumps({'name': n, 'arguments': a})}\n```",
    "hermes": lambda n, a: f"<tool_call>\n{dumps({'name': n, 'arguments': a})}\n</tool_call>",
    "openai-string": lambda n, a: dumps({"type": "function", "function": {"name": n, "arguments": dumps(a)}}),
    "llama3": lambda n, a: "<|python_tag|>" + dumps({"name": n, "parameters": a}),
    "mistral-list": lambda n, a: "[TOOL_CALLS] " + dumps([{"name": n, "arguments": a}]),
    "mistral-v11": lambda n, a: f"[TOOL_CALLS]{n}[ARGS]{dumps(a)}",
    "deepseek-v3": lambda n, a: (
        f"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>{n}\n```json\n"
        f"{dumps(a)}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
    ),
    "deepseek-v31": lambda n, a: f"<｜tool▁call▁begin｜>{n}<｜tool▁sep｜>{dumps(a)}<｜tool▁call▁end｜>",
    "kimi-k2": lambda n, a: (
        f"<|tool_call_begin|>functions.{n}:0<|tool_call_argument_begin|>{dumps(a)}<|tool_call_end|>"
    ),
    "functionary": lambda n, a: f">>>{n}\n{dumps(a)}",
    "gpt-oss": lambda n, a: f"<|channel|>commentary to=functions.{n} <|constrain|>json<|message|>{dumps(a)}<|call|>",
    "function-eq": lambda n, a: f"<function={n}>{dumps(a)}</function>",
    "function-name": lambda n, a: f'<function name="{n}">{dumps(a)}</function>',
    "function-element": lambda n, a: f"<function>{n}</function>\n{dumps(a)}",
    "keyed": lambda n, a: dumps({n: a}),
    "command-r": lambda n, a: (
        "<|START_ACTION|>" + dumps([{"tool_call_id": "0", "tool_name": n, "parameters": a}]) + "<|END_ACTION|>"
    ),
    "nested-tool-calls": lambda n, a: dumps(
        {
            "message": {
                "role": "assistant",
                "tool_calls": [{"type": "function", "function": {"name": n, "arguments": a}}],
            }
        }
    ),
    "phi4-functools": lambda n, a: "functools" + dumps([{"name": n, "arguments": a}]),
    "apertus": lambda n, a: "<|tools_prefix|>" + dumps([{n: a}]) + "<|tools_suffix|>",
}
PYTHON_FORMATS: dict[str, Render] = {
    "python-line": lambda n, a: f"{n}({keywords(a)})",
    "pythonic-list": lambda n, a: f"[{n}({keywords(a)})]",
    "python-tag": lambda n, a: f"<|python_tag|>{n}({keywords(a)})",
    "lfm2": lambda n, a: f"<|tool_call_start|>[{n}({keywords(a)})]<|tool_call_end|>",
    "python-multiline": lambda n, a: f"{n}(\n" + "".join(f"    {k}={v!r},\n" for k, v in a.items()) + ")",
}
TEXT_FORMATS: dict[str, Render] = {
    "invoke": lambda n, a: (
        f'<function_calls>\n<invoke name="{n}">\n'
        + "".join(f'<parameter name="{k}">{v}</parameter>\n' for k, v in a.items())
        + "</invoke>\n</function_calls>"
    ),
    "qwen3-coder": lambda n, a: (
        f"<tool_call>\n<function={n}>\n"
        + "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in a.items())
        + "</function>\n</tool_call>"
    ),
    "glm": lambda n, a: (
        f"<tool_call>{n}\n"
        + "".join(f"<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>\n" for k, v in a.items())
        + "</tool_call>"
    ),
    "minicpm": lambda n, a: (
        f'<function name="{n}">' + "".join(f'<param name="{k}">{v}</param>' for k, v in a.items()) + "</function>"
    ),
    "dsml": lambda n, a: (
        f'<｜DSML｜function_calls><｜DSML｜invoke name="{n}">'
        + "".join(f'<｜DSML｜parameter name="{k}" string="true">{v}</｜DSML｜parameter>' for k, v in a.items())
        + "</｜DSML｜invoke></｜DSML｜function_calls>"
    ),
}
LEAD_INS = st.sampled_from(
    ["", "Let me do that.\n", "I'll start there:\n", "<think>\nMaybe read_file first? No.\n</think>\n"]
)


def round_trips(render: Render, name: str, arguments: dict[str, Any], lead_in: str) -> None:
    content = lead_in + render(name, arguments)
    assert parse_tool_calls(content, [*OTHER_TOOLS, name]) == [ToolCall(name, arguments)], content


@FAST
@given(st.sampled_from(sorted(JSON_FORMATS)), tool_names, json_arguments, LEAD_INS)
def test_json_formats_round_trip(family: str, name: str, arguments: dict[str, Any], lead_in: str) -> None:
    round_trips(JSON_FORMATS[family], name, arguments, lead_in)


@FAST
@given(tool_names, plain_arguments, LEAD_INS)
def test_a_name_line_above_plain_arguments_round_trips(name: str, arguments: dict[str, Any], lead_in: str) -> None:
    round_trips(lambda n, a: f"{n}\n{dumps(a)}", name, arguments, lead_in)


@FAST
@given(st.sampled_from(sorted(PYTHON_FORMATS)), tool_names, python_arguments, LEAD_INS)
def test_python_formats_round_trip(family: str, name: str, arguments: dict[str, Any], lead_in: str) -> None:
    round_trips(PYTHON_FORMATS[family], name, arguments, lead_in)


@FAST
@given(tool_names, python_arguments)
def test_positional_python_arguments_round_trip_with_the_parameter_order(name: str, arguments: dict[str, Any]) -> None:
    content = f"{name}({', '.join(repr(value) for value in arguments.values())})"
    assert parse_tool_calls(content, {name: list(arguments), "read_file": ["path"]}) == [ToolCall(name, arguments)]


@FAST
@given(tool_names, gemma_arguments, LEAD_INS)
def test_gemma_format_round_trips(name: str, arguments: dict[str, Any], lead_in: str) -> None:
    round_trips(lambda n, a: f"<|tool_call>call:{n}{gemma(a)}<tool_call|>", name, arguments, lead_in)


@FAST
@given(st.sampled_from(sorted(TEXT_FORMATS)), tool_names, text_arguments, LEAD_INS)
def test_element_formats_round_trip_text(family: str, name: str, arguments: dict[str, str], lead_in: str) -> None:
    round_trips(TEXT_FORMATS[family], name, arguments, lead_in)


# --- nothing from text that holds no call ------------------------------------------------------

WORDS = st.text(string.ascii_letters, min_size=1, max_size=9)
PUNCTUATED = st.tuples(
    st.sampled_from(["", "(", "[", "{", '"', "'", "<", "`"]),
    WORDS,
    st.sampled_from(["", ".", ",", ":", ";", ")", "]", "}", '"', "'", ">", "!", "?", "`"]),
)
prose = st.lists(st.lists(PUNCTUATED.map("".join), min_size=1, max_size=12).map(" ".join), max_size=6).map("\n".join)
data_keys = st.text(max_size=10).filter(lambda k: k not in CALL_KEYS and k not in OTHER_TOOLS)
data = json_like(data_keys).filter(lambda v: isinstance(v, (dict, list)))


@FAST
@given(prose)
def test_prose_gives_no_calls(text: str) -> None:
    assert parse_tool_calls(text, OTHER_TOOLS) == []


@FAST
@given(data, st.sampled_from(["{}", "```json\n{}\n```", "The result:\n{}", "Here is the data: {} as asked."]))
def test_json_data_gives_no_calls(value: Any, frame: str) -> None:
    assert parse_tool_calls(frame.replace("{}", dumps(value), 1), OTHER_TOOLS) == []


CODE = [
    '```python\n{var} = {{"name": "{tool}", "arguments": {args}}}\nsend({var})\n```',
    "```python\nimport json\n{var} = {tool}({kwargs})\nprint({var})\n```",
    '```js\nconst {var} = {{name: "{tool}", arguments: {args}}};\n```',
    '{var} = {{"name": "{tool}", "arguments": {args}}}',
    "```python\ndef {var}():\n    return {tool}({kwargs})\n```",
    '```python\nCALLS = [\n    {{"name": "{tool}", "arguments": {args}}},  # {var}\n]\n```',
]


@FAST
@given(st.sampled_from(CODE), identifiers, st.sampled_from(OTHER_TOOLS), python_arguments)
def test_code_that_builds_calls_gives_no_calls(template: str, var: str, tool: str, arguments: dict[str, Any]) -> None:
    code = template.format(var=var or "x", tool=tool, args=dumps(arguments), kwargs=keywords(arguments))
    assert parse_tool_calls(code, OTHER_TOOLS) == [], code


FRAGMENTS = [
    *("{", "}", "[", "]", '"', "'", "\\", "\n", "`", "```", "(", ")", ":", ",", "<", ">", "read_file", "="),
    *("<tool_call>", "</tool_call>", "[TOOL_CALLS]", "[ARGS]", "<function=", "</function>", "<think>", "</think>"),
    *('<invoke name="', "<parameter=", "</parameter>", "<arg_key>", "<arg_value>", ">>>", "<|python_tag|>"),
    *("<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "to=functions.", "<|message|>", '<|"|>', "<|tool_call>", "call:"),
]


@settings(max_examples=2 * EXAMPLES, deadline=None, database=None)
@given(st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=5), max_size=40).map("".join))
def test_no_input_makes_the_parser_raise(text: str) -> None:
    calls = parse_tool_calls(text, OTHER_TOOLS)
    assert isinstance(calls, list) and all(isinstance(call, ToolCall) for call in calls)
