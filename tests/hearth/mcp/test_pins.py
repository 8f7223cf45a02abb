"""A server's tools against the operator's pins: approved, changed, new, withheld, removed, and two
tools whose names collide once made hearth tool names (neither offered)."""

from __future__ import annotations

import json
from pathlib import Path

from agent.tools.mcp.client import ToolInfo
from agent.tools.mcp.tools import digest
from hearth.audit.store import AuditStore, RunRecord
from hearth.mcp.config import ServerConfig, ToolRule
from hearth.mcp.pins import Pin, drifts, pinned_states, states

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


def test_a_change_a_run_found_after_approval_makes_the_pinned_tool_changed_before_the_server_starts(
    tmp_path: Path,
) -> None:
    config = ServerConfig("srv", Path("srv.toml"), command="x")
    pins = {"echo": pinned(info("echo")), "other": pinned(info("other"))}  # approved 2026-12-01
    found = {"state": "changed", "why": "srv__echo: changed", "sha256": "f" * 64}

    def drift(run_id: str, at: str, server: str = "srv", tool: str = "srv__echo") -> None:
        detail = {"server": server, "verdict": "drift", "refused": [{**found, "tool": tool}]}
        audit.start_run(RunRecord(id=run_id, agent_name="a", model="m", goal="g", mode="auto"))
        audit.record_step(run_id, "mcp", at=at, verdict="drift", detail=json.dumps(detail))

    with AuditStore(tmp_path / "audit.db") as audit:
        drift("before", "2026-11-30T00:00:00.000Z")  # before the approval: history
        drift("elsewhere", "2026-12-02T00:00:00.000Z", server="another")
        assert drifts(audit, config, pins) == {}
        drift("finder", "2026-12-03T00:00:00.000Z")
        drift("later", "2026-12-04T00:00:00.000Z")
        known = drifts(audit, config, pins)
    assert list(known) == ["echo"] and known["echo"].run_id == "later" and known["echo"].sha256 == "f" * 64
    by_tool = {t.tool: t for t in pinned_states(config, pins, known)}
    assert by_tool["echo"].state == "changed" and by_tool["other"].state == "approved"
    assert by_tool["echo"].reason("srv").startswith("srv__echo: run later found its description or input schema")
    again = {"echo": Pin("srv", "echo", digest(info("echo")), "cli:ana", "2026-12-05T00:00:00Z")}
    with AuditStore(tmp_path / "audit.db") as audit:
        assert drifts(audit, config, again) == {}  # approved again: forgotten
