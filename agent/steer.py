"""A steer: a person's words to a run that is working, given to the model at the next legal boundary.

The conversation's rules allow one kind of user-side text in the middle of a run: after a tool
result, before the model's next turn. The steers that arrived since the last boundary go in there
as one user message (two user messages never follow each other), each an out-of-band block that
names who wrote it, so the model tells a person's word from a tool's output:

    [steer from ana: a person watching this run, not a tool result]
    Use the staging database, not production.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

STEER_MARK = "[steer from "


@dataclass(frozen=True)
class Steer:
    """One person's words: who (the user hearth knows them as), what, and when they were given."""

    by: str
    text: str
    at: str = ""
    key: str = ""  # where the delivery keeps it until it is taken (a file's name)


class Steering(Protocol):
    """Where a run's steers wait (hearth/run/steers.py: files in the run's state directory)."""

    def pending(self) -> list[Steer]: ...

    def taken(self, steers: list[Steer]) -> None: ...


def steer_message(steers: list[Steer]) -> dict[str, Any]:
    """The steers as the one user message that follows a tool result."""
    blocks = [f"{STEER_MARK}{s.by}: a person watching this run, not a tool result]\n{s.text}" for s in steers]
    return {"role": "user", "content": "\n\n".join(blocks)}


def is_steer(message: dict[str, Any]) -> bool:
    return message.get("role") == "user" and str(message.get("content", "")).startswith(STEER_MARK)
