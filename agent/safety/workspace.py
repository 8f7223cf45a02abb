"""The one place that turns a path argument into a safe handle inside a run's workspace.

Containment is enforced when a path is used, never by a separate check: every path is resolved
relative to an O_PATH fd held on the root, so swapping a directory for a symlink between a check
and a use gains nothing. Two resolvers do that, ``openat2`` and the ``walk`` fallback; they live
in agent.safety.resolve.

Both give the same answers: a symlink that stays inside is followed; one that leads out (existing
or dangling, at any position) is refused, and so is any absolute symlink (the BENEATH rule).

One symlink rule for every file tool (read_file, list_files, list_tree, search_files, edit_file,
write_file, replace_in_files): a symlink that stays inside the workspace is followed, for reads
and writes alike, as if the path it leads to had been given. A write to such a link (write_bytes,
check_replaceable) lands on its target, found by the kernel's own resolution of the link (the
fd's path), and the target must pass every write rule itself (no .git, no protected path, a
regular file with one link); a link whose target does not exist is not written through (nothing
is created at the end of a link). Walks (search_files and replace_in_files under a directory,
list_tree) list a symlink but never descend or read through it, so nothing is seen twice and no
loop is walked. Remove, stat and mkdir act on the last component itself, through the parent's fd. Writes (write, mkdir, remove) never go into a `.git` directory at all, nor
into a protected path (`RunServices.protected`: hearth's checkpoint histories when they lie
inside the workspace): git's data is how a planted hook or filter would run. A path is refused
before any lookup when it is deeper than `MAX_DEPTH` levels or has a name longer than the file
system's 255 bytes, and a refusal shows a long path shortened, its length stated.

Errors: PathRefused (one line: the path and why) for anything refused;
OSError subclasses carrying the path as given for the rest (FileNotFoundError, ...).
"""

from __future__ import annotations

import codecs
import errno
import os
import posixpath
import secrets
import stat as st
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from agent.errors import AgentError
from agent.safety.resolve import _CLOEXEC, _DIR_PATH, _openat2, _walk_open, openat2_available
from agent.services import RunServices

__all__ = ["Entry", "PathRefused", "Workspace"]

_BINARY_SNIFF = 8192
MAX_DEPTH = 128  # levels below the root: deeper is no project's layout, and the walk holds an fd per level
_NAME_MAX = 255  # bytes of one name, the limit of every Linux file system hearth runs on


class PathRefused(AgentError):
    """A path the workspace will not touch; str() is one line naming the path and the reason."""


@dataclass(frozen=True)
class Entry:
    """One directory entry, never following a final symlink. size is 0 for anything but a file."""

    name: str
    kind: str  # 'file' | 'dir' | 'symlink' | 'other'
    size: int


def _describe(mode: int) -> str:
    names = {
        st.S_IFDIR: "a directory",
        st.S_IFIFO: "a FIFO",
        st.S_IFSOCK: "a socket",
        st.S_IFCHR: "a device",
        st.S_IFBLK: "a device",
        st.S_IFLNK: "a symlink",
    }
    return names.get(st.S_IFMT(mode), "not a regular file")


def _entry(name: str, info: os.stat_result) -> Entry:
    kind = {st.S_IFREG: "file", st.S_IFDIR: "dir", st.S_IFLNK: "symlink"}.get(st.S_IFMT(info.st_mode), "other")
    return Entry(name, kind, info.st_size if kind == "file" else 0)


