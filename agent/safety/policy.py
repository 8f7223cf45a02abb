"""Risk class x mode x manifest (x the command itself) -> run / ask / deny.

- `plan` runs only safe tools; `auto` runs safe and edit tools and asks for dangerous ones;
  `bypass` runs everything.
- A run's manifest (`allowed`) lists the tools it may use; an unlisted tool is denied in every
  mode, bypass included.
- The hard floor (`agent.safety.command_floor.floor_violation`) denies a few commands in every mode,
  bypass included: wiping / or $HOME, mkfs, dd onto a block device, a fork bomb, shutdown/reboot,
  chmod -R on /.
- In `auto`, a command whose every program is one of the operator's heads (`auto_commands`, such
  as git, ls, pytest; `agent.safety.command_approval`) runs without asking; anything chained after them is judged on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

MODES = ("plan", "auto", "bypass")
COMMAND_ARGUMENTS = {"run_command": "command"}  # tools whose argument is a shell line


@dataclass(frozen=True)
class Verdict:
    action: str  # run | ask | deny
    reason: str = ""


@dataclass(frozen=True)
class Decision:
    """An approver's answer to one `ask`; ``ref`` names its record (an approval id) if it has one."""

    granted: bool
    by: str = "operator"
    detail: str = ""
    ref: str = ""


Approver = Callable[[str, dict[str, Any], str], Decision]
NO_APPROVER = Decision(False, by="policy", detail="it needs approval and nobody can approve it here")


def decide(
    name: str,
    risk: str,
    mode: str,
    allowed: Iterable[str] | None = None,
    args: dict[str, Any] | None = None,
    *,
    auto_commands: Iterable[str] = (),
) -> Verdict:
    """The verdict for one call. Without ``args`` only the tool is judged (the manifest and the
    mode); with them the command floor and the auto-approved heads apply too."""
    if mode not in MODES:
        return Verdict("deny", f"unknown mode {mode!r}")
    if allowed is not None and name not in set(allowed):
        return Verdict("deny", f"{name} is not in this run's allowed tools")
    command = _command(name, args)
    floor = _floor(command) if command is not None else None
    if floor:
        return Verdict("deny", f"the hard floor forbids this command in every mode: {floor}")
    if mode == "bypass" or risk == "safe":
        return Verdict("run")
    if mode == "plan":
        return Verdict("deny", f"plan mode runs only read-only tools and {name} is {risk}")
    if risk == "edit":
        return Verdict("run")
    if command is not None and _approval_rules().auto_approved(command, auto_commands):
        return Verdict("run", "every program in it is an auto-approved command head")
    return Verdict("ask", f"{name} is dangerous and auto mode asks before running it")


def _floor(command: str) -> str | None:
    try:
        return _floor_rules().floor_violation(command)
    except Exception as exc:  # a line the guard cannot read (or a bug in it) is not run
        return f"the command could not be judged ({type(exc).__name__})"


def _command(name: str, args: dict[str, Any] | None) -> str | None:
    key = COMMAND_ARGUMENTS.get(name)
    value = args.get(key) if key and args else None
    return value if isinstance(value, str) else None


def denied_message(name: str, reason: str) -> str:
    """What the model reads: plain, and telling it not to route around the refusal."""
    return (
        f"Denied: {name} was not run ({reason}). Do not retry it or reach the same result another "
        "way; continue without it or finish with what you have."
    )


def _floor_rules() -> ModuleType:
    """The hard floor, loaded when a command is first judged (its parser is most of this
    module's import cost, and a run without commands never needs it)."""
    from agent.safety import command_floor

    return command_floor


def _approval_rules() -> ModuleType:
    """The auto-approved heads, loaded on first use for the same reason as `_floor_rules`."""
    from agent.safety import command_approval

    return command_approval
