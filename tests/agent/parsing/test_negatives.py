"""Text that only looks like a call gives nothing; a call to a tool the run lacks comes back marked.

Each negative names the clause of the rule in agent/parsing/extractors.py that rejects it.
"""

import pytest

from agent.parsing import ToolCall, looks_like_tool_call, parse_tool_calls
from tests.agent.parsing.test_families import DS_BEGIN, DS_CALL, DS_CALL_END, DS_END, DS_SEP, SIGNATURES, TOOLS

P = pytest.param

NOT_CALLS = [
    # a fenced block counts only whole
    P(
        '```python\ncall = {"name": "read_file", "arguments": {"path": "a.txt"}}\ndispatch(call)\n```',
        id="code-builds-a-call-dict",
    ),
    P(
        "```python\ncalls = []\ncalls.append(\n"
        '    {"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}\n)\n```',
        id="call-dict-on-its-own-line-inside-code",
    ),
    P(
        "Here is the test fixture:\n```python\nEXPECTED = [\n"
        '    {"name": "read_file", "arguments": {"path": "a.txt"}},  # the simple case\n]\n```',
        id="call-dict-in-a-python-list-with-a-comment",
    ),
    P(
        '```js\nconst call = {"name": "run_command", "arguments": {"command": "rm -rf build"}};\n```',
        id="javascript-builds-a-call",
    ),
    P("```python\nimport os\nread_file(path='a.txt')\n```", id="python-call-inside-a-script"),
    # a call's shape: records are data
    P(
        '{"ts": "2024-05-01T10:00:00Z", "tool": "run_command", "args": {"command": "make"}, "exit_code": 2}\n'
        '{"ts": "2024-05-01T10:00:05Z", "tool": "read_file", "args": {"path": "build.log"}, "ok": true}',
        id="log-lines-with-tool-and-args",
    ),
    P(
        "The history of this run so far:\n"
        '[{"step": 1, "tool": "list_files", "args": {"path": "."}, "result": "a.txt"},\n'
        ' {"step": 2, "tool": "read_file", "args": {"path": "a.txt"}, "result": "hello"}]',
        id="history-records",
    ),
    P('| name | args |\n|---|---|\n| read_file | {"path": "a.txt"} |', id="markdown-table-of-calls"),
    P('[{"name": "alpha", "args": {"n": 1}}, {"name": "beta", "args": {"n": 2}}]', id="records-with-name-and-args"),
    P(
        '[{"name": "read_file", "args": {"path": "a.txt"}}, {"name": "Alice", "age": 3}]',
        id="batch-with-one-item-that-is-data",
    ),
    P('{"name": "John Smith", "arguments": {"role": "admin"}}', id="name-with-a-space-is-not-a-tool"),
    P(
        '{"type": "function", "function": {"name": "read_file", "description": "Read a file.", '
        '"parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}',
        id="openai-tool-definition",
    ),
    P('{"config": {"debug": true}}', id="object-keyed-by-a-word"),
    P('Result\n{"status": "ok", "files": 3}', id="word-line-above-data"),
    P('{"response": "The file says hello."}', id="generic-response"),
    P('{"calls": 3, "errors": 0}', id="calls-count"),
    P("[TOOL_CALLS] []", id="empty-call-list"),
    # it stands where calls stand
    P(
        'Earlier I ran {"name": "run_command", "arguments": {"command": "make"}} and it failed.',
        id="past-call-in-a-sentence",
    ),
    P(
        'Write each call as <function=NAME>{JSON}</function>, e.g. <function=get_time>{"tz": "UTC"}</function>.',
        id="format-explanation-inline-example",
    ),
    P(
        'The format is `[TOOL_CALLS]name[ARGS]{...}`, as in `[TOOL_CALLS]read_file[ARGS]{"path": "a.txt"}` here.',
        id="mistral-format-in-inline-code",
    ),
    P(
        f'DeepSeek writes {DS_CALL}read_file{DS_SEP}{{"path": "a.txt"}}{DS_CALL_END} in its replies.',
        id="deepseek-tokens-quoted-in-a-sentence",
    ),
    P('Use `read_file(path="a.txt")` to read it.', id="python-in-inline-code"),
    P("Call <tool_call>list_files</tool_call> whenever you need the listing.", id="glm-tag-quoted-in-a-sentence"),
    # the prose frames it as past or as an example
    P(
        'Earlier I ran this, and it failed:\n{"name": "run_command", "arguments": {"command": "make test"}}\n'
        "The tests need a database.",
        id="past-call-as-a-block",
    ),
    P(
        'The previous call was:\n<tool_call>{"name": "write_file", "arguments": {"path": "a.txt", "content": ""}}'
        "</tool_call>\nIt emptied the file, which is why it is blank now.",
        id="previous-call-quoted",
    ),
    P(
        'To call a tool, reply in this format:\n<function_calls>\n<invoke name="read_file">\n'
        '<parameter name="path">notes.txt</parameter>\n</invoke>\n</function_calls>',
        id="format-explanation-invoke",
    ),
    P('For example:\n>>>read_file\n{"path": "a.txt"}', id="format-explanation-functionary"),
    P(
        "Gemma answers a tool prompt in its own way: it replies with a block such as\n"
        '```tool_code\nprint(default_api.read_file(path="a.txt"))\n```\nand the server reads the call out of it.',
        id="a-familys-call-syntax-explained-with-such-as",
    ),
    P(
        'When Gemma wants a file, it replies with\n```tool_code\nread_file(path="a.txt")\n```',
        id="what-a-family-replies-with",
    ),
    # it is complete
    P('{"name": "write_file", "arguments": {"path": "a.txt", "lines": ["one", "two"', id="cut-off-in-an-open-list"),
    P('[read_file(path="a.txt"), list_files(path="."', id="cut-off-pythonic-list"),
    P('write_file(path="a.py", content="""import os\n', id="cut-off-triple-quoted"),
    P('<invoke name="write_file"><parameter name="content">import o', id="cut-off-invoke-parameter"),
    P("<tool_call>write_file<arg_key>path</arg_key><arg_value>a.py", id="cut-off-glm"),
    P(
        f'{DS_BEGIN}{DS_CALL}function{DS_SEP}write_file\n```json\n{{"path": "a.py", "content": "imp',
        id="cut-off-deepseek",
    ),
    P('[TOOL_CALLS]write_file[ARGS]{"path": "a.py", "content": "imp', id="cut-off-mistral"),
    P('<|tool_call>call:write_file{path:<|"|>a.py<|"|>,content:<|"|>imp', id="cut-off-gemma"),
    P(
        '<|channel|>commentary to=functions.write_file <|constrain|>json<|message|>{"path": "a.py", "content": "x',
        id="cut-off-gpt-oss",
    ),
    # reasoning is never a call
    P(
        '<|channel|>analysis<|message|>I could call {"name": "write_file", "arguments": {"path": "a"}}<|end|>'
        "<|start|>assistant<|channel|>final<|message|>Nothing needs to change.<|return|>",
        id="gpt-oss-call-only-in-analysis",
    ),
    P('[THINK][TOOL_CALLS]write_file[ARGS]{"path": "a.txt"}[/THINK]No change is needed.', id="call-only-in-think"),
    P(
        "<seed:think><seed:tool_call><function=write_file><parameter=path>a</parameter></function></seed:tool_call>"
        "</seed:think>All done.",
        id="call-only-in-seed-think",
    ),
    P(">>>all\nThe file says hello.", id="functionary-prose-channel"),
]


