"""Tool calls as weak local models really write them, and the look-alikes that are not calls."""

import pytest

from agent.parsing import (
    ToolCall,
    coerce_arguments,
    loads_lenient,
    looks_like_tool_call,
    parse_tool_calls,
    resolve_tool_name,
    suggest_tool_name,
)

TOOLS = ["read_file", "write_file", "list_files", "run_command", "search_files", "edit_file"]

READ_A = ToolCall("read_file", {"path": "a.txt"})
LIST_DOT = ToolCall("list_files", {"path": "."})

FOUND = [
    pytest.param('{"name": "read_file", "arguments": {"path": "a.txt"}}', [READ_A], id="bare-json"),
    pytest.param(
        "I'll start by looking at the file.\n\n```json\n"
        '{\n  "name": "read_file",\n  "arguments": {\n    "path": "a.txt"\n  }\n}\n```\n',
        [READ_A],
        id="fenced-json-after-prose",
    ),
    pytest.param('```\n{"name": "list_files", "arguments": {"path": "."}}\n```', [LIST_DOT], id="fenced-no-language"),
    pytest.param(
        '```tool_call\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n```', [READ_A], id="fenced-tool-call"
    ),
    pytest.param(
        'Let me read it.\n{"name": "read_file", "arguments": {"path": "a.txt"}}', [READ_A], id="call-after-prose"
    ),
    pytest.param(
        '[\n  {"name": "read_file", "arguments": {"path": "a.txt"}},\n'
        '  {"name": "list_files", "arguments": {"path": "."}}\n]',
        [READ_A, LIST_DOT],
        id="json-list-of-calls",
    ),
    pytest.param(
        'First the file, then the directory.\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n'
        '{"name": "list_files", "arguments": {"path": "."}}',
        [READ_A, LIST_DOT],
        id="two-bare-calls",
    ),
    pytest.param(
        '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n</tool_call>',
        [READ_A],
        id="hermes-tool-call-tag",
    ),
    pytest.param(
        'Checking.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}}',
        [READ_A],
        id="tool-call-tag-unclosed",
    ),
    pytest.param(
        "<tool_call>\n{'name': 'read_file', 'arguments': {'path': 'a.txt'}}\n</tool_call>",
        [READ_A],
        id="tool-call-tag-single-quotes",
    ),
    pytest.param(
        '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}\n</tool_call>',
        [READ_A],
        id="tool-call-tag-missing-final-brace",
    ),
    pytest.param(
        '<tool_call>{"name": "read_file", "arguments": {"path": "a.txt"}}</tool_call>\n'
        '<tool_call>{"name": "list_files", "arguments": {"path": "."}}</tool_call>',
        [READ_A, LIST_DOT],
        id="two-tool-call-tags",
    ),
    pytest.param(
        '<function_call>{"name": "read_file", "arguments": {"path": "a.txt"}}</function_call>',
        [READ_A],
        id="function-call-tag",
    ),
    pytest.param('<tools>\n{"name": "list_files", "arguments": {"path": "."}}\n</tools>', [LIST_DOT], id="tools-tag"),
    pytest.param(
        '[TOOL_CALLS] [{"name": "read_file", "arguments": {"path": "a.txt"}}, '
        '{"name": "list_files", "arguments": {"path": "."}}]',
        [READ_A, LIST_DOT],
        id="mistral-tool-calls",
    ),
    pytest.param(
        '<|python_tag|>{"name": "read_file", "parameters": {"path": "a.txt"}}',
        [READ_A],
        id="llama-python-tag-parameters",
    ),
    pytest.param(
        '<|python_tag|>{"name": "read_file", "parameters": {"path": "a.txt"}}<|eom_id|>',
        [READ_A],
        id="llama-python-tag-eom",
    ),
    pytest.param('<function=read_file>{"path": "a.txt"}</function>', [READ_A], id="llama-function-tag"),
    pytest.param(
        'I need the listing first.\n<function=list_files>{"path": "."}</function>\n'
        '<function=read_file>{"path": "a.txt"}</function>',
        [LIST_DOT, READ_A],
        id="two-function-tags",
    ),
    pytest.param(
        "<tool_call>\n<function=write_file>\n<parameter=path>\nb.py\n</parameter>\n"
        "<parameter=content>\nprint('hi')\n</parameter>\n</function>\n</tool_call>",
        [ToolCall("write_file", {"path": "b.py", "content": "print('hi')"})],
        id="qwen3-coder-xml",
    ),
    pytest.param('[read_file(path="a.txt"), list_files(path=".")]', [READ_A, LIST_DOT], id="python-call-list"),
    pytest.param('read_file(path="a.txt")', [READ_A], id="python-bare-call"),
    pytest.param(
        "I will check the contents now.\n\n```python\nread_file(path='a.txt')\nlist_files(path='.')\n```",
        [READ_A, LIST_DOT],
        id="python-calls-fenced",
    ),
    pytest.param(
        'run_command(command="ls -la", timeout_s=30)',
        [ToolCall("run_command", {"command": "ls -la", "timeout_s": 30})],
        id="python-call-int-arg",
    ),
    pytest.param('{"name": "read_file", "args": {"path": "a.txt"}}', [READ_A], id="key-args"),
    pytest.param('{"name": "read_file", "input": {"path": "a.txt"}}', [READ_A], id="key-input"),
    pytest.param('{"tool": "read_file", "tool_input": {"path": "a.txt"}}', [READ_A], id="key-tool-input"),
    pytest.param(
        '{"id": "call_0", "type": "function", "function": {"name": "read_file", '
        '"arguments": "{\\"path\\": \\"a.txt\\"}"}}',
        [READ_A],
        id="openai-shape-string-arguments",
    ),
    pytest.param(
        '{"name": "read_file", "arguments": "{\\"path\\": \\"a.txt\\"}"}', [READ_A], id="arguments-as-json-string"
    ),
    pytest.param('{"name": "list_files", "arguments": {}}', [ToolCall("list_files", {})], id="empty-arguments"),
    pytest.param('{"name": "list_files"}', [ToolCall("list_files", {})], id="known-name-no-arguments"),
    pytest.param('{"name": "read_file", "path": "a.txt"}', [READ_A], id="flattened-arguments"),
    pytest.param('{"name": "Read-File", "arguments": {"path": "a.txt"}}', [READ_A], id="name-repaired"),
    pytest.param(
        '{"name": "functions.readFile", "arguments": {"path": "a.txt"}}', [READ_A], id="name-prefix-and-camel-repaired"
    ),
    pytest.param(
        '{"name": "reed_file", "arguments": {"path": "a.txt"}}',
        [ToolCall("reed_file", {"path": "a.txt"})],
        id="unknown-name-kept-for-did-you-mean",
    ),
    pytest.param(
        '{"name": "run_command", "arguments": {"command": "grep -rn \'TODO\' src/",}}',
        [ToolCall("run_command", {"command": "grep -rn 'TODO' src/"})],
        id="trailing-comma",
    ),
    pytest.param(
        '{"name": "write_file", "arguments": {"path": "notes.md", "content": "line one\nline two\n"}}',
        [ToolCall("write_file", {"path": "notes.md", "content": "line one\nline two\n"})],
        id="raw-newlines-in-content",
    ),
    pytest.param(
        '{"name": "search_files", "arguments": {"pattern": "def \\w+\\(", "recursive": True}}',
        [ToolCall("search_files", {"pattern": "def \\w+\\(", "recursive": True})],
        id="regex-escape-and-python-true",
    ),
    pytest.param(
        '<think>\nThe user wants a.txt. I could call {"name": "write_file"} but no.\n</think>\n'
        '{"name": "read_file", "arguments": {"path": "a.txt"}}',
        [READ_A],
        id="call-after-think-block",
    ),
    pytest.param(
        "The user wants the file, so I read it first.\n</think>\n\n"
        '{"name": "read_file", "arguments": {"path": "a.txt"}}',
        [READ_A],
        id="call-after-template-opened-think",
    ),
    pytest.param(
        '```json\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n```\n\n'
        '<tool_call>{"name": "read_file", "arguments": {"path": "a.txt"}}</tool_call>',
        [READ_A],
        id="same-call-twice-kept-once",
    ),
    pytest.param(
        '{"name": "run_command", "arguments": {"command": "python -c \\"read_file(path=\'x\')\\""}}',
        [ToolCall("run_command", {"command": "python -c \"read_file(path='x')\""})],
        id="python-call-inside-string-not-read",
    ),
    pytest.param(
        'Let me read it.\n<tool_call>\nread_file(path="a.txt")\n</tool_call>',
        [READ_A],
        id="python-call-in-tool-call-tag",
    ),
    pytest.param("functions.read_file(path='a.txt')", [READ_A], id="python-call-with-prefix"),
    pytest.param(
        "I'll update the example in README.md so it matches the new flag.\n"
        '{"name": "edit_file", "arguments": {"path": "README.md", "old": "-v", "new": "--verbose"}}',
        [ToolCall("edit_file", {"path": "README.md", "old": "-v", "new": "--verbose"})],
        id="task-about-an-example-file-is-still-a-call",
    ),
    pytest.param(
        "I'll write the summary like this:\n"
        '{"name": "write_file", "arguments": {"path": "summary.md", "content": "# Summary\\n"}}',
        [ToolCall("write_file", {"path": "summary.md", "content": "# Summary\n"})],
        id="like-this-is-not-an-example-cue",
    ),
    pytest.param(
        'First I\'ll check the file format:\n{"name": "read_file", "arguments": {"path": "a.txt"}}',
        [READ_A],
        id="file-format-is-not-an-example-cue",
    ),
    pytest.param(
        'I\'ll check [the user\'s notes] and {braces} first.\n{"name": "read_file", "arguments": {"path": "a.txt"}}',
        [READ_A],
        id="brackets-in-prose-before-call",
    ),
    pytest.param(
        'The set was [1, 2, {"k": 3}] before.\n{"name": "read_file", "arguments": {"path": "a.txt"}}',
        [READ_A],
        id="data-then-call",
    ),
    pytest.param(
        "[1," * 5000 + "oops\n" + '{"name": "read_file", "arguments": {"path": "a.txt"}}',
        [READ_A],
        id="call-after-deeply-nested-garbage",
    ),
]

