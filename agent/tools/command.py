"""run_command: a shell command in the workspace, inside the OS sandbox, with a timeout."""

from __future__ import annotations

import time
from typing import Any

from agent.safety.sandbox import SandboxUnavailable, run_sandboxed
from agent.safety.workspace import Workspace
from agent.tools.args import integer
from agent.tools.registry import Tool, ToolFailed

MAX_TIMEOUT_S = 600
COMMAND_LIMIT = 65_536  # characters; a longer program belongs in a file the command runs


def run_command(args: dict[str, Any], ws: Workspace) -> str:
    services = ws.services
    timeout = _within_run(args.get("timeout_s", services.command_timeout_s), services.deadline)
    if not args["command"].strip():
        raise ToolFailed("command is empty")
    try:
        result = run_sandboxed(args["command"], ws.root, policy=services.sandbox, timeout_s=timeout)
    except SandboxUnavailable as exc:
        raise ToolFailed(f"run_command refused: no command sandbox can be set up here ({exc})") from None
    if result.timed_out:
        raise ToolFailed(
            f"command timed out after {round(timeout, 1):g}s and was killed with its children\n{result.output}".rstrip()
        )
    status = f"[exit code {result.exit_code}]"
    if result.exit_code != 0:
        raise ToolFailed(f"command failed {status}\n{result.output}".rstrip())
    return f"{result.output}\n{status}" if result.output else status


def _within_run(timeout: float, deadline: float | None) -> float:
    """The command's timeout cut to what is left of the run's time limit."""
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise ToolFailed("the run's time limit has been reached; the command was not started")
    return min(timeout, left)


TOOLS = [
    Tool(
        name="run_command",
        description="Run a shell command in the workspace (sandboxed, no network unless granted) and return its output.",
        params={
            "command": {
                "type": "string",
                "maxLength": COMMAND_LIMIT,
                "description": f"A /bin/sh command line, at most {COMMAND_LIMIT} characters.",
            },
            "timeout_s": integer("Seconds before it is killed, 1 to 600 (default 60).", 1, MAX_TIMEOUT_S),
        },
        required=("command",),
        fn=run_command,
        risk="dangerous",
        writes=True,
    ),
]
