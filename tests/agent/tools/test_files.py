"""The file, tree, search and edit tools through call_tool, on real directories; bad input changes nothing."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.safety.workspace import Workspace
from agent.tools import search
from agent.tools.args import MAX_SCANNED_FILES
from agent.tools.gate import call_tool
from agent.tools.registry import ToolResult


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "app.py").write_text("import os\n\ndef one():\n    return 1\n\ndef two():\n    return 1\n")
    (root / "src" / "pkg" / "util.py").write_text("VALUE = 1\n")
    (root / "README.md").write_text("# Demo\nreturn 1 is documented here\n")
    with Workspace(root) as workspace:
        yield workspace


def call(ws: Workspace, name: str, **args: object) -> ToolResult:
    return call_tool(name, args, ws, mode="bypass")


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# --- read, list, tree ----------------------------------------------------------------------------


def test_read_file_cuts_at_max_bytes_and_says_so(ws: Workspace) -> None:
    (ws.root / "big.txt").write_text("x" * 5000)
    result = call(ws, "read_file", path="big.txt", max_bytes=100)
    assert result.ok and result.output.startswith("x" * 100)
    assert "[read_file: cut at 100 bytes of 5000; pass max_bytes to read more]" in result.output


def test_list_tree_is_indented_and_skips_vcs_dependency_and_build_dirs(ws: Workspace) -> None:
    for skipped in (".git/objects", "node_modules/left-pad", "__pycache__", ".venv/lib", "build/lib", "dist"):
        (ws.root / skipped).mkdir(parents=True)
        (ws.root / skipped / "f").write_text("x")
    (ws.root / "link").symlink_to("src")
    result = call(ws, "list_tree")
    assert result.ok
    assert result.output.splitlines() == [
        "./",
        "  .git/ (not listed)",
        "  .venv/ (not listed)",
        "  README.md",
        "  __pycache__/ (not listed)",
        "  build/ (not listed)",
        "  dist/ (not listed)",
        "  link@",
        "  node_modules/ (not listed)",
        "  src/",
        "    app.py",
        "    pkg/",
        "      util.py",
    ]


def test_list_tree_depth_and_entry_caps_are_reported(ws: Workspace) -> None:
    shallow = call(ws, "list_tree", max_depth=1).output
    assert "    app.py" not in shallow and "deeper than max_depth=1" in shallow
    (ws.root / "many").mkdir()
    for i in range(500):
        (ws.root / "many" / f"f{i:03}").write_text("")
    crowded = call(ws, "list_tree").output
    assert "stopped at 400 entries" in crowded and len(crowded.splitlines()) == 402
    assert not call(ws, "list_tree", max_depth=0).ok


# --- search --------------------------------------------------------------------------------------


def test_search_files_reports_path_line_and_text(ws: Workspace) -> None:
    result = call(ws, "search_files", pattern="return 1")
    assert result.ok
    assert result.output.splitlines() == [
        "README.md:2: return 1 is documented here",
        "src/app.py:4: return 1",
        "src/app.py:7: return 1",
    ]


def test_search_files_regex_glob_case_and_path(ws: Workspace) -> None:
    assert call(ws, "search_files", pattern=r"def \w+\(", regex=True).output.splitlines() == [
        "src/app.py:3: def one():",
        "src/app.py:6: def two():",
    ]
    assert call(ws, "search_files", pattern="RETURN", ignore_case=True, glob="*.md").output.splitlines() == [
        "README.md:2: return 1 is documented here"
    ]
    assert call(ws, "search_files", pattern="VALUE", path="src/pkg").output == "src/pkg/util.py:1: VALUE = 1"
    assert call(ws, "search_files", pattern="one(", regex=False).output == "src/app.py:3: def one():"
    assert call(ws, "search_files", pattern="((").output == "no matches for '((' under . (3 files searched)"


def test_search_files_skips_binary_and_skip_dirs_and_caps_results(ws: Workspace) -> None:
    (ws.root / "blob.bin").write_bytes(b"\0\1return 1")
    (ws.root / "node_modules").mkdir()
    (ws.root / "node_modules" / "dep.js").write_text("return 1")
    result = call(ws, "search_files", pattern="return", max_results=2)
    assert result.output.splitlines() == [
        "README.md:2: return 1 is documented here",
        "src/app.py:4: return 1",
        "[search_files: stopped at 2 matches; narrow the pattern, path or glob]",
        "[search_files: 1 file(s) skipped: binary]",
    ]


def test_search_files_stops_after_as_many_files_as_replace_in_files_and_says_so(ws: Workspace) -> None:
    many = ws.root / "many"
    many.mkdir()
    for n in range(MAX_SCANNED_FILES + 1):
        (many / f"{n:05}.txt").write_text("nothing here\n")
    result = call(ws, "search_files", pattern="needle", path="many")
    assert result.ok
    assert result.output.splitlines() == [
        f"no matches for 'needle' under many ({MAX_SCANNED_FILES} files searched)",
        f"[search_files: stopped after {MAX_SCANNED_FILES} files; narrow the path or glob]",
    ]
    refused = call(ws, "replace_in_files", old_text="nothing", new_text="x", path="many")
    assert f"more than {MAX_SCANNED_FILES} files" in refused.output


def test_a_runaway_regex_is_stopped_by_the_time_bound(ws: Workspace) -> None:
    # (a+)+$ no longer backtracks at all (the regex package sees through it); (a|aa)+$ still does
    (ws.root / "evil.txt").write_text("a" * 60 + "b\n")
    result = call(ws, "search_files", pattern="(a|aa)+$", regex=True)
    assert result.ok
    assert result.output.endswith(
        f"[search_files: stopped: the regular expression used up its {search.REGEX_SECONDS:g}s; simplify the pattern]"
    )
    # that it stopped is the contract; how soon is the regex package's timeout (no clock here: a
    # loaded machine stretches any bound a test could set)
    assert search.REGEX_SECONDS <= 2


def test_an_invalid_regex_is_a_one_line_error(ws: Workspace) -> None:
    result = call(ws, "search_files", pattern="(unclosed", regex=True)
    assert not result.ok and "\n" not in result.output
    assert "not a valid regular expression" in result.output


# --- edit_file -----------------------------------------------------------------------------------


def test_edit_file_replaces_the_only_match(ws: Workspace) -> None:
    result = call(ws, "edit_file", path="src/pkg/util.py", old_text="VALUE = 1", new_text="VALUE = 2")
    assert result.ok and result.output == "edited src/pkg/util.py: replaced 1 occurrence (first at line 1)"
    assert (ws.root / "src/pkg/util.py").read_text() == "VALUE = 2\n"


def test_edit_file_refuses_an_ambiguous_first_match_and_changes_nothing(ws: Workspace) -> None:
    before = snapshot(ws.root)
    result = call(ws, "edit_file", path="src/app.py", old_text="return 1", new_text="return 2")
    assert not result.ok
    assert "occurs 2 times in src/app.py (lines 4, 7)" in result.output and "replace_all=true" in result.output
    assert snapshot(ws.root) == before


def test_an_ambiguous_edit_names_the_first_lines_in_one_pass_however_many_matches(ws: Workspace) -> None:
    (ws.root / "twice.txt").write_text("ab ab\n\nab\n")
    assert (
        "occurs 3 times in twice.txt (lines 1, 1, 3);"
        in call(ws, "edit_file", path="twice.txt", old_text="ab", new_text="c").output
    )
    # 900 KB and 300,000 matches: counting each match's line from the start was minutes of CPU
    (ws.root / "big.txt").write_text("ab\n" * 300_000)
    result = call(ws, "edit_file", path="big.txt", old_text="ab", new_text="c")
    lines = ", ".join(str(n) for n in range(1, 21))
    assert result.output == (
        f"Error: old_text occurs 300000 times in big.txt (lines {lines} and 299980 more); include more of the "
        "surrounding text to pick one, or pass replace_all=true"
    )
    assert (ws.root / "big.txt").read_text() == "ab\n" * 300_000


def test_edit_file_replace_all(ws: Workspace) -> None:
    result = call(ws, "edit_file", path="src/app.py", old_text="return 1", new_text="return 2", replace_all=True)
    assert result.output == "edited src/app.py: replaced 2 occurrences (first at line 4)"
    assert (ws.root / "src/app.py").read_text().count("return 2") == 2


def test_edit_file_absent_text_points_to_a_near_miss(ws: Workspace) -> None:
    before = snapshot(ws.root)
    near = call(ws, "edit_file", path="src/app.py", old_text="def one():\n  return 1", new_text="x")
    assert "matches with different whitespace at line 3" in near.output
    absent = call(ws, "edit_file", path="src/app.py", old_text="nowhere", new_text="x")
    assert (
        absent.output == "Error: old_text was not found in src/app.py; read the file and copy the exact text to replace"
    )
    assert snapshot(ws.root) == before


def test_edit_file_keeps_crlf_endings_and_the_file_mode(ws: Workspace) -> None:
    path = ws.root / "win.txt"
    path.write_bytes(b"a = 1\r\nb = 2\r\n")
    path.chmod(0o751)
    assert call(ws, "edit_file", path="win.txt", old_text="a = 1\nb = 2", new_text="a = 3\nb = 4").ok
    assert path.read_bytes() == b"a = 3\r\nb = 4\r\n"
    assert path.stat().st_mode & 0o777 == 0o751


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"\x7fELF\0\0\0", "is a binary file"),
        (b"caf\xe9 latin-1\n", "is not UTF-8 text (bad byte at offset 3)"),
    ],
)
def test_edit_tools_refuse_binary_and_non_utf8_files(ws: Workspace, content: bytes, reason: str) -> None:
    (ws.root / "odd").write_bytes(content)
    result = call(ws, "edit_file", path="odd", old_text="caf", new_text="x")
    assert not result.ok and reason in result.output and "\n" not in result.output
    assert (ws.root / "odd").read_bytes() == content


# --- replace_in_files ----------------------------------------------------------------------------


def test_replace_in_files_reports_each_file_changed(ws: Workspace) -> None:
    result = call(ws, "replace_in_files", old_text="return 1", new_text="return 42")
    assert result.ok
    assert result.output.splitlines() == ["replaced 3 occurrences in 2 files:", "  README.md: 1", "  src/app.py: 2"]
    assert "return 1" not in (ws.root / "src/app.py").read_text()


def test_replace_in_files_honours_path_and_glob(ws: Workspace) -> None:
    result = call(ws, "replace_in_files", old_text="return 1", new_text="return 0", path="src", glob="*.py")
    assert result.output.splitlines() == ["replaced 2 occurrences in 1 file:", "  src/app.py: 2"]
    assert "return 1" in (ws.root / "README.md").read_text()


def test_replace_in_files_changes_nothing_when_one_target_cannot_be_written(ws: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("return 1 outside\n")
    os.link(outside, ws.root / "src" / "zz_linked.txt")  # a hard link: never written through
    before = snapshot(ws.root)
    result = call(ws, "replace_in_files", old_text="return 1", new_text="return 7")
    assert not result.ok and "hard links" in result.output and "nothing changed" in result.output
    assert snapshot(ws.root) == before and outside.read_text() == "return 1 outside\n"


def test_replace_in_files_with_no_match_is_an_error(ws: Workspace) -> None:
    result = call(ws, "replace_in_files", old_text="absent text", new_text="x")
    assert not result.ok and "no file under . contains old_text (3 files searched)" in result.output


# --- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "args", "reason"),
    [
        (
            "write_file",
            {"path": ["a"], "content": "x"},
            """argument 'path' of write_file must be text in quotes, such as "notes.txt"; you sent ["a"]""",
        ),
        ("write_file", {"path": "a"}, "write_file needs argument 'content'"),
        ("write_file", {"path": "a", "content": "x", "mode": "w"}, "write_file has no argument 'mode'"),
        ("write_file", {"path": "a", "content": "x" * 1_000_001}, "is 1000001 characters long; the limit is 1000000"),
        ("write_file", {"path": "a", "content": "bin\0ary"}, "contains a NUL byte"),
        ("write_file", "not an object", "must be a JSON object of named values; you sent 'not an object'"),
        ("edit_file", {"path": "src/app.py", "old_text": "", "new_text": "x"}, "old_text is empty"),
        ("edit_file", {"path": "src/app.py", "old_text": "5", "new_text": {}}, "must be text in quotes"),
        ("edit_file", {"path": "missing.py", "old_text": "a", "new_text": "b"}, "file not found: missing.py"),
        ("edit_file", {"path": "src", "old_text": "a", "new_text": "b"}, "src is a directory"),
        ("replace_in_files", {"old_text": "same", "new_text": "same"}, "nothing would change"),
        (
            "read_file",
            {"path": "src/app.py", "max_bytes": "lots"},
            "must be a whole number such as 10; you sent 'lots', or leave max_bytes out",
        ),
        ("read_file", {"path": "src/app.py", "max_bytes": 0}, "max_bytes must be between 1 and 1000000"),
        ("search_files", {"pattern": ""}, "pattern is empty"),
        ("search_files", {"pattern": "x" * 1001}, "the limit is 1000"),
        ("list_files", {"path": "src/app.py"}, "src/app.py is not a directory"),
        ("run_command", {"command": "x" * 70_000}, "the limit is 65536"),
    ],
)
def test_bad_input_is_a_one_line_error_and_changes_nothing(ws: Workspace, name: str, args: object, reason: str) -> None:
    before = snapshot(ws.root)
    result = call_tool(name, args, ws, mode="bypass")
    assert not result.ok and result.output.startswith("Error: ")
    assert reason in result.output and "\n" not in result.output
    assert snapshot(ws.root) == before


@pytest.mark.parametrize("nothing", [None, "null", "None", "NoneType", ""])
def test_an_optional_argument_given_as_null_is_taken_as_not_given(ws: Workspace, nothing: object) -> None:
    """Small models fill every optional argument, with null or a word for it, when they mean "not given"."""
    result = call_tool(
        "read_file", {"path": "src/app.py", "max_bytes": nothing, "start_line": nothing}, ws, mode="bypass"
    )
    assert result.ok and "def one():" in result.output


@pytest.mark.parametrize(
    ("args", "given"),
    [
        ({"path": "src/app.py", "max_bytes": "str"}, "'str'"),
        ({"path": "src/app.py", "max_bytes": True}, "true"),
        ({"path": "src/app.py", "max_bytes": [1]}, "[1]"),
        ({"path": 3.5}, None),
    ],
)
def test_a_wrong_value_is_refused_in_words_a_model_can_act_on_never_a_type_name(
    ws: Workspace, args: dict[str, object], given: str | None
) -> None:
    result = call_tool("read_file", args, ws, mode="bypass")
    assert not result.ok
    for name in ("NoneType", "str,", "got str", "got int", "got bool", "got list", "dict"):
        assert name not in result.output
    if given is not None:
        assert f"you sent {given}, or leave max_bytes out" in result.output


def test_absurd_arguments_and_names_are_one_line_errors(ws: Workspace) -> None:
    deep: list[object] = []
    for _ in range(50_000):
        deep = [deep]
    nested = call_tool("read_file", {"path": deep}, ws, mode="bypass")
    assert nested.output == "Error: arguments of read_file are nested too deeply; give flat values as its schema says"
    named = call_tool("x" * 1_000_000, {}, ws, mode="bypass")
    assert named.verdict == "unknown" and len(named.output) < 400 and "\n" not in named.output


def test_a_binary_file_is_not_read_as_text(ws: Workspace) -> None:
    (ws.root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    result = call(ws, "read_file", path="image.png")
    assert result.output == "Error: path 'image.png' is a binary file"


def test_a_symlink_to_a_directory_inside_is_listed_and_searched(ws: Workspace) -> None:
    (ws.root / "alias").symlink_to("src")
    assert call(ws, "list_files", path="alias").output.startswith("app.py")
    assert "  pkg/" in call(ws, "list_tree", path="alias").output
    assert call(ws, "search_files", pattern="VALUE", path="alias").output == "alias/pkg/util.py:1: VALUE = 1"


LONG_PATHS = {
    "one-name": "a" * 4001,
    "long-name": "d/" + "x" * 3999,
    "deep": "a/" * 2000 + "b",
    "long-names": "/".join(["x" * 250] * 16),  # a file system takes it: written, but never found to read
}
PATH_CALLS = {
    "read_file": {},
    "read_file-paged": {"start_line": 2},
    "list_files": {},
    "list_tree": {},
    "search_files": {"pattern": "x"},
    "edit_file": {"old_text": "a", "new_text": "b"},
    "write_file": {"content": "x"},
}


@pytest.mark.parametrize(
    ("call_name", "shape"),
    [(c, p) for c in PATH_CALLS for p in LONG_PATHS if (c, p) != ("write_file", "long-names")],
)
def test_a_refusal_of_a_4001_character_path_is_at_most_500_characters(
    ws: Workspace, call_name: str, shape: str
) -> None:
    path = LONG_PATHS[shape]
    result = call_tool(call_name.split("-")[0], {"path": path, **PATH_CALLS[call_name]}, ws, mode="bypass")
    assert not result.ok and result.output.startswith("Error: ")
    assert len(result.output) <= 500 and "\n" not in result.output
    assert f"{len(path)} characters" in result.output


def test_write_file_on_a_2000_deep_path_is_refused_saying_how_deep_and_creates_nothing(ws: Workspace) -> None:
    before = sorted(p.name for p in ws.root.iterdir())
    result = call(ws, "write_file", path="a/" * 2000 + "f", content="x")
    assert not result.ok and "2001 levels deep" in result.output and "RecursionError" not in result.output
    assert sorted(p.name for p in ws.root.iterdir()) == before


# --- a write that cannot be what its name says ------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "content", "said"),
    [
        ("hello.py", "Hello, world!", "Warning: hello.py is not valid Python: line 1: invalid syntax"),
        ("conf.json", '{"port": 80,}', "Warning: conf.json is not valid JSON: line 1, column"),
        ("conf.toml", "port = ", "Warning: conf.toml is not valid TOML"),
        ("run.sh", "if true; then echo hi\n", "Warning: run.sh is not valid shell"),
        ("script", "#!/bin/bash\nfor x in; do\n", "Warning: script is not valid shell"),
    ],
)
def test_a_write_that_cannot_be_what_its_name_says_is_written_and_warned_about(
    ws: Workspace, path: str, content: str, said: str
) -> None:
    result = call(ws, "write_file", path=path, content=content)
    assert result.ok and result.output.startswith(f"wrote {len(content)} bytes to {path}\n")
    assert said in result.output and "fix it with edit_file, or write it again" in result.output
    assert (ws.root / path).read_text() == content  # the write stands


@pytest.mark.parametrize(
    ("path", "content"),
    [
        ("hello.py", "print('hello')\n"),
        ("conf.json", '{"port": 80}'),
        ("conf.toml", "port = 80\n"),
        ("run.sh", "echo hi\n"),
        ("notes.md", "Hello, world! {not json"),
        ("data.yaml", "a: [1,"),
    ],
)
def test_a_write_that_is_what_its_name_says_or_of_a_kind_not_checked_says_only_that_it_wrote(
    ws: Workspace, path: str, content: str
) -> None:
    result = call(ws, "write_file", path=path, content=content)
    assert result.ok and result.output == f"wrote {len(content)} bytes to {path}"


def test_an_edit_that_breaks_a_python_file_is_warned_about(ws: Workspace) -> None:
    result = call(ws, "edit_file", path="src/app.py", old_text="def one():", new_text="def one(:")
    assert result.ok and "Warning: src/app.py is not valid Python: line 3" in result.output


def test_a_checked_write_runs_nothing_it_wrote(ws: Workspace, tmp_path: Path) -> None:
    """Python is only compiled and a script only read: what they would do never happens."""
    marker = tmp_path / "ran"
    call(ws, "write_file", path="evil.py", content=f"open({str(marker)!r}, 'w').write('x')\n")
    call(ws, "write_file", path="evil.sh", content=f"touch {marker}\n")
    assert not marker.exists()


def test_a_tool_that_does_not_exist_is_answered_with_what_each_tool_does(ws: Workspace) -> None:
    """A small model calls a tool named after its goal (set_web_server_port); the list says which one does it."""
    result = call_tool("set_web_server_port", {"old_port": 8080}, ws, mode="bypass", allowed=["read_file", "edit_file"])
    assert result.output == (
        "Error: no tool named 'set_web_server_port'; the tools are: edit_file (Replace exact text in a file "
        "(old_text must occur once)); read_file (Read a text file (a long one is cut; start_line pages on))"
    )
