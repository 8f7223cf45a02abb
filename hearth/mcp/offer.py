"""What a run is offered of the declared MCP servers: each approved tool as a `Tool`
(agent/tools/mcp/tools.py) with the operator's risk class; the gate does the rest as for every tool.

At run start no server is started: each tool is offered as the operator approved it (its pinned
name, description and schema, from the audit), less those the file withholds, and the run records
an `mcp` step per server saying what it was offered and what not. A server is started (in the
sandbox, the run's workspace its only writable path) when the model first calls one of its tools;
its tools are then listed and compared with the pins (hearth/mcp/pins.py), and a tool whose
description or schema changed since approval, or that the server no longer lists, is refused for
the rest of the run: a second `mcp` step says which and why, and a change is alerted (`mcp_drift`).
A change found is known from then on: later runs are not offered that tool until it is approved
again (hearth/mcp/pins.py's `drifts`), and their `mcp` step at start says so.
A server that does not start costs the run one tool error per call, and nothing else.
`Offered.close()` (when the run's services close, also when the run is stopped) stops every server
that was started, with its process group."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.net.guard import NetGuard
from agent.safety.sandbox import SandboxPolicy
from agent.tools.mcp.client import Connection, McpFailed, ToolInfo
from agent.tools.mcp.tools import mcp_tool, tool_name
from agent.tools.registry import Tool
from hearth.audit.store import AuditStore
from hearth.errors import HearthError
from hearth.leash import alerts
from hearth.mcp.config import ServerConfig, load_servers
from hearth.mcp.launch import connection
from hearth.mcp.pins import APPROVED, CHANGED, REMOVED, Drift, Pin, ToolState, drifts, pinned_states, pins, states
from hearth.settings import Settings

MCP = "mcp"  # the kind of the run's step about its MCP servers

Record = Callable[[str, dict[str, Any]], None]


@dataclass
class Offered:
    tools: list[Tool] = field(default_factory=list)
    connections: list[Connection] = field(default_factory=list)

    def close(self) -> None:
        for server in self.connections:
            server.close()


def offer(
    settings: Settings,
    workspace: Path,
    policy: SandboxPolicy | Callable[[], SandboxPolicy],
    record: Record | None,
    run_id: str = "",
    guard: NetGuard | None = None,
) -> Offered:
    """The run's MCP tools, their servers not started; every problem is recorded and costs only
    the tools it concerns."""
    note = record or (lambda kind, detail: None)
    offered = Offered()
    try:
        servers = load_servers(settings.config_dir)
    except HearthError as exc:
        note(MCP, {"verdict": "refused", "line": f"no MCP tools: {exc}"})
        return offered
    if not servers or not settings.audit_path.exists():
        return offered
    pinned, drifted = _pins_of(settings, servers)
    for config in servers:
        if not pinned[config.name]:
            continue  # nothing approved: nothing offered, and the server is never started
        found = pinned_states(config, pinned[config.name], drifted[config.name])
        approved = [t for t in found if t.state == APPROVED and t.pin is not None]
        try:
            server = connection(config, settings, workspace, policy, guard, record)
        except McpFailed as exc:
            note(MCP, {"server": config.name, "verdict": "failed", "offered": [], "line": f"no tools of it: {exc}"})
            continue
        server.pinned = {t.tool: t.sha256 for t in approved}
        # what the run offers is what its start compares (a change already known is not news)
        server.listed = Started(config, {t.tool: t.pin for t in approved if t.pin}, settings, note, run_id)
        offered.connections.append(server)
        tools = [mcp_tool(config.name, t.pin.info(), t.risk, server, config.timeout_s) for t in approved if t.pin]
        offered.tools += tools
        note(MCP, _offered(config.name, tools, [_refusal(config.name, t) for t in found if t.state != APPROVED]))
    return offered


def _pins_of(
    settings: Settings, servers: list[ServerConfig]
) -> tuple[dict[str, dict[str, Pin]], dict[str, dict[str, Drift]]]:
    """Each server's pinned tools, and what drifted from its pins, as the audit holds them."""
    with AuditStore(settings.audit_path) as audit:
        pinned = {s.name: pins(audit, s.name) for s in servers}
        drifted = {s.name: drifts(audit, s, pinned[s.name]) for s in servers}
    return pinned, drifted


def _offered(server: str, tools: list[Tool], refused: list[dict[str, str]]) -> dict[str, Any]:
    """The record of what one server's tools the run offers, and which it does not and why."""
    names = ", ".join(t.name for t in tools) or "none"
    line = f"{server}: offered {names} as approved (the server starts on first use)"
    line += "".join(f"; NOT offered: {r['why']}" for r in refused)
    return {"server": server, "verdict": "ok", "offered": [t.name for t in tools], "refused": refused, "line": line}


def _refusal(server: str, t: ToolState) -> dict[str, str]:
    return {"tool": tool_name(server, t.tool), "state": t.state, "why": t.reason(server), "sha256": t.sha256}


@dataclass
class Started:
    """What a run does when one of its servers starts and lists its tools (the connection's
    `listed` hook): the first start is recorded, a later one only when it finds a new change; a
    changed tool is alerted once (`mcp_drift`)."""

    config: ServerConfig
    pinned: dict[str, Pin]
    settings: Settings
    note: Record
    run_id: str
    reported: set[str] = field(default_factory=set)
    starts: int = 0

    def __call__(self, listing: list[ToolInfo]) -> None:
        self.starts += 1
        name = self.config.name
        found = [t for t in states(self.config, listing, self.pinned) if t.tool in self.pinned]
        gone = [t for t in found if t.state in (CHANGED, REMOVED) and t.tool not in self.reported]
        if self.starts > 1 and not gone:
            return
        self.reported |= {t.tool for t in gone}
        refused = [_refusal(name, t) for t in gone]
        drift = [r for r in refused if r["state"] == CHANGED]
        line = f"{name}: started; " + (
            "; ".join(f"refused for the rest of the run: {r['why']}" for r in refused) or "its tools are as approved"
        )
        verdict = "drift" if drift else "ok"
        self.note(MCP, {"server": name, "verdict": verdict, "started": True, "refused": refused, "line": line})
        if drift:
            alerts.mcp_drift(self.settings, self.run_id, name, [r["why"] for r in drift])
