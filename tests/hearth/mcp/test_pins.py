"""A server's tools against the operator's pins: approved, changed, new, withheld, removed, and two
tools whose names collide once made hearth tool names (neither offered)."""

from __future__ import annotations

from pathlib import Path

from agent.tools.mcp.client import ToolInfo
from agent.tools.mcp.tools import digest
from hearth.mcp.config import ServerConfig, ToolRule
from hearth.mcp.pins import Pin, states

SCHEMA = {"type": "object", "properties": {}}


def info(name: str, description: str = "Do it.") -> ToolInfo:
    return ToolInfo(name, description, SCHEMA, {})


def pinned(tool: ToolInfo) -> Pin:
    return Pin("srv", tool.name, digest(tool), "cli:ana", "2026-12-01T00:00:00Z")


def test_each_tool_gets_its_state_against_the_pins_and_the_file() -> None:
    config = ServerConfig("srv", Path("srv.toml"), command="x", tools={"quiet": ToolRule("safe", False)})
    listed = [info("same"), info("moved", "Do something else."), info("fresh"), info("quiet")]
    pins = {
        "same": pinned(info("same")),
        "moved": pinned(info("moved")),
        "quiet": pinned(info("quiet")),
        "gone": pinned(info("gone")),
    }
    found = {t.tool: t.state for t in states(config, listed, pins)}
    assert found == {
        "same": "approved",
        "moved": "changed",
        "fresh": "new",
        "quiet": "withheld",
        "gone": "removed",
    }


def test_two_tools_whose_names_collide_as_hearth_tool_names_are_neither_offered() -> None:
    config = ServerConfig("srv", Path("srv.toml"), command="x")
    listed = [info("get.item"), info("get item"), info("other")]
    found = {t.tool: t for t in states(config, listed, {t.name: pinned(t) for t in listed})}
    assert found["get.item"].state == found["get item"].state == "clash"
    assert found["other"].state == "approved"
    assert "srv__get_item: another tool of srv has the same name" in found["get.item"].reason("srv")
