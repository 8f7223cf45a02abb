"""Live state of each run for the map/dashboard: one JSON file per run, replaced atomically.

A file exists while its run does: it is written when the run's state changes and removed when
the run ends (the audit keeps the history; `hearth state` and the map read both).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from agent.clock import utc_now
from hearth.atomic import write_atomic

FINAL_STATES = (
    "done",
    "iteration_limit",
    "stuck",
    "model_unavailable",
    "budget_exceeded",
    "failed",
    "denied",
    "interrupted",
    "rejected",
    "tripped",
)


class StateFile:
    """The state file of one run; an update that changes the state rewrites it whole."""

    def __init__(self, directory: Path, run_id: str, **fixed: Any) -> None:
        self.path = directory / f"{run_id}.json"
        self.fixed = {"run_id": run_id, "pid": os.getpid(), **fixed}
        self._last: tuple[str, str, int, str | None] | None = None

    def update(self, state: str, detail: str = "", iteration: int = 0, tool: str | None = None) -> None:
        now = (state, detail[:500], iteration, tool)
        if now == self._last:
            return  # nothing a reader would see changed
        self._last = now
        record = {
            **self.fixed,
            "state": state,
            "detail": now[1],
            "iteration": iteration,
            "tool": tool,
            "updated_at": utc_now(),
        }
        write_atomic(self.path, json.dumps(record, ensure_ascii=False).encode(), durable=False)

    def remove(self) -> None:
        """The run ended: its state is the audit's now."""
        remove_state(self.path.parent, self.fixed["run_id"])


def remove_state(directory: Path, run_id: str) -> None:
    (directory / f"{run_id}.json").unlink(missing_ok=True)


def read_states(directory: Path) -> list[dict[str, Any]]:
    """Every readable state file; a torn or foreign file is skipped, not fatal."""
    states = []
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(record, dict):
            states.append(record)
    return states
