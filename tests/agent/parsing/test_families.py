"""Every tool-call family that Ollama, vLLM and llama.cpp parse, written the way its template writes it.

The shapes come from reading those projects' parsers and chat templates; the sentences are ours.
tests/agent/parsing/test_negatives.py holds the look-alikes that must give nothing.
"""

import pytest

from agent.parsing import ToolCall, parameter_order, parse_tool_calls
from agent.tools.builtin import TOOLS as BUILTIN

TOOLS = ["read_file", "write_file", "list_files", "run_command", "search_files", "edit_file"]
# the run's tools with their parameters in schema order, as the loop passes them (parameter_order)
SIGNATURES = {
    "read_file": ["path", "limit"],
    "write_file": ["path", "content"],
    "list_files": ["path"],
    "run_command": ["command", "timeout_s"],
    "search_files": ["pattern", "recursive", "limit"],
    "edit_file": ["path", "edits"],
}

READ_A = ToolCall("read_file", {"path": "a.txt"})
LIST_DOT = ToolCall("list_files", {"path": "."})
LIST_NONE = ToolCall("list_files", {})
LS = ToolCall("run_command", {"command": "ls -la"})
DS_BEGIN, DS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
DS_CALL, DS_SEP, DS_CALL_END = "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>"
P = pytest.param

MISTRAL = [
    P('[TOOL_CALLS]read_file[ARGS]{"path": "a.txt"}', [READ_A], id="mistral-v11"),
    P(
        '[TOOL_CALLS]list_files[ARGS]{"path": "."}[TOOL_CALLS]read_file[ARGS]{"path": "a.txt"}',
        [LIST_DOT, READ_A],
        id="mistral-v11-two-calls",
    ),
    P('[TOOL_CALLS]read_file{"path": "a.txt"}', [READ_A], id="mistral-without-args-token"),
    P('[TOOL_CALLS]read_file[CALL_ID]k3Xq9aZ1b[ARGS]{"path": "a.txt"}', [READ_A], id="mistral-call-id"),
    P(
        'I will read the file first.[TOOL_CALLS]read_file[ARGS]{"path": "a.txt"}</s>',
        [READ_A],
        id="mistral-after-prose",
    ),
    P(
        '[THINK]The user wants a.txt; [TOOL_CALLS]write_file[ARGS]{"path": "a.txt"} would be wrong.[/THINK]'
        '[TOOL_CALLS]read_file[ARGS]{"path": "a.txt"}',
        [READ_A],
        id="magistral-call-after-think",
    ),
    P("[TOOL_CALLS]list_files[ARGS]{}", [LIST_NONE], id="mistral-zero-arguments"),
    P(
        '[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "a.txt"}, "id": "k3Xq9aZ1b"}][/TOOL_CALLS]',
        [READ_A],
        id="mistral-nemo-list-with-id",
    ),
]

DEEPSEEK = [
    P(
        f'{DS_BEGIN}{DS_CALL}function{DS_SEP}read_file\n```json\n{{"path": "a.txt"}}\n```{DS_CALL_END}{DS_END}',
        [READ_A],
        id="deepseek-v3-fenced",
    ),
    P(
        f'Both, then.{DS_BEGIN}{DS_CALL}function{DS_SEP}list_files\n```json\n{{"path": "."}}\n```{DS_CALL_END}\n'
        f'{DS_CALL}function{DS_SEP}read_file\n```json\n{{"path": "a.txt"}}\n```{DS_CALL_END}{DS_END}',
        [LIST_DOT, READ_A],
        id="deepseek-v3-two-calls",
    ),
    P(
        f'{DS_BEGIN}{DS_CALL}read_file{DS_SEP}{{"path": "a.txt"}}{DS_CALL_END}{DS_END}',
        [READ_A],
        id="deepseek-v31-bare",
    ),
    P(
        '<|tool▁calls▁begin|><|tool▁call▁begin|>function<|tool▁sep|>list_files\n```json\n{"path": "."}\n```'
        "<|tool▁call▁end|><|tool▁calls▁end|>",
        [LIST_DOT],
        id="deepseek-ascii-bars",
    ),
    P(
        f'<think>\nI could overwrite it: {{"name": "write_file", "arguments": {{"path": "a.txt"}}}}\n</think>\n\n'
        f'{DS_BEGIN}{DS_CALL}function{DS_SEP}read_file\n```json\n{{"path": "a.txt"}}\n```{DS_CALL_END}{DS_END}',
        [READ_A],
        id="deepseek-r1-call-after-think",
    ),
    P(
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="run_command">\n'
        '<｜DSML｜parameter name="command" string="true">ls -la</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="timeout_s" string="false">30</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n</｜DSML｜function_calls>",
        [ToolCall("run_command", {"command": "ls -la", "timeout_s": 30})],
        id="deepseek-v32-dsml",
    ),
]

