"""The queue directory: requests arrive, are claimed, and end in exactly one final place.

    queue/<id>.json             incoming: dropped by the command center, `hearth enqueue`, timers
    queue/claimed/<id>.json     claimed by one spawner (an atomic rename); its run is starting or going
    queue/locks/<id>.lock       held with flock by the run's process for as long as it lives
    queue/rejected/<name>       refused before running, <name>.error.json beside it says why
    queue/failed/<id>.json      claimed but never finished (killed, power loss), <id>.error.json beside it

A request that ran is removed from claimed/ only after its final status is in the audit, which
keeps its body. Every move is a rename that never replaces its target (renameat2 NOREPLACE): two
spawners never both win a file and nothing overwrites what is already there. Names that start
with "." or end like a temp file are being written by someone and are left alone until renamed.

"""

from __future__ import annotations

import ctypes
import errno
import grp
import heapq
import json
import os
import pwd
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.clock import utc_now
from hearth.atomic import write_atomic
from hearth.queue.intake import MAX_BYTES, RequestRefused, printable
from hearth.queue.request import Request

SUBDIRS = ("claimed", "rejected", "failed", "locks")
TEMP_SUFFIXES = (".tmp", ".part", ".partial", ".swp", "~")
PASS_NAMES = 128  # at most this many names in one spawner pass (each is claimed, read, checked)
SHOWN = 100  # at most this many waiting names in a listing (the command center, `hearth state`)
_RENAME_NOREPLACE = 1
_AT_FDCWD = -100
_libc = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True)
class Entry:
    """One name in the incoming directory, as lstat saw it (links are never followed)."""

    name: str
    path: Path
    mtime: float
    kind: str  # file | symlink | directory | fifo | socket | device


class Queue:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.claimed = root / "claimed"
        self.rejected = root / "rejected"
        self.failed = root / "failed"
        self.locks = root / "locks"

    def ensure(self) -> Queue:
        for directory in (self.root, self.claimed, self.rejected, self.failed, self.locks):
            directory.mkdir(parents=True, exist_ok=True)
        return self

    def open_to_all(self) -> str | None:
        """Why the queue cannot be trusted: a directory of it every user may write (anyone could
        drop, swap or remove requests), or None. Its group writing is the design (submitters)."""
        for directory in (self.root, self.claimed, self.rejected, self.failed, self.locks):
            try:
                info = os.stat(directory)
            except FileNotFoundError:
                continue
            if info.st_mode & stat.S_IWOTH:
                mode = stat.S_IMODE(info.st_mode)
                return f"the queue directory {directory} is writable by every user (mode {mode:04o}); run: chmod o-w {directory}"
        return None

    # -- arriving -------------------------------------------------------------------------------
    def enqueue(self, request: Request) -> Path:
        """Write the request durably under its id; FileExistsError if that name is taken."""
        body = json.dumps(request.model_dump(mode="json", exclude_none=True), ensure_ascii=False, indent=2)
        target = self.root / f"{request.id}.json"
        tmp = self.root / f".{request.id}.json.{secrets.token_hex(4)}.tmp"
        try:
            with open(tmp, "xb") as handle:
                handle.write(body.encode() + b"\n")
                handle.flush()
                os.fsync(handle.fileno())
            rename_noreplace(tmp, target)  # never replaces a request, and the file never has two links
        finally:
            tmp.unlink(missing_ok=True)
        _fsync_dir(self.root)
        return target

    def incoming(self, limit: int | None = None, *, temp_before: float | None = None) -> list[Entry]:
        """What waits in the queue, oldest first (at most the `limit` oldest); our own
        subdirectories are not requests. With `temp_before`, temp names written since then are
        left out: nobody acts on them yet, so a heap of them never fills a batch."""
        entries = []
        with os.scandir(self.root) as scan:
            for item in scan:
                if item.name in SUBDIRS and item.is_dir(follow_symlinks=False):
                    continue
                try:
                    info = item.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue  # claimed by someone else while we looked
                if temp_before is not None and info.st_mtime > temp_before and is_temp_name(item.name):
                    continue
                entries.append(Entry(item.name, Path(item.path), info.st_mtime, _kind(info.st_mode)))
        if limit is not None:
            return heapq.nsmallest(limit, entries, key=lambda e: (e.mtime, e.name))
        return sorted(entries, key=lambda e: (e.mtime, e.name))

    def waiting(self, shown: int = SHOWN) -> tuple[int, list[str]]:
        """How many requests wait (temp names and directories are not requests), and the first
        `shown` of their names in order: a listing stays small however full the queue is."""
        count, names = 0, []
        try:
            with os.scandir(self.root) as scan:
                for item in scan:
                    if is_temp_name(item.name) or item.is_dir(follow_symlinks=False):
                        continue
                    count += 1
                    names.append(item.name)
        except FileNotFoundError:
            return 0, []
        return count, heapq.nsmallest(shown, names)

    def known(self, request_id: str) -> str | None:
        """Where a request with this id already is (claimed or failed), or None. A place this
        process may not look into (a submitter's view of hearth's own claimed/) is skipped: the
        spawner checks again when it claims the file."""
        for where in ("claimed", "failed"):
            try:
                if (self.root / where / f"{request_id}.json").exists():
                    return where
            except PermissionError:
                continue
        return None

    # -- moving ---------------------------------------------------------------------------------
    def claim(self, name: str) -> Path | None:
        """Move a name into claimed/; None if another spawner won it, FileExistsError if taken."""
        source, target = self.root / name, self.claimed / name
        try:
            rename_noreplace(source, target)
        except FileNotFoundError:
            return None
        except FileExistsError:
            if _same_file(source, target) or not os.path.lexists(source):
                return None  # another spawner is mid-claim of this very file
            raise
        return target

    def reject(self, path: Path, reason: str, **facts: Any) -> Path | None:
        """Keep a refused file in rejected/ with its reason; None if someone else moved it first."""
        return self._keep(path, self.rejected, reason, facts)

    def fail(self, path: Path, reason: str, **facts: Any) -> Path | None:
        """Keep a claimed request that never finished in failed/ with its reason."""
        return self._keep(path, self.failed, reason, facts)

    def finish(self, request_id: str) -> None:
        """The run's final status is recorded: the request file has done its job."""
        (self.claimed / f"{request_id}.json").unlink(missing_ok=True)

    def _keep(self, path: Path, directory: Path, reason: str, facts: dict[str, Any]) -> Path | None:
        name = printable(path.name).lstrip(".")[:180] or "unnamed"
        target = directory / name
        while True:
            try:
                rename_noreplace(path, target)
                break
            except FileNotFoundError:
                return None
            except FileExistsError:
                target = directory / f"{name}.{secrets.token_hex(3)}"
        record = {"file": printable(path.name), "reason": reason, "at": utc_now(), **facts}
        error = target.with_name(target.name + ".error.json")
        write_atomic(error, json.dumps(record, indent=2, ensure_ascii=False).encode() + b"\n")
        error.chmod(0o640)  # the queue's group (the submitters) may read why
        return target

    def lock_path(self, request_id: str) -> Path:
        return self.locks / f"{request_id}.lock"


