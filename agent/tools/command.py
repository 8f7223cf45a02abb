"""run_command: a shell command in the workspace, inside the OS sandbox, with a timeout.

The run's caps speak for themselves in the result: a command the kernel killed at the run's
memory cap, forks it refused at the process cap, the CPU budget of the run's commands spent.
"""

from __future__ import annotations

import math
import signal
from dataclasses import replace
from typing import Any

from agent.safety.sandbox import CommandResult, SandboxPolicy, SandboxUnavailable, run_sandboxed
from agent.safety.workspace import Workspace
from agent.tools.args import integer, within_run
from agent.tools.registry import Tool, ToolFailed

MAX_TIMEOUT_S = 600
COMMAND_LIMIT = 65_536  # characters; a longer program belongs in a file the command runs


def run_command(args: dict[str, Any], ws: Workspace) -> str:
    services = ws.services
    timeout = within_run(
        args.get("timeout_s", services.command_timeout_s), services.deadline, "the command was not started"
    )
    if not args["command"].strip():
        raise ToolFailed("command is empty")
    policy = services.sandbox
    if services.command_cpu_s is not None:
        left = services.command_cpu_s - services.command_cpu_used_s
        if left <= 0:
            raise ToolFailed(
                f"run_command refused: the run's commands have used their {services.command_cpu_s:.0f} CPU seconds"
            )
        policy = replace(policy, cpu_seconds=math.ceil(left))
    try:
        result = run_sandboxed(args["command"], ws.root, policy=policy, timeout_s=timeout, proxy=services.command_proxy)
    except SandboxUnavailable as exc:
        raise ToolFailed(f"run_command refused: no command sandbox can be set up here ({exc})") from None
    services.command_cpu_used_s += result.cpu_s
    if result.timed_out:
        raise ToolFailed(
            f"command timed out after {round(timeout, 1):g}s and was killed with its children\n{result.output}".rstrip()
        )
    status = f"[exit code {result.exit_code}]" + _caps_hit(result, policy)
    if result.exit_code != 0:
        raise ToolFailed(f"command failed {status}\n{result.output}".rstrip())
    return f"{result.output}\n{status}" if result.output else status


def _caps_hit(result: CommandResult, policy: SandboxPolicy) -> str:
    """What the kernel stopped, in words, after the exit code."""
    notes = []
    if result.memory_killed:
        notes.append(f"killed by the kernel at the run's memory cap of {policy.memory_bytes >> 20} MiB")
    if result.forks_refused:
        notes.append(f"{result.forks_refused} forks refused at the run's process cap of {policy.max_procs}")
    if (
        result.exit_code in (-signal.SIGXCPU, -signal.SIGKILL)
        and policy.cpu_seconds
        and result.cpu_s >= policy.cpu_seconds
    ):
        notes.append(f"stopped at the run's CPU time budget ({policy.cpu_seconds}s left when it started)")
    return "".join(f"\n[{note}]" for note in notes)


TOOLS = [
    Tool(
        name="run_command",
        description="Run a shell command in the workspace (sandboxed).",
        params={
            "command": {
                "type": "string",
                "maxLength": COMMAND_LIMIT,
            },
            "timeout_s": {**integer("1 to 600 (default 60).", 1, MAX_TIMEOUT_S), "hidden": True},
        },
        required=("command",),
        fn=run_command,
        risk="dangerous",
        writes=True,
    ),
]