FUNCTIONARY = [
    P('>>>read_file\n{"path": "a.txt"}', [READ_A], id="functionary-v3"),
    P(
        '>>>all\nI need the listing and the file.\n>>>list_files\n{"path": "."}\n>>>read_file\n{"path": "a.txt"}',
        [LIST_DOT, READ_A],
        id="functionary-v3-all-then-calls",
    ),
    P('<function=read_file>{"path": "a.txt"}</function>', [READ_A], id="functionary-v31-function-tag"),
]

XML = [
    P(
        '<function_calls>\n<invoke name="read_file">\n<parameter name="path">a.txt</parameter>\n</invoke>\n'
        '<invoke name="list_files">\n<parameter name="path">.</parameter>\n</invoke>\n</function_calls>',
        [READ_A, LIST_DOT],
        id="invoke-parameter",
    ),
    P(
        '<minimax:tool_call>\n<invoke name="run_command">\n<parameter name="command">ls -la</parameter>\n'
        "</invoke>\n</minimax:tool_call>",
        [LS],
        id="minimax-m2",
    ),
    P(
        "<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜>"
        '<steptml:invoke name="read_file"><steptml:parameter name="path">a.txt</steptml:parameter></steptml:invoke>'
        "<｜tool_call_end｜><｜tool_calls_end｜>",
        [READ_A],
        id="step3-steptml",
    ),
    P(
        ' to=read_file<|message|><atem:function_calls>\n<atem:invoke name="read_file">\n'
        '<atem:parameter name="path">a.txt</atem:parameter>\n</atem:invoke>\n</atem:function_calls><|eot|>',
        [READ_A],
        id="glimmer-atem",
    ),
    P(
        "<tool_call>\n<function=write_file>\n<parameter=path>\nb.py\n</parameter>\n"
        "<parameter=content>\nif a < b:\n    print('<less>')\n</parameter>\n</function>\n</tool_call>",
        [ToolCall("write_file", {"path": "b.py", "content": "if a < b:\n    print('<less>')"})],
        id="qwen3-coder-angle-brackets-in-value",
    ),
    P(
        "<seed:think>Maybe I should write it.</seed:think><seed:tool_call>\n<function=read_file>\n"
        "<parameter=path>a.txt</parameter>\n</function>\n</seed:tool_call>",
        [READ_A],
        id="seed-oss",
    ),
    P(
        "I should check the listing first.\n</think>\n<tool_call>\n<function=list_files>\n<parameter=path>\n.\n"
        "</parameter>\n</function>\n</tool_call>",
        [LIST_DOT],
        id="nemotron-3-template-opened-think",
    ),
    P('<function>read_file</function>\n{"path": "a.txt"}', [READ_A], id="function-name-element-then-json"),
    P(
        '<function>read_file</function><arguments>{"path": "a.txt"}</arguments>',
        [READ_A],
        id="function-name-element-arguments-element",
    ),
    P('<function name="read_file">{"path": "a.txt"}</function>', [READ_A], id="function-name-attribute-json"),
    P(
        '<function name="read_file"><param name="path">a.txt</param></function>',
        [READ_A],
        id="minicpm-function-param",
    ),
    P(
        "<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>a.txt</arg_value>\n</tool_call>",
        [READ_A],
        id="glm45-arg-key-value",
    ),
    P(
        "<tool_call>read_file<arg_key>path</arg_key><arg_value>a.txt</arg_value></tool_call>"
        "<tool_call>list_files<arg_key>path</arg_key><arg_value>.</arg_value></tool_call>",
        [READ_A, LIST_DOT],
        id="glm47-two-calls",
    ),
    P(
        "<tool_calls><tool_call>read_file<tool_sep><arg_key>path</arg_key><arg_value>a.txt</arg_value>"
        "</tool_call></tool_calls>",
        [READ_A],
        id="hunyuan-v3-tool-sep",
    ),
]

