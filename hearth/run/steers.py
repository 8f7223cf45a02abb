"""Steers on their way to a run: one file each under `<state_dir>/state/steers/<run>/`.

    SteerBox(directory)   the run's side (agent/steer.py's Steering): what waits, in the order it
                          was given; a steer taken is removed
    (hearth/dispatch/steer.py writes them: a person's steer, asked of the one check first)

A steer waits in its file until the run's next legal boundary (after a tool result), whatever
the run is doing meanwhile: a run waiting for a person (suspended, with no process) finds it when
the decision wakes it, right after the decided call's result. The run records each steer it takes
as a `steer` step; what never reached a model is left in its file, where `hearth steer` put it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from agent.steer import Steer
from hearth.settings import Settings


def steers_dir(settings: Settings, run_id: str) -> Path:
    return settings.state_dir / "state" / "steers" / run_id


class SteerBox:
    """A run's waiting steers, read from its directory (agent/steer.py's Steering)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def pending(self) -> list[Steer]:
        try:
            names = sorted(n for n in os.listdir(self.directory) if n.endswith(".json") and not n.startswith("."))
        except FileNotFoundError:
            return []
        return [steer for steer in (self._read(name) for name in names) if steer is not None]

    def _read(self, name: str) -> Steer | None:
        try:
            data = json.loads((self.directory / name).read_text())
        except (OSError, ValueError):
            return None  # torn or foreign: left where it is, never read as a steer
        if not isinstance(data, dict) or not isinstance(data.get("text"), str) or not data["text"].strip():
            return None
        return Steer(
            by=str(data.get("by") or "operator"), text=data["text"].strip(), at=str(data.get("at") or ""), key=name
        )

    def taken(self, steers: list[Steer]) -> None:
        for steer in steers:
            (self.directory / steer.key).unlink(missing_ok=True)
