"""What the operator reviews of a declared server: it is started (in the sandbox, in an empty
scratch directory), its tools are listed and compared with the pins."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from agent.safety.sandbox import SandboxPolicy
from agent.tools.mcp.client import McpFailed, ToolInfo
from hearth.audit.store import AuditStore
from hearth.errors import UsageError
from hearth.mcp.config import ServerConfig, load_servers
from hearth.mcp.launch import connection
from hearth.mcp.pins import ToolState, pins, states
from hearth.settings import Settings

LIST_S = 30.0


@dataclass
class Inspection:
    config: ServerConfig
    tools: list[ToolInfo] = field(default_factory=list)
    states: list[ToolState] = field(default_factory=list)
    error: str = ""  # the server could not be listed: why, in one line


def review_policy(settings: Settings) -> SandboxPolicy:
    return SandboxPolicy(kind=settings.sandbox, hide=(str(settings.state_dir),), expose=settings.sandbox_expose)


def server_config(settings: Settings, name: str) -> ServerConfig:
    servers = {s.name: s for s in load_servers(settings.config_dir)}
    if name not in servers:
        where = settings.config_dir / "mcp"
        raise UsageError(f"no MCP server {name!r}; declared: {', '.join(servers) or 'none'} (add {where}/{name}.toml)")
    return servers[name]


def inspect(config: ServerConfig, settings: Settings, audit: AuditStore) -> Inspection:
    """Start the server, list its tools, compare them with the pins; the server is stopped after."""
    seen = Inspection(config)
    with tempfile.TemporaryDirectory(prefix=f"hearth-mcp-{config.name}-") as scratch:
        try:
            server = connection(config, settings, Path(scratch), review_policy(settings))
            try:
                seen.tools = server.tools(LIST_S)
            finally:
                server.close()
        except McpFailed as exc:
            seen.error = str(exc)
    seen.states = states(config, seen.tools, pins(audit, config.name)) if not seen.error else []
    return seen