class Workspace:
    """A per-run directory; every file tool goes through one of these.

    ``resolver`` picks 'openat2', 'walk' or 'auto' (openat2 when the kernel has it); tests force
    each to run the same containment cases against both.

    ``services`` is what the run's tools may use besides their arguments (sandbox policy, timeouts);
    the workspace only carries it.

    ``enforce=False`` is a TEST-ONLY switch: it turns the tool-layer checks off (plain path joins
    from the root that follow symlinks and allow '..' and absolute paths) so that the OS sandbox
    can be tested alone. Never construct a Workspace that way in product code.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        enforce: bool = True,
        resolver: str = "auto",
        services: RunServices | None = None,
    ) -> None:
        if resolver not in ("auto", "openat2", "walk"):
            raise ValueError(f"unknown resolver {resolver!r}; use 'auto', 'openat2' or 'walk'")
        try:
            self._root_fd = os.open(root, _DIR_PATH | _CLOEXEC)
        except OSError as exc:
            raise ValueError(
                f"workspace root {os.fspath(root)!r} is not an existing directory ({exc.strerror})"
            ) from None
        self.root = Path(os.path.realpath(root))
        self._given = os.path.abspath(root)
        self.enforce = enforce
        self.services = services if services is not None else RunServices()
        if resolver == "auto":
            resolver = "openat2" if openat2_available() else "walk"
        self.resolver = resolver if enforce else "plain"

    def relpath(self, path: str) -> str:
        """The normalised workspace-relative posix path ('.' for the root), or PathRefused."""
        path = os.fspath(path)
        if "\0" in path:
            raise PathRefused(f"path {_quoted(path)} contains a NUL byte")
        if not path:
            return "."
        if not self.enforce:
            return path
        rel = path
        if path.startswith("/"):
            rel = self._strip_root(path)
        rel = posixpath.normpath(rel)
        if rel == ".." or rel.startswith("../"):
            raise PathRefused(f"path {_quoted(path)} is outside the workspace")
        _check_shape(rel, path)
        return rel

    def _strip_root(self, path: str) -> str:
        for base in (str(self.root), self._given):
            if path == base or path.startswith(base.rstrip("/") + "/"):
                return path[len(base) :].lstrip("/") or "."
        raise PathRefused(f"path {_quoted(path)} is outside the workspace")

    def _open(self, rel: str, flags: int, shown: str) -> int:
        try:
            if self.resolver == "openat2":
                return _openat2(self._root_fd, rel, flags)
            if self.resolver == "walk":
                return _walk_open(self._root_fd, rel, flags)
            return os.open(rel, flags | _CLOEXEC, dir_fd=self._root_fd)
        except OSError as exc:
            raise _failure(exc, shown) from None

    def _parent(self, path: str, flags: int = _DIR_PATH) -> tuple[int, str]:
        """An fd on the parent directory and the last component, which is never followed."""
        rel = self.relpath(path)
        if not self.enforce:
            rel = os.path.join(self.root, rel)
        parent, name = posixpath.split(rel)
        if name in ("", ".", ".."):
            raise PathRefused(f"path {_quoted(path)} is the workspace root, not an entry in it")
        return self._open(parent or ".", flags, path), name

    def read_bytes(self, path: str, *, limit: int) -> tuple[bytes, bool]:
        """Up to ``limit`` bytes of a regular file and whether there was more."""
        if limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        # O_NONBLOCK so a FIFO cannot hang us before fstat says what it is
        fd = self._open(self.relpath(path), os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY, path)
        try:
            mode = os.fstat(fd).st_mode
            if not st.S_ISREG(mode):
                raise PathRefused(f"path {_quoted(path)} is {_describe(mode)}, not a regular file")
            chunks, wanted = [], limit + 1
            while wanted > 0 and (chunk := os.read(fd, min(wanted, 1 << 20))):
                chunks.append(chunk)
                wanted -= len(chunk)
        finally:
            os.close(fd)
        data = b"".join(chunks)
        return data[:limit], len(data) > limit

    def read_text(self, path: str, *, limit: int) -> tuple[str, bool]:
        """UTF-8 text (bad bytes replaced); PathRefused when the file looks binary."""
        data, truncated = self.read_bytes(path, limit=limit)
        if b"\0" in data[:_BINARY_SNIFF]:
            raise PathRefused(f"path {_quoted(path)} is a binary file")
        # a cut inside a multi-byte character is dropped rather than shown as U+FFFD
        return codecs.getincrementaldecoder("utf-8")("replace").decode(data, final=not truncated), truncated

    def stat(self, path: str) -> Entry | None:
        """The entry at ``path`` (a final symlink reported as 'symlink'), or None when missing."""
        rel = self.relpath(path)
        if rel == ".":
            return _entry(".", os.fstat(self._root_fd))
        try:
            dir_fd, name = self._parent(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            return _entry(name, os.stat(name, dir_fd=dir_fd, follow_symlinks=False))
        except (FileNotFoundError, NotADirectoryError):
            return None
        finally:
            os.close(dir_fd)

    def iter_dir(self, path: str = ".") -> list[Entry]:
        """The entries of one directory, sorted by name."""
        fd = self._open(self.relpath(path), os.O_RDONLY | os.O_DIRECTORY, path)
        try:
            return _scan(fd)
        finally:
            os.close(fd)

    def walk(self, path: str = ".", *, skip_dirs: frozenset[str] = frozenset()) -> Iterator[tuple[str, Entry]]:
        """(relpath, entry) depth first in name order; never descends through a symlink.

        A directory whose name is in ``skip_dirs`` is neither yielded nor entered.
        """
        rel = self.relpath(path)
        fd = self._open(rel, os.O_RDONLY | os.O_DIRECTORY, path)
        yield from _walk_fd(fd, "" if rel == "." else rel + "/", skip_dirs)

    def write_bytes(self, path: str, data: bytes, *, mkdirs: bool = True) -> None:
        """Replace ``path`` atomically: a temp file in the same directory, fsync, rename over.

        Refuses an existing target that is a symlink, not a regular file, or hard-linked elsewhere
        (st_nlink > 1): writing it would change a file outside the workspace's say.
        """
        if not self.enforce:  # test-only mode writes through a final symlink, wherever it leads
            path = os.path.realpath(os.path.join(self.root, self.relpath(path)))
        else:
            path = self._through_link(path)
        self._writable(path)
        if mkdirs:
            self._make_dirs(posixpath.dirname(self.relpath(path)) or ".", path)
        dir_fd, name = self._parent(path, os.O_RDONLY | os.O_DIRECTORY)  # readable: fsync needs it
        try:
            mode = self._replaceable_mode(dir_fd, name, path)
            _replace(dir_fd, name, data, mode)
        finally:
            os.close(dir_fd)

    def check_replaceable(self, path: str) -> None:
        """Raise PathRefused when write_bytes would refuse ``path``; lets a many-file edit check
        every target before it writes any."""
        if self.enforce:
            path = self._through_link(path)
        self._writable(path)
        dir_fd, name = self._parent(path)
        try:
            self._replaceable_mode(dir_fd, name, path)
        finally:
            os.close(dir_fd)

    def _through_link(self, path: str) -> str:
        """`path`, or when its last component is a symlink, the workspace path of its target (the
        module docstring's rule): resolved by the kernel inside the root, never by reading the link."""
        entry = self.stat(path)
        if entry is None or entry.kind != "symlink":
            return path
        try:
            fd = self._open(self.relpath(path), os.O_PATH, path)
        except FileNotFoundError:
            raise PathRefused(
                f"path {_quoted(path)} is a symlink to a path that does not exist; nothing is created through it"
            ) from None
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            raise PathRefused(f"path {_quoted(path)} is a symlink whose target cannot be named here") from None
        finally:
            os.close(fd)
        inside = os.path.relpath(real, self.root)
        if inside == "." or inside == ".." or inside.startswith("../"):
            raise PathRefused(f"path {_quoted(path)} is a symlink to the workspace root or outside it")
        return inside

    def _replaceable_mode(self, dir_fd: int, name: str, path: str) -> int | None:
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if self.enforce and not st.S_ISREG(info.st_mode):
            raise PathRefused(f"path {_quoted(path)} is {_describe(info.st_mode)}; it will not be replaced")
        if self.enforce and info.st_nlink > 1:
            raise PathRefused(f"path {_quoted(path)} has other hard links; it will not be written through")
        return st.S_IMODE(info.st_mode)

    def mkdirs(self, path: str) -> None:
        """Create ``path`` and its missing parents, each through the fd of the one above."""
        self._writable(path)
        self._make_dirs(self.relpath(path), path)

    def _writable(self, path: str) -> None:
        """PathRefused for a path in git's data or a protected path (one line each)."""
        if not self.enforce:
            return
        rel = self.relpath(path)
        if any(part.lower() == ".git" for part in rel.split("/")):
            raise PathRefused(f"path {_quoted(path)} is inside a .git directory; file tools never write git's data")
        for protected in self.services.protected:
            inside = os.path.relpath(protected, self.root)
            if inside != ".." and not inside.startswith("../") and (rel == inside or rel.startswith(inside + "/")):
                raise PathRefused(f"path {_quoted(path)} is hearth's checkpoint history; file tools never write it")

    def _make_dirs(self, rel: str, shown: str) -> None:
        if not self.enforce:
            os.makedirs(os.path.join(self.root, rel), exist_ok=True)
            return
        missing: list[str] = []  # from the deepest up; a loop, not recursion, whatever the depth
        while rel not in ("", "."):
            try:
                os.close(self._open(rel, _DIR_PATH, shown))
                break
            except FileNotFoundError:
                missing.append(rel)
                rel = posixpath.dirname(rel)
        for below in reversed(missing):
            parent, name = posixpath.split(below)
            dir_fd = self._open(parent or ".", _DIR_PATH, shown)
            try:
                os.mkdir(name, dir_fd=dir_fd)
            except FileExistsError:
                pass  # a racing mkdir, or a dangling symlink: the reopen below decides
            finally:
                os.close(dir_fd)
            os.close(self._open(below, _DIR_PATH, shown))

    def remove(self, path: str) -> None:
        """Remove a file, a symlink (never its target) or an empty directory."""
        self._writable(path)
        dir_fd, name = self._parent(path)
        try:
            if st.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
                os.rmdir(name, dir_fd=dir_fd)
            else:
                os.unlink(name, dir_fd=dir_fd)
        except OSError as exc:
            raise _failure(exc, path) from None
        finally:
            os.close(dir_fd)

    def close(self) -> None:
        if self._root_fd >= 0:
            os.close(self._root_fd)
            self._root_fd = -1

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def _quoted(path: str) -> str:
    """A path as a refusal shows it: quoted, a long one shortened with its length stated."""
    return repr(path) if len(path) <= 120 else f"{path[:80] + '…' + path[-30:]!r} ({len(path)} characters)"


def _check_shape(rel: str, path: str) -> None:
    """PathRefused for a path no lookup should be tried on: too deep, or a name too long."""
    parts = rel.split("/")
    if len(parts) > MAX_DEPTH:
        raise PathRefused(f"path {_quoted(path)} is {len(parts)} levels deep; the workspace takes at most {MAX_DEPTH}")
    longest = max(parts, key=lambda part: len(os.fsencode(part)))
    if len(os.fsencode(longest)) > _NAME_MAX:
        size = len(os.fsencode(longest))
        raise PathRefused(f"path {_quoted(path)} has a name of {size} bytes; a name holds at most {_NAME_MAX}")


def _failure(exc: OSError, path: str) -> Exception:
    if exc.errno == errno.EXDEV:
        return PathRefused(f"path {_quoted(path)} is outside the workspace (through '..' or a symlink)")
    if exc.errno == errno.ELOOP:
        return PathRefused(f"path {_quoted(path)} goes through a symlink that is refused here ({exc.strerror})")
    return OSError(exc.errno, exc.strerror, path)


def _scan(dir_fd: int) -> list[Entry]:
    entries = []
    with os.scandir(dir_fd) as listing:
        for item in listing:
            try:
                entries.append(_entry(item.name, item.stat(follow_symlinks=False)))
            except FileNotFoundError:
                continue  # removed while we listed
    return sorted(entries, key=lambda entry: entry.name)


def _walk_fd(dir_fd: int, prefix: str, skip_dirs: frozenset[str]) -> Iterator[tuple[str, Entry]]:
    try:
        for entry in _scan(dir_fd):
            if entry.kind == "dir" and entry.name in skip_dirs:
                continue
            yield prefix + entry.name, entry
            if entry.kind != "dir":
                continue
            try:  # O_NOFOLLOW: a directory swapped for a symlink since the listing is not entered
                child = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC, dir_fd=dir_fd)
            except OSError:
                continue
            yield from _walk_fd(child, f"{prefix}{entry.name}/", skip_dirs)
    finally:
        os.close(dir_fd)


def _replace(dir_fd: int, name: str, data: bytes, mode: int | None) -> None:
    temp = f".{secrets.token_hex(8)}.hearth-tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC, 0o666, dir_fd=dir_fd)
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(temp, dir_fd=dir_fd)
        except FileNotFoundError:
            pass
        raise
    os.fsync(dir_fd)