NOT_CALLS = [
    pytest.param("The file says hello. Nothing else to do.", id="plain-answer"),
    pytest.param("", id="empty"),
    pytest.param(
        'To call a tool, write {"name": "tool_name", "arguments": {...}} on a line of its own.',
        id="format-prose-with-ellipsis",
    ),
    pytest.param(
        'Tools are called with JSON:\n```json\n{"name": "tool_name", "arguments": {"arg": "value"}}\n```',
        id="placeholder-name",
    ),
    pytest.param(
        '<tool_call>\n{"name": "<name>", "arguments": {"key": "value"}}\n</tool_call>', id="angle-placeholder-name"
    ),
    pytest.param(
        "You can read files with the read_file tool. Example:\n```json\n"
        '{"name": "read_file", "arguments": {"path": "notes.txt"}}\n```\nIt returns the text.',
        id="example-of-known-tool",
    ),
    pytest.param(
        "For example, to list a directory you would write:\n\n"
        '{"name": "list_files", "arguments": {"path": "."}}\n\nand to read a file:\n\n'
        '{"name": "read_file", "arguments": {"path": "a.txt"}}',
        id="calls-after-an-example-are-examples",
    ),
    pytest.param('e.g. `{"name": "read_file", "arguments": {"path": "a.txt"}}`', id="eg-inline"),
    pytest.param(
        "Here are the available tools in this format:\n"
        '<tool_call>{"name": "read_file", "arguments": {"path": "x"}}</tool_call>',
        id="example-in-tool-call-tag",
    ),
    pytest.param('For instance:\n[read_file(path="a.txt")]', id="example-python-list"),
    pytest.param('The forecast is {"temperature": 21, "unit": "C"}.', id="data-object"),
    pytest.param("The first three are [1, 2, 3].", id="data-list"),
    pytest.param('```json\n{"name": "Alice", "age": 3}\n```', id="data-with-name-key"),
    pytest.param(
        '{"name": "read_file", "description": "Read a text file.", '
        '"parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}',
        id="tool-definition-with-schema",
    ),
    pytest.param('{"name": "read_file", "description": "Read a text file."}', id="tool-definition"),
    pytest.param(
        '<think>\n{"name": "write_file", "arguments": {"path": "x", "content": "y"}}\n</think>\n'
        "I decided not to change anything.",
        id="call-inside-think",
    ),
    pytest.param(
        'Let me think.\n<think>\nMaybe {"name": "run_command", "arguments": {"command": "rm -rf build"}}',
        id="unclosed-think-swallows-rest",
    ),
    pytest.param(
        '{"name": "write_file", "arguments": {"path": "a.py", "content": "import os\\nprint(', id="truncated-mid-string"
    ),
    pytest.param(
        'Writing the script now.\n<tool_call>\n{"name": "write_file", "arguments": {"path": "a.py", '
        '"content": "import os\nprint(',
        id="truncated-raw-newline-in-tag",
    ),
    pytest.param('{"name": "read_file", "arguments": {"path": "a.txt", "limit": 20', id="truncated-after-number"),
    pytest.param('{"name": "write_file", "arguments": {"path": "a.py", "content":', id="truncated-after-colon"),
    pytest.param(
        '{"name": "write_file", "arguments": {"path": "a.py", "content": "x = 1\\n\nread_file(path=\'a.txt\')\n',
        id="truncated-swallows-later-lines",
    ),
    pytest.param(
        "<function=write_file>\n<parameter=path>\na.py\n</parameter>\n<parameter=content>\nimport o",
        id="truncated-qwen3-coder-parameter",
    ),
    pytest.param('<function=write_file>{"path": "a.py", "content": "imp', id="truncated-function-tag"),
    pytest.param("print(len(items))", id="python-unknown-function"),
    pytest.param('read_file("a.txt")', id="python-positional-argument"),
    pytest.param('I used read_file(path="a.txt") to check it, and it is fine.', id="python-call-in-a-sentence"),
    pytest.param('read_file(path=open("a.txt").read())', id="python-non-literal-argument"),
    pytest.param('{"name": "read_file", "arguments": [1, 2]}', id="arguments-not-an-object"),
]


