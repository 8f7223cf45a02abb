"""Live state of each run for the map/dashboard: one JSON file per run, replaced atomically."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from agent.clock import utc_now
from hearth.atomic import write_atomic

FINAL_STATES = ("done", "iteration_limit", "model_unavailable", "failed", "denied", "interrupted", "rejected")


class StateFile:
    """The state file of one run; every update rewrites it whole."""

    def __init__(self, directory: Path, run_id: str, **fixed: Any) -> None:
        self.path = directory / f"{run_id}.json"
        self.fixed = {"run_id": run_id, "pid": os.getpid(), **fixed}

    def update(self, state: str, detail: str = "", iteration: int = 0, tool: str | None = None) -> None:
        record = {
            **self.fixed,
            "state": state,
            "detail": detail[:500],
            "iteration": iteration,
            "tool": tool,
            "updated_at": utc_now(),
        }
        write_atomic(self.path, json.dumps(record, ensure_ascii=False).encode(), durable=False)


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
