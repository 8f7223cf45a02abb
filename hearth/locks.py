"""Liveness by lock: an exclusive flock held for a process's life, and what others read of it.

The kernel drops a flock when its process dies however it dies (SIGKILL, OOM, power), which is
why hearth tells a live run from a dead one by a lock and not by a pid that may have been reused.
Both a queued request's lock (queue/locks/<id>.lock) and every run's own (<state>/state/<id>.lock,
hearth/run/liveness.py) are these. Standard library only: a run takes its lock before anything else
is loaded.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path


class RunLock:
    """An exclusive flock on locks/<id>.lock: held means the run's process is alive.

    The kernel drops the lock when the process dies however it dies (SIGKILL, OOM, power), which
    is why liveness is a lock and not a pid that may have been reused.
    """

    def __init__(self, fd: int, path: Path) -> None:
        self.fd = fd
        self.path = path

    @classmethod
    def try_acquire(cls, path: Path) -> RunLock | None:
        """The lock, or None while another process holds it."""
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return None
            if same_inode(fd, path):
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
                return cls(fd, path)
            os.close(fd)  # the file was removed and replaced while we waited: lock the new one

    @classmethod
    def acquire(cls, path: Path, *, wait_s: float) -> RunLock | None:
        """The lock, waiting up to `wait_s` for a brief holder (a sweep looking) to let go."""
        deadline = time.monotonic() + wait_s
        while (lock := cls.try_acquire(path)) is None and time.monotonic() < deadline:
            time.sleep(0.01)
        return lock

    def release(self, *, remove: bool) -> None:
        """Let go; `remove` deletes the lock file first (only once the request is settled)."""
        if remove:
            self.path.unlink(missing_ok=True)
        os.close(self.fd)


def lock_is_held(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def lock_holder(path: Path) -> int | None:
    """The pid written in a lock file, for display only."""
    try:
        return int(path.read_text().strip() or 0) or None
    except (OSError, ValueError):
        return None


def pid_exists(pid: int) -> bool:
    """A process with this pid exists (one of another user's counts: signalling it is refused)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def same_inode(fd: int, path: Path) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False