KEYED_BY_NAME = [
    P('{"read_file": {"path": "a.txt"}}', [READ_A], id="object-keyed-by-tool"),
    P('[{"list_files": {"path": "."}}, {"read_file": {"path": "a.txt"}}]', [LIST_DOT, READ_A], id="keyed-in-a-list"),
    P('<|tools_prefix|>[{"read_file": {"path": "a.txt"}}]<|tools_suffix|>', [READ_A], id="apertus-keyed"),
    P('Reading it now.\nread_file\n{"path": "a.txt"}', [READ_A], id="bare-name-line-then-json"),
    P('list_files\n{"path": "."}', [LIST_DOT], id="glm4-name-line-at-start"),
    P('<tool_call>read_file\n{"path": "a.txt"}\n</tool_call>', [READ_A], id="name-line-inside-tool-call"),
]

WRAPPERS = [
    P('{"tool_call": {"name": "read_file", "arguments": {"path": "a.txt"}}}', [READ_A], id="generic-tool-call"),
    P('{"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]}', [READ_A], id="generic-tool-calls"),
    P(
        '{"message": {"role": "assistant", "content": "", "tool_calls": '
        '[{"function": {"name": "read_file", "arguments": {"path": "a.txt"}}}]}}',
        [READ_A],
        id="tool-calls-nested-in-message",
    ),
    P(
        '{"choices": [{"index": 0, "message": {"role": "assistant", "tool_calls": [{"id": "call_1", '
        '"type": "function", "function": {"name": "read_file", "arguments": "{\\"path\\": \\"a.txt\\"}"}}]}}]}',
        [READ_A],
        id="openai-response-nested",
    ),
    P(
        '{"tool_call": {"type": "function", "function": {"name": "list_files", "arguments": {"path": "."}}}}',
        [LIST_DOT],
        id="openai-shape-inside-wrapper",
    ),
    P(
        '{"tool_uses": [{"recipient_name": "functions.read_file", "parameters": {"path": "a.txt"}}]}',
        [READ_A],
        id="multi-tool-use",
    ),
    P(
        '<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "read_file", "parameters": {"path": "a.txt"}},\n'
        '    {"tool_call_id": "1", "tool_name": "list_files", "parameters": {}}\n]<|END_ACTION|>',
        [READ_A, LIST_NONE],
        id="command-r7b-action",
    ),
    P(
        "<|START_THINKING|>I might call write_file, but reading is enough.<|END_THINKING|><|START_ACTION|>"
        '[{"tool_call_id": "0", "tool_name": "read_file", "parameters": {"path": "a.txt"}}]<|END_ACTION|>',
        [READ_A],
        id="command-a-after-thinking",
    ),
    P('{"action": "read_file", "action_input": {"path": "a.txt"}}', [READ_A], id="react-action-input"),
    P(
        '{"thoughts": ["I need the file first"], "tool_name": "read_file", "tool_args": {"path": "a.txt"}}',
        [READ_A],
        id="thoughts-beside-the-call",
    ),
]

ZERO_ARGUMENTS = [
    P("<tool_call>list_files</tool_call>", [LIST_NONE], id="zero-args-bare-name-tag"),
    P('<tool_call>{"name": "list_files", "arguments": {}}</tool_call>', [LIST_NONE], id="zero-args-hermes"),
    P("list_files()", [LIST_NONE], id="zero-args-python"),
    P("<function=list_files></function>", [LIST_NONE], id="zero-args-function-tag"),
    P('<invoke name="list_files"></invoke>', [LIST_NONE], id="zero-args-invoke"),
    P("<|tool_call>call:list_files{}<tool_call|>", [LIST_NONE], id="zero-args-gemma"),
]