@pytest.mark.parametrize("content", NOT_CALLS)
def test_look_alikes_give_no_calls(content: str) -> None:
    assert parse_tool_calls(content, TOOLS) == []
    assert parse_tool_calls(content, SIGNATURES) == []


def test_a_cut_off_call_keeps_the_complete_calls_before_it() -> None:
    content = '{"name": "list_files", "arguments": {"path": "."}}\n{"name": "write_file", "arguments": {"content": "imp'
    assert parse_tool_calls(content, TOOLS) == [ToolCall("list_files", {"path": "."})]


def test_a_forgotten_final_brace_after_complete_arguments_is_not_a_cut_off() -> None:
    # nothing is missing but the brace: the arguments closed, so no part of the call is guessed
    content = 'Writing it.\n{"name": "write_file", "arguments": {"path": "a.txt", "content": "hi"}'
    assert parse_tool_calls(content, TOOLS) == [ToolCall("write_file", {"path": "a.txt", "content": "hi"})]


@pytest.mark.parametrize(
    "content",
    [
        P('[TOOL_CALLS]write_file[ARGS]{"path": "a.py", "content": "imp', id="mistral"),
        P("<tool_call>write_file<arg_key>path</arg_key><arg_value>a.py", id="glm"),
        P('<|tool_call>call:write_file{path:<|"|>a.py', id="gemma"),
        P('<invoke name="write_file"><parameter name="content">import o', id="invoke"),
    ],
)
def test_a_cut_off_call_in_any_family_is_reported_as_an_attempt(content: str) -> None:
    assert looks_like_tool_call(content)


