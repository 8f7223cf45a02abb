"""What a run is offered of the declared MCP servers: each approved, unchanged tool as a `Tool`
(agent/tools/mcp/tools.py) with the operator's risk class; the gate does the rest as for every tool.

At run start each server with at least one pin is started (in the sandbox, the run's workspace its
only writable path) and its tools are compared with the pins (hearth/mcp/pins.py). A tool whose
description or schema changed since approval is not offered, nor a new or withheld one; the run
records an `mcp` step per server saying what it was offered and what not, and why. A server that
does not start costs the run its tools, recorded the same way, and nothing else. `Offered.close()`
(when the run's services close, also when the run is stopped) stops every server it started."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.safety.sandbox import SandboxPolicy
from agent.tools.mcp.client import Connection, McpFailed
from agent.tools.mcp.tools import mcp_tool, tool_name
from agent.tools.registry import Tool
from hearth.audit.store import AuditStore
from hearth.errors import HearthError
from hearth.leash import alerts
from hearth.mcp.config import load_servers
from hearth.mcp.launch import connection
from hearth.mcp.pins import APPROVED, CHANGED, pins, states
from hearth.settings import Settings

MCP = "mcp"  # the kind of the run's step about its MCP servers
LIST_S = 30.0

Record = Callable[[str, dict[str, Any]], None]


@dataclass
class Offered:
    tools: list[Tool] = field(default_factory=list)
    connections: list[Connection] = field(default_factory=list)

    def close(self) -> None:
        for server in self.connections:
            server.close()


def offer(
    settings: Settings, workspace: Path, policy: SandboxPolicy, record: Record | None, run_id: str = ""
) -> Offered:
    """The run's MCP tools; every problem is recorded and costs only the tools it concerns; a tool
    changed since its approval is alerted (`mcp_drift`)."""
    note = record or (lambda kind, detail: None)
    offered = Offered()
    try:
        servers = load_servers(settings.config_dir)
    except HearthError as exc:
        note(MCP, {"verdict": "refused", "line": f"no MCP tools: {exc}"})
        return offered
    if not servers or not settings.audit_path.exists():
        return offered
    with AuditStore(settings.audit_path) as audit:
        pinned = {s.name: pins(audit, s.name) for s in servers}
    for config in servers:
        if not pinned[config.name]:
            continue  # nothing approved: the server is not even started
        try:
            server = connection(config, settings, workspace, policy)
            offered.connections.append(server)
            listed = server.tools(LIST_S)
        except McpFailed as exc:
            note(MCP, {"server": config.name, "verdict": "failed", "offered": [], "line": f"no tools of it: {exc}"})
            continue
        found = states(config, listed, pinned[config.name])
        # a restart (after a hang or a crash) lists the tools again before it calls one
        server.pinned = {t.tool: t.sha256 for t in found if t.state == APPROVED}
        by_name = {info.name: info for info in listed}
        tools = [
            mcp_tool(config.name, by_name[t.tool], t.risk, server, config.timeout_s)
            for t in found
            if t.state == APPROVED
        ]
        offered.tools += tools
        refused = [
            {"tool": tool_name(config.name, t.tool), "state": t.state, "why": t.reason(config.name)}
            for t in found
            if t.state != APPROVED
        ]
        drift = [r for r in refused if r["state"] == CHANGED]
        names = ", ".join(t.name for t in tools) or "none"
        line = f"{config.name}: offered {names}" + "".join(f"; NOT offered: {r['why']}" for r in drift)
        others = len(refused) - len(drift)
        line += f"; {others} more not offered (not approved, withheld or removed)" if others else ""
        note(
            MCP,
            {
                "server": config.name,
                "verdict": "drift" if drift else "ok",
                "offered": [t.name for t in tools],
                "refused": refused,
                "line": line,
            },
        )
        if drift:
            alerts.mcp_drift(settings, run_id, config.name, [str(r["why"]) for r in drift])
    return offered
