"""The operator's pins: each approved MCP tool's SHA-256 (of its name, description and input
schema, agent/tools/mcp/client.py's `digest`) in the audit's `mcp_pins`, with who and when.

A tool a server lists now is, against the pins and the server's file:
    approved    pinned, and the same now: offered to runs (risk from the file)
    changed     pinned, but its description or schema is not what was approved: not offered
    new         never approved: not offered
    withheld    the file says `offered = false`: not offered, approved or not
    clash       its name as a run's tool (`<server>__<tool>`, made to hearth's rules) is another of
                the server's tools' too: neither is offered, nor may be approved
and a pinned tool the server no longer lists is `removed`.

A change a run found (its `mcp` step with the verdict `drift`) is known from then on: before a
server is started, a pinned tool a run found changed after its approval is `changed` too, so later
runs are not offered it, until the operator approves it again (`drifts`)."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from dataclasses import dataclass

from agent.tools.mcp.client import ToolInfo
from agent.tools.mcp.tools import digest, tool_name
from hearth.audit import pins as pin_rows
from hearth.audit import steps as step_rows
from hearth.audit.store import AuditStore, Rows
from hearth.mcp.config import ServerConfig

APPROVED, CHANGED, NEW, WITHHELD, REMOVED, CLASH = "approved", "changed", "new", "withheld", "removed", "clash"


@dataclass(frozen=True)
class Pin:
    server: str
    tool: str
    sha256: str
    approved_by: str
    approved_at: str
    description: str = ""  # as approved: what a run offers the model before the server starts
    schema: str = "{}"

    def info(self) -> ToolInfo:
        """The tool as the operator approved it."""
        try:
            schema = json.loads(self.schema)
        except ValueError:
            schema = {}
        return ToolInfo(self.tool, self.description, schema if isinstance(schema, dict) else {}, {})


@dataclass(frozen=True)
class ToolState:
    tool: str
    state: str
    risk: str
    sha256: str  # what the server lists now ("" for a removed tool, or a change known from an older step)
    pin: Pin | None
    drift: Drift | None = None  # a change a run found, when the server was not listed here

    def reason(self, server: str) -> str:
        """Why a tool is not offered, as one line (for the run's `mcp` step and `hearth mcp list`)."""
        if self.state == CHANGED and self.pin is not None:
            found = f"run {self.drift.run_id} found " if self.drift else ""
            now = f", now {self.sha256[:12]}" if self.sha256 else ""
            return (
                f"{server}__{self.tool}: {found}its description or input schema changed since {self.pin.approved_by} "
                f"approved it at {self.pin.approved_at} (pinned {self.pin.sha256[:12]}{now}); "
                f"review it: hearth mcp review {server}, then approve it again"
            )
        if self.state == NEW:
            return f"{server}__{self.tool}: not approved yet; hearth mcp approve {server} {self.tool}"
        if self.state == WITHHELD:
            return f"{server}__{self.tool}: offered = false in the server's file"
        if self.state == CLASH:
            return f"{tool_name(server, self.tool)}: another tool of {server} has the same name once made a tool name; neither is offered"
        if self.state == REMOVED:
            return f"{server}__{self.tool}: approved, but the server no longer lists it"
        return f"{server}__{self.tool}: approved"


def pin(audit: AuditStore, server: str, info: ToolInfo, by: str) -> Pin:
    """Approve one tool as the server lists it now (a second approval replaces the first)."""
    row = {
        "server": server,
        "tool": info.name,
        "sha256": digest(info),
        "description": info.description,
        "schema": json.dumps(info.schema, sort_keys=True, ensure_ascii=False),
        "approved_by": by,
        "approved_at": audit.clock(),
    }
    pin_rows.save(audit, row)
    return Pin(server, info.name, row["sha256"], by, row["approved_at"], info.description, row["schema"])


def pins(db: Rows, server: str) -> dict[str, Pin]:
    """The server's pins, read through the audit or the command center's reader."""
    return {r["tool"]: Pin(**{k: r[k] for k in Pin.__dataclass_fields__}) for r in pin_rows.of_server(db, server)}


@dataclass(frozen=True)
class Drift:
    """A run found a pinned tool changed: which run, when, why (the run's line) and, for steps
    recorded since it was kept, the SHA-256 of what the server listed then."""

    run_id: str
    at: str
    tool: str  # the tool as a run is offered it: `<server>__<tool>`
    why: str
    sha256: str = ""


def drift_found(db: Rows, server: str, since: str = "", limit: int = 500) -> list[Drift]:
    """The changes runs found in the server's tools after `since`, newest first (one per run and tool)."""
    found = []
    for step in step_rows.mcp_drift(db, limit, since):
        try:
            detail = json.loads(step["detail"] or "{}")
        except ValueError:
            continue
        if not isinstance(detail, dict) or detail.get("server") != server:
            continue
        for refused in detail.get("refused") or []:
            if isinstance(refused, dict) and refused.get("state") == CHANGED:
                drift = Drift(step["run_id"], step["at"], str(refused.get("tool")), str(refused.get("why")))
                found.append(dataclasses.replace(drift, sha256=str(refused.get("sha256") or "")))
    return found


def drifts(db: Rows, config: ServerConfig, pinned: dict[str, Pin]) -> dict[str, Drift]:
    """The latest change a run found in each pinned tool after its approval, by tool name (approving
    the tool again forgets it)."""
    if not pinned:
        return {}
    by_name = {tool_name(config.name, tool): tool for tool in pinned}
    known: dict[str, Drift] = {}
    for drift in drift_found(db, config.name, min(p.approved_at for p in pinned.values())):
        tool = by_name.get(drift.tool)
        if tool is not None and drift.at > pinned[tool].approved_at:
            known.setdefault(tool, drift)
    return known


def pinned_states(
    config: ServerConfig, pinned: dict[str, Pin], drifted: dict[str, Drift] | None = None
) -> list[ToolState]:
    """Each pinned tool's state before the server is started (a run's start): approved, unless the
    file withholds it, its name clashes with another pinned tool's, or a run found it `drifted`."""
    named = Counter(tool_name(config.name, tool) for tool in pinned)
    drifted = drifted or {}
    out = []
    for tool, p in pinned.items():
        rule = config.rule(tool)
        state = CLASH if named[tool_name(config.name, tool)] > 1 else APPROVED if rule.offered else WITHHELD
        if state == APPROVED and tool in drifted:
            out.append(ToolState(tool, CHANGED, rule.risk, drifted[tool].sha256, p, drifted[tool]))
        else:
            out.append(ToolState(tool, state, rule.risk, p.sha256, p))
    return out


def states(config: ServerConfig, listed: list[ToolInfo], pinned: dict[str, Pin]) -> list[ToolState]:
    """Each listed tool's state, then each pinned tool the server no longer lists."""
    out = []
    named = Counter(tool_name(config.name, info.name) for info in listed)
    for info in listed:
        rule, now, approved = config.rule(info.name), digest(info), pinned.get(info.name)
        if named[tool_name(config.name, info.name)] > 1:
            state = CLASH
        elif not rule.offered:
            state = WITHHELD
        elif approved is None:
            state = NEW
        else:
            state = APPROVED if approved.sha256 == now else CHANGED
        out.append(ToolState(info.name, state, rule.risk, now, approved))
    names = {info.name for info in listed}
    out += [ToolState(t, REMOVED, config.rule(t).risk, "", p) for t, p in pinned.items() if t not in names]
    return out
