"""`hearth mcp serve`: hearth as an MCP server on stdio, for an MCP client on this machine.

The tools are hearth/doors/mcpserver.py's (launch_run, run_status, show_run, list_runs,
list_approvals, decide_approval, search_knowledge, stop_run). The caller's role is `--role`:
operator by default, as whoever may run `hearth` here may `hearth approve`; viewer only reads.
`/mcp` on `hearth serve` is the same server over streamable HTTP, behind the command center's tokens.
"""

from __future__ import annotations

import argparse

from hearth.settings import Settings

EPILOG = "Speaks MCP on stdin/stdout until the client closes it. exit codes: 0 closed, 2 bad usage"


def register(actions: argparse._SubParsersAction) -> None:
    """Added to `hearth mcp`'s subcommands (hearth/cli/commands/mcp.py calls this)."""
    p = actions.add_parser(
        "serve", help="hearth as an MCP server on stdio (its runs, approvals, knowledge)", epilog=EPILOG
    )
    p.add_argument(
        "--role", choices=("viewer", "operator"), default="operator", help="what the client may do (default operator)"
    )
    p.set_defaults(handler=mcp_serve)


def mcp_serve(args: argparse.Namespace, settings: Settings) -> int:
    import anyio

    from hearth.doors.mcpserver import build, stdio_role

    anyio.run(build(settings, stdio_role(settings, args.role)).run_stdio_async)
    return 0