@pytest.mark.parametrize(("content", "expected"), FOUND)
def test_calls_written_in_text_are_found(content: str, expected: list[ToolCall]) -> None:
    assert parse_tool_calls(content, TOOLS) == expected


@pytest.mark.parametrize("content", NOT_CALLS)
def test_text_that_only_looks_like_a_call_gives_no_calls(content: str) -> None:
    assert parse_tool_calls(content, TOOLS) == []


def test_truncated_content_is_never_repaired_into_a_write() -> None:
    content = '{"name": "write_file", "arguments": {"path": "a.py", "content": "import os\\nprint('
    assert parse_tool_calls(content, TOOLS) == []
    assert looks_like_tool_call(content)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(
            '{"name": "write_file", "arguments": {"path": "a.py", "content": "print(', True, id="cut-off-call"
        ),
        pytest.param(
            'Let me check.\n<tool_call>\n{"name": "read_file", "arguments": {path: a.txt}}',
            True,
            id="marker-with-broken-json",
        ),
        pytest.param('Example:\n{"name": "read_file", "arguments": {"path": "a.txt"}}', False, id="complete-example"),
        pytest.param("The answer is 42.", False, id="prose"),
        pytest.param('{"temperature": 21', False, id="cut-off-data"),
    ],
)
def test_attempted_but_unreadable_calls_are_recognised(content: str, expected: bool) -> None:
    assert looks_like_tool_call(content) is expected


