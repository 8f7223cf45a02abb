"""The delegate tool: hand a part of the goal to a child run with walls no wider than this run's.

The engine knows only the call: what the child should do, under which profile, in a copy of which
directory. Everything else is the appliance's (hearth/run/delegate.py, handed in as
`ws.services.delegate`): the child's walls (the intersection of this run's and the named
profile's), its queueing, this run's suspension while the child works, and the child's summary
as the result when this run goes on. A run the appliance gives no delegation (one that cannot
suspend, or a child at the depth cap) is not shown the tool.
"""

from __future__ import annotations

from typing import Any

from agent.safety.workspace import Workspace
from agent.tools.registry import Tool, ToolFailed

NAME = "delegate"
MAX_GOAL = 8_000


def delegate(args: dict[str, Any], ws: Workspace) -> str:
    hand = ws.services.delegate
    if hand is None:
        raise ToolFailed("delegation is not available to this run; do the work yourself")
    goal = str(args["goal"]).strip()
    if not goal:
        raise ToolFailed("goal is empty; say what the child run should do and what done means")
    return hand(goal, str(args.get("profile") or "").strip(), _directory(str(args.get("directory") or ""), ws))


def _directory(given: str, ws: Workspace) -> str:
    """The named directory as a workspace path, checked: inside the workspace (PathRefused if not),
    and a directory there (not a link to one); "" for none."""
    if not given.strip():
        return ""
    rel = ws.relpath(given.strip())
    entry = ws.stat(rel)
    if entry is None or entry.kind != "dir":
        raise ToolFailed(f"{given!r} is not a directory of your workspace; list_files shows what there is")
    return rel


TOOLS = [
    Tool(
        NAME,
        "Hand a self-contained part of your goal to a child run, which may do no more than you may, "
        "and get its summary back when it ends.",
        {
            "goal": {
                "type": "string",
                "description": "What the child does; what done means.",
                "maxLength": MAX_GOAL,
            },
            "profile": {"type": "string", "description": "The child's agent profile (default: yours)."},
            "directory": {
                "type": "string",
                "description": "A directory the child gets a copy of (default: none).",
            },
        },
        delegate,
        risk="safe",
        required=("goal",),
        available=lambda services: services.delegate is not None,
        outside="child run",
    )
]
