"""Live state of each run for the map/dashboard: one JSON file per run, replaced atomically."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from hearth.audit.store import utc_now

FINAL_STATES = ("done", "iteration_limit", "model_unavailable", "failed", "denied", "interrupted", "rejected")


def write_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Temp file in the same directory, fsync, rename: readers see the old or the new file, whole.

    `durable=False` skips the fsync: still atomic for readers, but a power cut may lose the update
    (fine for live state, which the next update replaces anyway).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class StateFile:
    """The state file of one run; every update rewrites it whole."""

    def __init__(self, directory: Path, run_id: str, **fixed: Any) -> None:
        self.path = directory / f"{run_id}.json"
        self.fixed = {"run_id": run_id, "pid": os.getpid(), **fixed}

    def update(self, state: str, detail: str = "", iteration: int = 0, tool: str | None = None) -> None:
        record = {**self.fixed, "state": state, "detail": detail[:500], "iteration": iteration,
                  "tool": tool, "updated_at": utc_now()}
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
