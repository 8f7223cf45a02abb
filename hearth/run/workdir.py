"""A run's directory: one the operator named (its parent must exist), or a fresh one hearth makes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from hearth.errors import UsageError
from hearth.settings import probe_writable


def prepare_workspace(path: Path) -> Path:
    """The workspace directory, created if missing (its parent must exist: a mistyped path never
    makes a tree of directories); UsageError if it is a file or unwritable."""
    if path.exists() and not path.is_dir():
        raise UsageError(f"workspace {path} is not a directory")
    parent = path.absolute().parent
    if not path.exists() and not parent.is_dir():
        raise UsageError(
            f"workspace {path} cannot be made: its parent {parent} does not exist; create it first, or check the path"
        )
    try:
        path.mkdir(exist_ok=True)
        probe_writable(path)
    except OSError as exc:
        raise UsageError(f"workspace {path} is not writable: {exc.strerror or exc}") from None
    return path.resolve()


def fresh_run_dir(agents: Path, run_id: str, made_for_it: tuple[str, ...] = ()) -> Path:
    """A new directory for one run, made by this call: never one that was there before, never
    through a symlink (neither `<state>/agents` nor the run's own name may be one).

    `made_for_it` names directories systemd made for this very unit before it started (its
    $STATE_DIRECTORY): a hearth-agent@ID unit finds its workspace made, empty and its own, and
    takes it as new; any other existing directory is refused."""
    if not run_id or "/" in run_id or run_id in (".", ".."):
        raise UsageError(f"{run_id!r} cannot name a run directory")
    try:
        agents.mkdir(parents=True, exist_ok=True)
        fd = os.open(agents, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if os.path.islink(agents):
            raise UsageError(f"{agents} is a symlink; runs' directories are made only in a real directory") from None
        raise UsageError(f"cannot use {agents} for run directories: {exc.strerror or exc}") from None
    try:
        os.mkdir(run_id, dir_fd=fd)
    except FileExistsError:
        if not _made_by_systemd(fd, run_id, agents / run_id, made_for_it):
            raise UsageError(
                f"run directory {agents / run_id} already exists; a fresh run never reuses a directory"
            ) from None
    except OSError as exc:
        raise UsageError(f"cannot make the run directory {agents / run_id}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    return prepare_workspace(agents / run_id)


def _made_by_systemd(agents_fd: int, name: str, path: Path, made_for_it: tuple[str, ...]) -> bool:
    """The unit's own StateDirectory: named by systemd, a real directory (no symlink), ours, empty."""
    if str(path) not in made_for_it:
        return False
    try:
        info = os.stat(name, dir_fd=agents_fd, follow_symlinks=False)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            return False
        inside = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=agents_fd)
    except OSError:
        return False
    try:
        with os.scandir(inside) as entries:
            return next(entries, None) is None
    finally:
        os.close(inside)


def run_root(workspace: Path | None, agents: Path, run_id: str, made_for_it: tuple[str, ...] = ()) -> Path:
    """Where a run works: the workspace it was given, else a fresh directory of its own."""
    if workspace is not None:
        return prepare_workspace(workspace)
    return fresh_run_dir(agents, run_id, made_for_it)