def read_request_bytes(path: Path, owners: Owners | None = None) -> bytes:
    """The bytes of a request file, refusing unread: links, directories, devices, floods, a file
    with a second hard link or writable by every user (both could change it after its check),
    and, when `owners` is given, a file whose owner is not one of them."""
    try:
        info = os.lstat(path)
        _refuse_kind(info.st_mode)
        if info.st_size > MAX_BYTES:
            raise RequestRefused(f"larger than 1 MiB ({info.st_size} bytes)")
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as handle:
            _refuse_file(os.fstat(fd), owners)  # judged on what was opened: it may have been swapped
            return handle.read(MAX_BYTES + 1)
    except OSError as exc:  # e.g. written 0600 by another user: refused, never a crash
        raise RequestRefused(f"cannot be read: {exc.strerror or exc}") from None


@dataclass(frozen=True)
class Owners:
    """Who may own a request file where submitters are configured: hearth, root, the group's users."""

    group: str
    uids: frozenset[int]

    @classmethod
    def of_group(cls, group: str) -> Owners:
        """The users of `group` (members and those whose primary group it is); ConfigError-free:
        an unknown group lets only hearth's own user and root through."""
        uids = {os.getuid(), 0}
        try:
            entry = grp.getgrnam(group)
        except KeyError:
            return cls(group, frozenset(uids))
        for user in pwd.getpwall():
            if user.pw_gid == entry.gr_gid or user.pw_name in entry.gr_mem:
                uids.add(user.pw_uid)
        return cls(group, frozenset(uids))

    def refusal(self, uid: int) -> str | None:
        if uid in self.uids:
            return None
        try:
            name = pwd.getpwuid(uid).pw_name
        except KeyError:
            name = f"uid {uid}"
        return f"owned by {name}, who is not one of the submitters (group {self.group})"


def _refuse_file(info: os.stat_result, owners: Owners | None) -> None:
    _refuse_kind(info.st_mode)
    if info.st_nlink > 1:
        raise RequestRefused(
            f"has {info.st_nlink} hard links; a request file must have one (another name could change it after its check)"
        )
    if info.st_mode & stat.S_IWOTH:
        raise RequestRefused(
            f"writable by every user (mode {stat.S_IMODE(info.st_mode):04o}); anyone could change it after its check"
        )
    problem = owners.refusal(info.st_uid) if owners else None
    if problem:
        raise RequestRefused(problem)


def _refuse_kind(mode: int) -> None:
    kind = _kind(mode)
    if kind == "symlink":
        raise RequestRefused("a symlink, not a request file (the queue never follows links)")
    if kind == "directory":
        raise RequestRefused("a directory, not a request file")
    if kind != "file":
        raise RequestRefused(f"not a regular file but a {kind}")


def is_temp_name(name: str) -> bool:
    """A file someone is still writing: renamed into place when done, so never read before."""
    return name.startswith(".") or name.endswith(TEMP_SUFFIXES)


def rename_noreplace(source: Path, target: Path) -> None:
    """Atomic rename that fails with FileExistsError instead of replacing `target`."""
    result = _libc.renameat2(_AT_FDCWD, os.fsencode(source), _AT_FDCWD, os.fsencode(target), _RENAME_NOREPLACE)
    if result == 0:
        return
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS):  # a file system without NOREPLACE: link, then unlink
        os.link(source, target, follow_symlinks=False)
        os.unlink(source)
        return
    raise OSError(code, os.strerror(code), str(source), None, str(target))


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b) and not os.path.islink(a)
    except OSError:
        return False


def _kind(mode: int) -> str:
    for test, kind in (
        (stat.S_ISREG, "file"),
        (stat.S_ISLNK, "symlink"),
        (stat.S_ISDIR, "directory"),
        (stat.S_ISFIFO, "fifo"),
        (stat.S_ISSOCK, "socket"),
    ):
        if test(mode):
            return kind
    return "device"


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