LENIENT = [
    pytest.param('{"a": 1}', {"a": 1}, id="valid"),
    pytest.param('{"a": [1, 2,], "b": 3,}', {"a": [1, 2], "b": 3}, id="trailing-commas"),
    pytest.param("{'a': 'it\\'s', 'b': 'say \"hi\"'}", {"a": "it's", "b": 'say "hi"'}, id="single-quotes"),
    pytest.param('{"a": True, "b": False, "c": None}', {"a": True, "b": False, "c": None}, id="python-literals"),
    pytest.param('{"a": {"b": "c"}', {"a": {"b": "c"}}, id="missing-final-brace"),
    pytest.param('{"a": ["x", "y"', {"a": ["x", "y"]}, id="missing-bracket-and-brace"),
    pytest.param('{"a": true', {"a": True}, id="missing-brace-after-literal"),
    pytest.param('{"a": "line\nnext\tcol"}', {"a": "line\nnext\tcol"}, id="raw-newline-and-tab"),
    pytest.param('{"re": "\\d+"}', {"re": "\\d+"}, id="invalid-escape-kept"),
    pytest.param('{"a": 1}}', {"a": 1}, id="stray-closing-brace"),
    pytest.param("  [1, 2]  ", [1, 2], id="surrounding-whitespace"),
    pytest.param('{"a": "unterminated', None, id="cut-in-string"),
    pytest.param('{"a": 12', None, id="cut-after-number"),
    pytest.param('{"a": "b",', None, id="cut-after-comma"),
    pytest.param('{"a":', None, id="cut-after-colon"),
    pytest.param('{"a"', None, id="cut-after-key"),
    pytest.param("{a: 1}", None, id="unquoted-key"),
    pytest.param("[1 2]", None, id="missing-comma"),
    pytest.param('{"a" "b"}', None, id="missing-colon"),
    pytest.param('{"a": 1 "b": 2', None, id="missing-comma-then-cut"),
    pytest.param('{"a": 1} and more', None, id="trailing-prose"),
    pytest.param("", None, id="empty"),
    pytest.param("not json", None, id="prose"),
]


