"""One run of a role at a time: a run of a role takes the role's turn before it works in its home,
and one that finds the turn taken waits for it (queued behind it, never refused).

The turn is an exclusive flock on `<state>/role-turns/NAME.lock`, outside the home so no run of the
role can remove it; the kernel lets go when the holder's process ends however it ends. The file
names the run that holds the turn, for the waiting run's record to say whom it waits for.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from hearth.settings import Settings


def turns_dir(settings: Settings) -> Path:
    return settings.state_dir / "role-turns"


@contextmanager
def role_turn(settings: Settings, name: str, run_id: str, waiting: Callable[[str], None]) -> Iterator[None]:
    """Hold the role's turn for the block; when another run holds it, `waiting(line)` is told whom
    this run waits for, and the block starts once that run's turn ends."""
    path = turns_dir(settings) / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            waiting(f"waits for role {name}'s run {_holder(fd) or '(unknown)'} to end: one run of a role at a time")
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{run_id}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing lets go of the flock


def _holder(fd: int) -> str:
    try:
        return os.pread(fd, 128, 0).decode("utf-8", "replace").strip()
    except OSError:
        return ""
