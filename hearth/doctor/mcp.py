"""The declared MCP servers: each file reads, and each server with approved tools starts and
lists them as they were approved (a tool changed since is drift, which runs do not offer)."""

from __future__ import annotations

from hearth.doctor.finding import Finding
from hearth.errors import HearthError
from hearth.settings import Settings


def check_mcp(settings: Settings) -> list[Finding]:
    from hearth.audit.store import AuditStore
    from hearth.mcp.config import load_servers
    from hearth.mcp.pins import APPROVED, CHANGED, pins
    from hearth.mcp.review import inspect

    try:
        servers = load_servers(settings.config_dir)
    except HearthError as exc:
        return [Finding("mcp", "error", f"{exc}; runs get no MCP tools")]
    if not servers:
        return []
    found: list[Finding] = []
    with AuditStore(settings.audit_path if settings.audit_path.exists() else ":memory:") as audit:
        for config in servers:
            where = str(config.path)
            if not pins(audit, config.name):
                found.append(
                    Finding("mcp", "info", f"{config.name}: no tool approved; hearth mcp review {config.name}", where)
                )
                continue
            seen = inspect(config, settings, audit)
            if seen.error:
                found.append(Finding("mcp", "warn", f"{seen.error}; runs get none of its tools", where))
                continue
            drift = [t for t in seen.states if t.state == CHANGED]
            found += [Finding("mcp", "warn", f"drift: {t.reason(config.name)}", where) for t in drift]
            offered = sum(t.state == APPROVED for t in seen.states)
            found.append(Finding("mcp", "ok", f"{config.name}: {offered} approved tools as approved", where))
    return found
