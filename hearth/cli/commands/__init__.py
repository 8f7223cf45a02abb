"""The `hearth` subcommands: a module per area, each imported only when one of its commands runs.

A module exposes `register(subparsers)`, which adds its subcommand(s) with
`set_defaults(handler=fn)`; `fn(args, settings) -> int` is the exit code. COMMANDS names the
module of every subcommand, so `hearth enqueue` loads the enqueue module and nothing else;
`hearth --help` (or a word that is no command) loads them all, in MODULES' order.
"""

from __future__ import annotations

import importlib
from types import ModuleType

MODULES = (
    "demo",
    "runs",
    "enqueue",
    "continue_",
    "spawn",
    "agent",
    "watch",
    "report",
    "approvals",
    "knowledge",
    "creds",
    "evolve",
    "doctor",
    "serve",
    "budget",
    "stop",
    "steer",
    "pause",
    "alerts",
    "missions",
    "mcp",
    "keys",
    "users",
    "channels",
    "docs",
    "install",
    "eval",
    "fleet",
    "research",
    "skills",
    "roles",
)
COMMANDS = {
    "steer": "steer",
    "demo": "demo",
    "runs": "runs",
    "show": "runs",
    "enqueue": "enqueue",
    "continue": "continue_",
    "spawn": "spawn",
    "agent": "agent",
    "watch": "watch",
    "state": "report",
    "report": "report",
    "approvals": "approvals",
    "approve": "approvals",
    "deny": "approvals",
    "kb": "knowledge",
    "memory": "knowledge",
    "creds": "creds",
    "evolve": "evolve",
    "proposals": "evolve",
    "doctor": "doctor",
    "serve": "serve",
    "budget": "budget",
    "stop": "stop",
    "pause": "pause",
    "resume": "pause",
    "alerts": "alerts",
    "missions": "missions",
    "mcp": "mcp",
    "keys": "keys",
    "users": "users",
    "channels": "channels",
    "completion": "docs",
    "man": "docs",
    "install": "install",
    "uninstall": "install",
    "eval": "eval",
    "skills": "skills",
    "fleet": "fleet",
    "worker": "fleet",
    "research": "research",
    "heartbeat": "roles",
    "roles": "roles",
}


def modules_for(command: str | None) -> list[ModuleType]:
    """The module that registers `command`, or every module when it is none of them."""
    names = [COMMANDS[command]] if command in COMMANDS else list(MODULES)
    return [importlib.import_module(f"hearth.cli.commands.{name}") for name in names]
