"""The delegate tool's own checks, before the appliance is asked: the directory named is a directory
inside the workspace (no escape, no link), and a run without delegation is not shown the tool."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.safety.workspace import Workspace
from agent.services import RunServices
from agent.tools.gate import call_tool, visible_tools


@pytest.fixture
def asked(tmp_path: Path) -> Iterator[tuple[Workspace, list[tuple[str, str, str]]]]:
    calls: list[tuple[str, str, str]] = []
    root = tmp_path / "ws"
    (root / "src" / "deep").mkdir(parents=True)
    (root / "notes.txt").write_text("a file")
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", root / "out")
    os.symlink(root / "src", root / "src-link")
    services = RunServices(delegate=lambda goal, profile, where: calls.append((goal, profile, where)) or "handed")
    with Workspace(root, services=services) as ws:
        yield ws, calls


def test_a_directory_inside_the_workspace_is_handed_on_as_a_workspace_path(asked: tuple) -> None:
    ws, calls = asked
    result = call_tool("delegate", {"goal": " sum it up ", "profile": "wide", "directory": "src/../src/deep"}, ws)
    assert result.ok and calls == [("sum it up", "wide", "src/deep")]
    assert result.output.startswith("<<data ")  # the child's words come back marked as data


@pytest.mark.parametrize(
    ("directory", "said"),
    [
        ("../outside", "outside the workspace"),
        ("/etc", "outside the workspace"),
        ("out", "is not a directory of your workspace"),  # a link out
        ("src-link", "is not a directory of your workspace"),  # a link, even to inside
        ("notes.txt", "is not a directory of your workspace"),
        ("missing", "is not a directory of your workspace"),
        ("out/x", "outside the workspace"),
    ],
)
def test_a_directory_that_is_not_one_of_the_workspace_is_refused_and_nothing_is_handed_on(
    asked: tuple, directory: str, said: str
) -> None:
    ws, calls = asked
    result = call_tool("delegate", {"goal": "sum it up", "directory": directory}, ws)
    assert not result.ok and said in result.output and calls == []


def test_a_blank_goal_is_refused(asked: tuple) -> None:
    ws, calls = asked
    result = call_tool("delegate", {"goal": "   "}, ws)
    assert not result.ok and "goal is empty" in result.output and calls == []


def test_a_run_without_delegation_is_not_shown_the_tool(tmp_path: Path) -> None:
    assert "delegate" not in {t.name for t in visible_tools(None, "bypass", RunServices())}
    with Workspace(tmp_path) as ws:
        result = call_tool("delegate", {"goal": "sum it up"}, ws)
    assert not result.ok and "not available to this run" in result.output