PYTHON = [
    P(
        'write_file(path="notes.md", content="""# Notes\nA "quoted" line\n""")',
        [ToolCall("write_file", {"path": "notes.md", "content": '# Notes\nA "quoted" line\n'})],
        id="python-triple-quoted",
    ),
    P(
        'edit_file(path="a.py", edits=[{"old": "x", "new": {"text": "y", "line": 3}}])',
        [ToolCall("edit_file", {"path": "a.py", "edits": [{"old": "x", "new": {"text": "y", "line": 3}}]})],
        id="python-nested-dicts",
    ),
    P(
        'search_files(pattern="TODO", recursive=True, limit=None)',
        [ToolCall("search_files", {"pattern": "TODO", "recursive": True, "limit": None})],
        id="python-true-none",
    ),
    P('[list_files(path="."), read_file(path="a.txt")]', [LIST_DOT, READ_A], id="pythonic-list"),
    P('<|python_start|>[read_file(path="a.txt")]<|python_end|>', [READ_A], id="llama4-pythonic"),
    P('<|tool_call_start|>[read_file(path="a.txt")]<|tool_call_end|>', [READ_A], id="lfm2-pythonic"),
    P(
        '<function_calls>list_files(path=".")\nread_file(path="a.txt")</function_calls>',
        [LIST_DOT, READ_A],
        id="olmo3-function-calls",
    ),
    P('```tool_code\nprint(default_api.read_file(path="a.txt"))\n```', [READ_A], id="gemma-tool-code"),
    P(
        "I'll write it:\nwrite_file(\n    path='a.py',\n    content='''x = 1\n''',  # the whole file\n)",
        [ToolCall("write_file", {"path": "a.py", "content": "x = 1\n"})],
        id="python-call-over-several-lines",
    ),
]

OTHER_FAMILIES = [
    P(
        '{"name": "list_files", "parameters": {"path": "."}}; {"name": "read_file", "parameters": {"path": "a.txt"}}',
        [LIST_DOT, READ_A],
        id="llama3-json-semicolons",
    ),
    P('{"type": "function", "name": "read_file", "parameters": {"path": "a.txt"}}', [READ_A], id="llama3-typed"),
    P('<|tool_call|>[{"name": "read_file", "arguments": {"path": "a.txt"}}]', [READ_A], id="granite"),
    P('<function_call> {"name": "read_file", "arguments": {"path": "a.txt"}}', [READ_A], id="granite-20b-fc"),
    P(
        '<|action_start|><|plugin|>\n{"name": "read_file", "parameters": {"path": "a.txt"}}<|action_end|>',
        [READ_A],
        id="internlm2",
    ),
    P('<tool_calls>[{"name": "read_file", "arguments": {"path": "a.txt"}}]</tool_calls>', [READ_A], id="jamba"),
    P(
        "<think>The user wants a.txt.</think>\n<answer>\n<tool_calls>[\n"
        '{"name": "read_file", "arguments": {"path": "a.txt"}}\n]</tool_calls>\n</answer>',
        [READ_A],
        id="hunyuan-a13b",
    ),
    P(
        '<tool_calls>\n{"name": "list_files", "arguments": {"path": "."}}\n'
        '{"name": "read_file", "arguments": {"path": "a.txt"}}\n</tool_calls>',
        [LIST_DOT, READ_A],
        id="minimax-m1-one-per-line",
    ),
    P('```json\n[{"name": "read_file", "arguments": {"path": "a.txt"}}]\n```', [READ_A], id="xlam-fenced-list"),
    P('functools[{"name": "read_file", "arguments": {"path": "a.txt"}}]', [READ_A], id="phi4-mini-functools"),
    P(' functools[{"name": "read_file", "arguments": {"path": "a.txt"}}]', [READ_A], id="firefunction-v2"),
    P(
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>"
        '{"path": "a.txt"}<|tool_call_end|><|tool_call_begin|>functions.list_files:1<|tool_call_argument_begin|>'
        '{"path": "."}<|tool_call_end|><|tool_calls_section_end|>',
        [READ_A, LIST_DOT],
        id="kimi-k2",
    ),
    P(
        "<|channel|>analysis<|message|>The user wants a.txt. I could call write_file, but no.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.read_file <|constrain|>json"
        '<|message|>{"path": "a.txt"}<|call|>',
        [READ_A],
        id="gpt-oss-call-after-analysis",
    ),
    P(
        '<|start|>assistant to=functions.list_files<|channel|>commentary json<|message|>{"path": "."}<|call|>',
        [LIST_DOT],
        id="gpt-oss-recipient-in-role",
    ),
    P('<TOOLCALL>[{"name": "read_file", "arguments": {"path": "a.txt"}}]</TOOLCALL>', [READ_A], id="nemotron-v2"),
    P(
        "Here are my reasoning steps:\nThe user wants a.txt; write_file would lose it.\n[BEGIN FINAL RESPONSE]\n"
        '<tool_calls>[{"name": "read_file", "arguments": {"path": "a.txt"}}]</tool_calls>\n[END FINAL RESPONSE]',
        [READ_A],
        id="apriel",
    ),
    P(
        '<longcat_tool_call>{"name": "read_file", "arguments": {"path": "a.txt"}}</longcat_tool_call>',
        [READ_A],
        id="longcat",
    ),
    P('function call<|role_sep|>\n{"name": "read_file", "arguments": {"path": "a.txt"}}', [READ_A], id="gigachat3"),
    P('<|function_call|>{"name": "read_file", "arguments": {"path": "a.txt"}}', [READ_A], id="gigachat31"),
    P(
        '<|tool_call>call:search_files{pattern:<|"|>say "hi", then go<|"|>,recursive:true,limit:5,'
        'opts:{case:<|"|>ignore<|"|>}}<tool_call|>',
        [
            ToolCall(
                "search_files",
                {"pattern": 'say "hi", then go', "recursive": True, "limit": 5, "opts": {"case": "ignore"}},
            )
        ],
        id="gemma4",
    ),
    P(
        "<start_function_call>call:read_file{path:<escape>a.txt<escape>}<end_function_call>",
        [READ_A],
        id="functiongemma",
    ),
    P(
        '<think>\nThe file first.\n</think>\n\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n'
        "</tool_call>",
        [READ_A],
        id="ernie45-hermes-after-think",
    ),
    P(
        'Let me check the weather. <tool_call>{"name": "read_file", "arguments": {"path": "a.txt"}}</tool_call>',
        [READ_A],
        id="marker-after-prose-on-the-line",
    ),
]