@pytest.mark.parametrize(("text", "expected"), LENIENT)
def test_loads_lenient_repairs_only_what_is_unambiguous(text: str, expected: object) -> None:
    assert loads_lenient(text) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param({"path": "a.txt"}, {"path": "a.txt"}, id="dict"),
        pytest.param('{"path": "a.txt"}', {"path": "a.txt"}, id="json-string"),
        pytest.param("{'path': 'a.txt',}", {"path": "a.txt"}, id="broken-string-repaired"),
        pytest.param('"{\\"path\\": \\"a.txt\\"}"', {"path": "a.txt"}, id="double-encoded"),
        pytest.param(None, {}, id="none"),
        pytest.param("", {}, id="empty-string"),
        pytest.param('{"path": "a.tx', None, id="cut-off-string"),
        pytest.param("[1, 2]", None, id="json-list"),
        pytest.param("a.txt", None, id="junk-string"),
        pytest.param(42, None, id="number"),
    ],
)
def test_coerce_arguments_gives_a_dict_or_none(raw: object, expected: object) -> None:
    assert coerce_arguments(raw) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("read_file", "read_file", id="exact"),
        pytest.param("Read_File", "read_file", id="case"),
        pytest.param("read-file", "read_file", id="dash"),
        pytest.param("read file", "read_file", id="space"),
        pytest.param("readFile", "read_file", id="camel"),
        pytest.param("ReadFileTool", "read_file", id="pascal-with-tool-suffix"),
        pytest.param("read_file_tool", "read_file", id="tool-suffix"),
        pytest.param("functions.read_file", "read_file", id="functions-prefix"),
        pytest.param("tools.list_files", "list_files", id="tools-prefix"),
        pytest.param("run_command ", "run_command", id="trailing-space"),
        pytest.param("delete_file", None, id="unknown"),
        pytest.param("reed_file", None, id="typo-is-not-resolved"),
    ],
)
def test_resolve_tool_name_repairs_spelling_only(name: str, expected: str | None) -> None:
    assert resolve_tool_name(name, TOOLS) == expected


def test_resolve_tool_name_refuses_an_ambiguous_spelling() -> None:
    assert resolve_tool_name("READ_FILE", ["read_file", "ReadFile"]) is None


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("reed_file", "read_file", id="typo"),
        pytest.param("listFile", "list_files", id="camel-typo"),
        pytest.param("Read-File", "read_file", id="resolvable"),
        pytest.param("launch_rocket", None, id="nothing-close"),
    ],
)
def test_suggest_tool_name_offers_the_closest_real_name(name: str, expected: str | None) -> None:
    assert suggest_tool_name(name, TOOLS) == expected


@pytest.mark.parametrize("close", ["◁/THINK▷", "</think>", "[/THINK]"])
@pytest.mark.parametrize(
    "render",
    [
        lambda v: (
            f'<｜DSML｜function_calls><｜DSML｜invoke name="write_file"><｜DSML｜parameter name="path" string="true">{v}</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜function_calls>'
        ),
        lambda v: (
            f'<function_calls>\n<invoke name="write_file">\n<parameter name="path">{v}</parameter>\n</invoke>\n</function_calls>'
        ),
        lambda v: f"<tool_call>\n<function=write_file>\n<parameter=path>\n{v}\n</parameter>\n</function>\n</tool_call>",
    ],
)
def test_a_reasoning_close_inside_an_element_calls_argument_is_the_arguments_text(render, close: str) -> None:
    """A close marker with no open before it is the end of a template-opened channel, unless a
    call's element opens before it: then it is part of an argument (found by the property tests)."""
    [call] = parse_tool_calls(render(close), ["write_file"])
    assert call.name == "write_file" and call.arguments == {"path": close}
