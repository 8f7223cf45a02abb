"""One symlink rule for every file tool: a symlink that stays inside the workspace is followed, for
reads and writes alike, as if its target's path had been given (agent/safety/workspace.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agent.safety.workspace import Workspace
from agent.tools.gate import call_tool


def tree(root: Path) -> None:
    (root / "dir").mkdir()
    (root / "real.txt").write_text("hello VALUE\n")
    (root / "dir" / "inner.txt").write_text("inner VALUE\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (root / "link.txt").symlink_to("real.txt")
    (root / "dlink").symlink_to("dir")
    (root / "gitlink").symlink_to(".git/config")
    (root / "dangling").symlink_to("missing.txt")


Check = Callable[[Path, str], bool]

FOLLOWED: dict[str, tuple[str, dict[str, object], Check]] = {
    "read_file": ("read_file", {"path": "link.txt"}, lambda r, out: out.startswith("hello VALUE")),
    "read_file paged": ("read_file", {"path": "link.txt", "start_line": 1}, lambda r, out: "hello VALUE" in out),
    "list_files": ("list_files", {"path": "dlink"}, lambda r, out: "inner.txt" in out),
    "list_tree": ("list_tree", {"path": "dlink"}, lambda r, out: "inner.txt" in out),
    "search_files in a file": (
        "search_files",
        {"pattern": "VALUE", "path": "link.txt"},
        lambda r, out: out.startswith("link.txt:1: hello VALUE"),
    ),
    "search_files in a directory": (
        "search_files",
        {"pattern": "VALUE", "path": "dlink"},
        lambda r, out: out.startswith("dlink/inner.txt:1: inner VALUE"),
    ),
    "edit_file": (
        "edit_file",
        {"path": "link.txt", "old_text": "hello", "new_text": "bye"},
        lambda r, out: (r / "real.txt").read_text() == "bye VALUE\n",
    ),
    "write_file": (
        "write_file",
        {"path": "link.txt", "content": "new\n"},
        lambda r, out: (r / "real.txt").read_text() == "new\n",
    ),
    "write_file under a linked directory": (
        "write_file",
        {"path": "dlink/new.txt", "content": "new\n"},
        lambda r, out: (r / "dir" / "new.txt").read_text() == "new\n",
    ),
    "replace_in_files on a file": (
        "replace_in_files",
        {"path": "link.txt", "old_text": "hello", "new_text": "bye"},
        lambda r, out: (r / "real.txt").read_text() == "bye VALUE\n",
    ),
    "replace_in_files under a linked directory": (
        "replace_in_files",
        {"path": "dlink", "old_text": "inner", "new_text": "outer"},
        lambda r, out: (r / "dir" / "inner.txt").read_text() == "outer VALUE\n",
    ),
}


@pytest.mark.parametrize(("tool", "args", "check"), FOLLOWED.values(), ids=FOLLOWED.keys())
def test_every_file_tool_follows_a_symlink_that_stays_inside(
    tmp_path: Path, tool: str, args: dict[str, object], check: Check
) -> None:
    tree(tmp_path)
    with Workspace(tmp_path) as ws:
        result = call_tool(tool, args, ws, mode="bypass")
    assert result.ok, result.output
    assert check(tmp_path, result.output), result.output
    assert (tmp_path / "link.txt").is_symlink() and (tmp_path / "dlink").is_symlink()  # the links stay links


WRITES = {
    "write_file": ("write_file", {"content": "x"}),
    "edit_file": ("edit_file", {"old_text": "[core]", "new_text": "[x]"}),
    "replace_in_files": ("replace_in_files", {"old_text": "[core]", "new_text": "[x]"}),
}


@pytest.mark.parametrize(("tool", "args"), WRITES.values(), ids=WRITES.keys())
def test_a_write_through_an_inside_symlink_still_obeys_the_targets_write_rules(
    tmp_path: Path, tool: str, args: dict[str, object]
) -> None:
    tree(tmp_path)
    with Workspace(tmp_path) as ws:
        to_git = call_tool(tool, {**args, "path": "gitlink"}, ws, mode="bypass")
        dangling = call_tool("write_file", {"path": "dangling", "content": "x"}, ws, mode="bypass")
    assert not to_git.ok and (tmp_path / ".git" / "config").read_text() == "[core]\n"
    assert "path '.git/config' is inside a .git directory; file tools never write git's data" in to_git.output
    assert not dangling.ok and "does not exist; nothing is created through it" in dangling.output
    assert not (tmp_path / "missing.txt").exists()
