"""Risk class x mode x manifest -> run / ask / deny.

- `plan` runs only safe tools; `auto` runs safe and edit tools and asks for dangerous ones;
  `bypass` runs everything.
- A run's manifest (`allowed`) lists the tools it may use; an unlisted tool is denied in every
  mode, bypass included.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

MODES = ("plan", "auto", "bypass")


@dataclass(frozen=True)
class Verdict:
    action: str  # run | ask | deny
    reason: str = ""


@dataclass(frozen=True)
class Decision:
    """An approver's answer to one `ask`."""

    granted: bool
    by: str = "operator"
    detail: str = ""


Approver = Callable[[str, dict[str, Any], str], Decision]
NO_APPROVER = Decision(False, by="policy", detail="it needs approval and nobody can approve it here")


def decide(
    name: str,
    risk: str,
    mode: str,
    allowed: Iterable[str] | None = None,
    args: dict[str, Any] | None = None,
) -> Verdict:
    if mode not in MODES:
        return Verdict("deny", f"unknown mode {mode!r}")
    if allowed is not None and name not in set(allowed):
        return Verdict("deny", f"{name} is not in this run's allowed tools")
    if mode == "bypass" or risk == "safe":
        return Verdict("run")
    if mode == "plan":
        return Verdict("deny", f"plan mode runs only read-only tools and {name} is {risk}")
    if risk == "edit":
        return Verdict("run")
    return Verdict("ask", f"{name} is dangerous and auto mode asks before running it")


def denied_message(name: str, reason: str) -> str:
    """What the model reads: plain, and telling it not to route around the refusal."""
    return (
        f"Denied: {name} was not run ({reason}). Do not retry it or reach the same result another "
        "way; continue without it or finish with what you have."
    )
