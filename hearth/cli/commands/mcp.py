"""`hearth mcp list|review|approve`: the declared MCP servers, their tools, the operator's pins and drift."""

from __future__ import annotations

import argparse
import json
from typing import Any

from hearth.cli.commands import mcp_serve
from hearth.render import print_json, table, visible_line
from hearth.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("mcp", help="MCP tool servers ($HEARTH_CONFIG_DIR/mcp/*.toml): their tools, pins and drift")
    actions = p.add_subparsers(dest="mcp_action")
    mcp_serve.register(actions)  # `hearth mcp serve` (hearth as a server) lives in its own module
    listing = actions.add_parser("list", help="every server, its tools, their pins and drift")
    listing.add_argument("--json", action="store_true")
    review = actions.add_parser("review", help="start a server in the sandbox and show its tools as it lists them")
    review.add_argument("server")
    review.add_argument("--json", action="store_true")
    approve = actions.add_parser("approve", help="pin tools as the server lists them now (all when none is named)")
    approve.add_argument("server")
    approve.add_argument("tools", nargs="*", metavar="TOOL")
    approve.add_argument("--json", action="store_true")
    p.set_defaults(handler=mcp, json=False)


def mcp(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit.store import AuditStore

    action = args.mcp_action or "list"
    settings.writable_state_dir()
    with AuditStore(settings.audit_path) as audit:
        if action == "review":
            return _review(args, settings, audit)
        if action == "approve":
            return _approve(args, settings, audit)
        return _list(args, settings, audit)


def _list(args: argparse.Namespace, settings: Settings, audit: Any) -> int:
    from hearth.mcp.config import load_servers
    from hearth.mcp.review import inspect

    seen = [inspect(config, settings, audit) for config in load_servers(settings.config_dir)]
    if args.json:
        print_json([_as_json(s) for s in seen])
        return 0
    if not seen:
        print(f"no MCP servers (add {settings.config_dir / 'mcp'}/<server>.toml)")
        return 0
    for s in seen:
        print(visible_line(f"{s.config.name} ({s.config.transport}): {s.error or f'{len(s.tools)} tools'}"))
        rows = [_row(s.config.name, t) for t in s.states]
        if rows:
            table(rows, ["tool", "state", "risk", "approved_by", "approved_at"])
    return 0


def _review(args: argparse.Namespace, settings: Settings, audit: Any) -> int:
    from hearth.errors import HearthError
    from hearth.mcp.review import inspect, server_config

    seen = inspect(server_config(settings, args.server), settings, audit)
    if seen.error:
        raise HearthError(seen.error)
    if args.json:
        print_json(_as_json(seen))
        return 0
    state = {t.tool: t for t in seen.states}
    for info in seen.tools:  # everything a server wrote is shown escaped: it cannot move the cursor or forge a line
        print(visible_line(f"{args.server}__{info.name}  [{state[info.name].state}, {state[info.name].risk}]"))
        print("  description: " + "\n    ".join(visible_line(line) for line in info.description.split("\n")))
        print(f"  input schema: {json.dumps(info.schema, sort_keys=True)}")  # JSON's escapes: ASCII only
        if info.annotations:
            print(f"  annotations: {json.dumps(info.annotations, sort_keys=True)}")
    for t in seen.states:
        if t.state == "removed":
            print(visible_line(t.reason(args.server)))
    print(visible_line(f"approve with: hearth mcp approve {args.server} [TOOL...]"))
    return 0


def _approve(args: argparse.Namespace, settings: Settings, audit: Any) -> int:
    from hearth.audit.approvals import operator_name
    from hearth.errors import HearthError, UsageError
    from hearth.mcp.pins import pin
    from hearth.mcp.review import inspect, server_config

    seen = inspect(server_config(settings, args.server), settings, audit)
    if seen.error:
        raise HearthError(seen.error)
    listed = {t.name: t for t in seen.tools}
    unknown = [name for name in args.tools if name not in listed]
    if unknown:
        raise UsageError(f"{args.server} lists no tool {unknown[0]!r}; it lists: {', '.join(listed) or 'none'}")
    clashes = {t.tool: t for t in seen.states if t.state == "clash"}
    named = [name for name in args.tools if name in clashes]
    if named:
        raise UsageError(f"cannot approve {named[0]!r}: {clashes[named[0]].reason(args.server)}")
    chosen = args.tools or [name for name in listed if name not in clashes]
    by = f"cli:{operator_name()}"
    pinned = [pin(audit, args.server, listed[name], by) for name in chosen]
    if args.json:
        print_json(
            [
                {"tool": p.tool, "sha256": p.sha256, "approved_by": p.approved_by, "approved_at": p.approved_at}
                for p in pinned
            ]
        )
        return 0
    for p in pinned:
        print(visible_line(f"approved {args.server}__{p.tool} (sha256 {p.sha256[:12]}) as {p.approved_by}"))
    return 0


def _row(server: str, t: Any) -> dict[str, Any]:
    return {
        "tool": f"{server}__{t.tool}",
        "state": t.state,
        "risk": t.risk,
        "approved_by": t.pin.approved_by if t.pin else "",
        "approved_at": t.pin.approved_at if t.pin else "",
    }


def _as_json(seen: Any) -> dict[str, Any]:
    described = {t.name: t for t in seen.tools}
    tools = []
    for t in seen.states:
        info = described.get(t.tool)
        tools.append(
            {
                **_row(seen.config.name, t),
                "name": t.tool,
                "sha256": t.sha256,
                "pinned": t.pin.sha256 if t.pin else None,
                "drift": t.state == "changed",
                "description": info.description if info else None,
                "input_schema": info.schema if info else None,
                "annotations": info.annotations if info else None,
                "why": None if t.state == "approved" else t.reason(seen.config.name),
            }
        )
    config = seen.config
    return {
        "server": config.name,
        "transport": config.transport,
        "file": str(config.path),
        "error": seen.error or None,
        "tools": tools,
    }
