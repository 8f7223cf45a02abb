"""This host's runs: alive by their flocks, stopped by signals. The rows share these; nothing else.

A run's process on this host holds its request's lock (queue/locks/<id>.lock, while it is a
claimed request) and its own (<state>/state/<id>.lock, for the run's life; hearth/locks.py says
why a flock and not a pid). `held_here` is how the systemd and local launchers answer `alive`, and
what any launcher adds for runs that no launcher started (a `hearth-loop` on this host).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

from hearth.dispatch.launchers import LaunchError
from hearth.locks import lock_holder, lock_is_held, pid_exists
from hearth.queue.directory import Queue
from hearth.run.liveness import run_lock_path
from hearth.run.state import read_states
from hearth.settings import Settings

POLL_S = 0.02


def held_here(settings: Settings, run_id: str) -> bool:
    """A process of this host holds the run's request lock or its own lock."""
    return lock_is_held(Queue(settings.queue_dir).lock_path(run_id)) or lock_is_held(run_lock_path(settings, run_id))


def pid_here(settings: Settings, run_id: str) -> int | None:
    """The run's process: the holder of its request lock, else the pid its live state file names."""
    lock = Queue(settings.queue_dir).lock_path(run_id)
    if lock_is_held(lock):
        return lock_holder(lock)
    state = next((s for s in read_states(settings.runs_state_dir) if s.get("run_id") == run_id), None)
    pid = state.get("pid") if state else None
    return pid if isinstance(pid, int) and pid > 0 and pid_exists(pid) else None


def stop_here(settings: Settings, run_id: str, grace_s: float) -> str:
    """SIGTERM the run's process on this host, SIGKILL after `grace_s`; `cancelled` if there was none."""
    pid = pid_here(settings, run_id)
    if pid is None:
        return "cancelled"
    lock = Queue(settings.queue_dir).lock_path(run_id)
    return signal_then_kill(pid, lambda: lock_is_held(lock) if lock.exists() else pid_exists(pid), grace_s)


def signal_then_kill(pid: int, alive: Callable[[], bool], grace_s: float) -> str:
    """SIGTERM, wait up to `grace_s`, then SIGKILL the process group; `signal` or `killed`."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return "signal"
    except PermissionError as exc:
        raise LaunchError(f"cannot signal pid {pid}: {exc.strerror}; run this as the runs' user") from None
    if _wait(alive, grace_s):
        return "signal"
    try:
        os.killpg(pid, signal.SIGKILL) if os.getpgid(pid) == pid else os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return "signal"
    _wait(alive, 5.0)
    return "killed"


def _wait(alive: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while alive():
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)
    return True