UNKNOWN = [
    P('{"name": "reed_file", "arguments": {"path": "a.txt"}}', id="json"),
    P('<tool_call>{"name": "reed_file", "arguments": {"path": "a.txt"}}</tool_call>', id="hermes"),
    P('<tool_call>{"name": "reed_file", "path": "a.txt"}</tool_call>', id="hermes-flattened"),
    P('[TOOL_CALLS]reed_file[ARGS]{"path": "a.txt"}', id="mistral"),
    P(f'{DS_BEGIN}{DS_CALL}reed_file{DS_SEP}{{"path": "a.txt"}}{DS_CALL_END}{DS_END}', id="deepseek"),
    P(
        '<|tool_call_begin|>functions.reed_file:0<|tool_call_argument_begin|>{"path": "a.txt"}<|tool_call_end|>',
        id="kimi",
    ),
    P(
        '<|channel|>commentary to=functions.reed_file <|constrain|>json<|message|>{"path": "a.txt"}<|call|>',
        id="gpt-oss",
    ),
    P('>>>reed_file\n{"path": "a.txt"}', id="functionary"),
    P('<invoke name="reed_file"><parameter name="path">a.txt</parameter></invoke>', id="invoke"),
    P("<function=reed_file>\n<parameter=path>\na.txt\n</parameter>\n</function>", id="qwen3-coder"),
    P("<tool_call>reed_file<arg_key>path</arg_key><arg_value>a.txt</arg_value></tool_call>", id="glm"),
    P('<|tool_call>call:reed_file{path:<|"|>a.txt<|"|>}<tool_call|>', id="gemma"),
    P('[reed_file(path="a.txt")]', id="pythonic"),
    P('<|python_tag|>reed_file(path="a.txt")', id="python-after-marker"),
    P('<|tools_prefix|>[{"reed_file": {"path": "a.txt"}}]<|tools_suffix|>', id="apertus-keyed"),
    P('<function name="reed_file">{"path": "a.txt"}</function>', id="function-name-attribute"),
]


@pytest.mark.parametrize("content", UNKNOWN)
def test_a_call_to_a_tool_the_run_lacks_comes_back_marked_unknown(content: str) -> None:
    calls = parse_tool_calls(content, TOOLS)
    assert calls == [ToolCall("reed_file", {"path": "a.txt"})]
    assert calls[0].known is False


def test_a_batch_with_one_real_tool_vouches_for_the_unknown_name_beside_it() -> None:
    calls = parse_tool_calls('[read_file(path="a.txt"), reed_file(path="b.txt")]', TOOLS)
    assert [(c.name, c.known) for c in calls] == [("read_file", True), ("reed_file", False)]


