"""A run's lock: <state>/state/<id>.lock (flock), held by the run's process for the run's life.

Taken before the run's row exists and released after its final status, so a `running` row whose
lock is free is a run whose process is gone; `settle_dead()` (hearth/dispatch/settle.py) settles it.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

from hearth.errors import UsageError
from hearth.ids import ID_PATTERN
from hearth.locks import RunLock
from hearth.settings import Settings

RUN_LOCK_WAIT_S = 1.0  # a command looking holds a run's lock for a moment; a live run for good


def run_lock_path(settings: Settings, run_id: str) -> Path:
    return settings.runs_state_dir / f"{run_id}.lock"


@contextlib.contextmanager
def hold_run(settings: Settings, run_id: str) -> Iterator[None]:
    """The run's lock for the life of the block: held means its process is alive."""
    if not re.fullmatch(ID_PATTERN, run_id):
        raise UsageError(f"{run_id!r} cannot name a run")
    path = run_lock_path(settings, run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = RunLock.acquire(path, wait_s=RUN_LOCK_WAIT_S)
    if lock is None:
        raise UsageError(f"run {run_id} is already running")
    try:
        yield
    finally:
        lock.release(remove=True)