FAMILIES = MISTRAL + DEEPSEEK + FUNCTIONARY + XML + KEYED_BY_NAME + WRAPPERS + ZERO_ARGUMENTS + PYTHON + OTHER_FAMILIES


@pytest.mark.parametrize(("content", "expected"), FAMILIES)
def test_every_family_format_is_read(content: str, expected: list[ToolCall]) -> None:
    assert parse_tool_calls(content, TOOLS) == expected


@pytest.mark.parametrize(("content", "expected"), FAMILIES)
def test_every_family_format_is_read_with_signatures(content: str, expected: list[ToolCall]) -> None:
    assert parse_tool_calls(content, SIGNATURES) == expected


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        P('read_file("a.txt")', [READ_A], id="positional"),
        P(
            'run_command("ls -la", timeout_s=30)',
            [ToolCall("run_command", {"command": "ls -la", "timeout_s": 30})],
            id="mixed",
        ),
        P('[read_file("a.txt"), list_files(".")]', [READ_A, LIST_DOT], id="positional-in-a-list"),
    ],
)
def test_positional_python_arguments_are_named_by_the_tools_parameters(content: str, expected: list[ToolCall]) -> None:
    assert parse_tool_calls(content, SIGNATURES) == expected
    assert parse_tool_calls(content, TOOLS) == []  # without the parameter order they cannot be named


@pytest.mark.parametrize(
    "content",
    [
        P('read_file("a.txt", "b.txt", "c.txt")', id="more-positional-than-parameters"),
        P('read_file("a.txt", path="b.txt")', id="positional-and-keyword-for-one-parameter"),
    ],
)
def test_positional_arguments_that_do_not_fit_give_no_call(content: str) -> None:
    assert parse_tool_calls(content, SIGNATURES) == []


def test_the_registrys_schemas_give_the_parameter_order_the_loop_passes() -> None:
    schemas = [tool.schema() for tool in BUILTIN.values()]
    order = parameter_order(schemas)
    assert order["read_file"][:1] == ["path"] and set(order) == set(BUILTIN)
    assert parse_tool_calls('read_file("notes.md")', order) == [ToolCall("read_file", {"path": "notes.md"})]