@pytest.mark.parametrize(
    "content",
    [
        P('{"reed_file": {"path": "a.txt"}}', id="keyed-by-an-unknown-word"),
        P('reed_file(path="a.txt")', id="bare-python-line"),
        P('{"name": "reed_file", "path": "a.txt"}', id="flattened-without-marker"),
    ],
)
def test_an_unknown_name_that_only_the_shape_suggests_is_not_a_call(content: str) -> None:
    assert parse_tool_calls(content, TOOLS) == []


def test_flattened_arguments_must_be_the_tools_parameters_when_they_are_known() -> None:
    record = '{"tool": "read_file", "path": "a.txt", "result": "hello"}'
    assert parse_tool_calls(record, SIGNATURES) == []
    assert parse_tool_calls('{"tool": "read_file", "path": "a.txt"}', SIGNATURES) == [
        ToolCall("read_file", {"path": "a.txt"})
    ]


@pytest.mark.parametrize(
    "content",
    [
        P('I\'ll read the file: {"name": "read_file", "arguments": {"path": "a.txt"}}', id="colon-introduces-inline"),
        P(
            "I ran the tests and they failed, so let me look at the file:\n"
            '{"name": "read_file", "arguments": {"path": "a.txt"}}',
            id="past-report-then-intent",
        ),
        P(
            "The last attempt failed. Now I'll read it first:\n<tool_call>\n"
            '{"name": "read_file", "arguments": {"path": "a.txt"}}\n</tool_call>',
            id="intent-after-a-past-sentence",
        ),
        P(
            "The format of the config is wrong, so let me read it:\n"
            '{"name": "read_file", "arguments": {"path": "a.txt"}}',
            id="a-format-word-then-intent",
        ),
        P(
            'I\'ll check the structure of the data:\n```json\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n```\n'
            "Then I will fix the parser.",
            id="intent-beside-a-format-word-and-a-plain-sentence-after",
        ),
        P(
            '{"name": "read_file", "arguments": {"path": "a.txt"}, "id": "call_1", "type": "function"}',
            id="call-bookkeeping",
        ),
        P(
            'I\'ll start with a file such as the notes:\n```tool_code\nread_file(path="a.txt")\n```',
            id="such-as-inside-an-intent",
        ),
    ],
)
def test_prose_that_introduces_an_action_keeps_the_call(content: str) -> None:
    assert parse_tool_calls(content, TOOLS) == [ToolCall("read_file", {"path": "a.txt"})]


@pytest.mark.parametrize(
    ("content", "written"),
    [
        P(
            '{"name": "write_file", "arguments": {"path": "t.md", "content": "Use <function=f>{}</function> here"}}',
            "Use <function=f>{}</function> here",
            id="function-tag-in-a-json-string",
        ),
        P(
            '<tool_call>{"name": "write_file", "arguments": {"path": "t.md", '
            '"content": "[TOOL_CALLS]read_file[ARGS]{\\"path\\": \\"x\\"}"}}</tool_call>',
            '[TOOL_CALLS]read_file[ARGS]{"path": "x"}',
            id="mistral-tokens-in-a-json-string",
        ),
        P(
            '{"name": "write_file", "arguments": {"path": "t.md", "content": "Wrap reasoning in <think> and </think>."}}',
            "Wrap reasoning in <think> and </think>.",
            id="think-tags-in-a-json-string",
        ),
        P(
            "write_file(path='t.md', content='<invoke name=\"read_file\"></invoke>')",
            '<invoke name="read_file"></invoke>',
            id="invoke-in-a-python-string",
        ),
    ],
)
def test_a_call_whose_content_mentions_another_format_is_written_intact(content: str, written: str) -> None:
    assert parse_tool_calls(content, TOOLS) == [ToolCall("write_file", {"path": "t.md", "content": written})]
