"""The two path resolvers behind agent.safety.workspace: open a path relative to the root's O_PATH fd
and never leave it.

- ``openat2``: the kernel resolves with RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS (Linux >= 5.6).
- ``walk``: the fallback, one component at a time with O_NOFOLLOW relative to the previous
  directory fd. It emulates RESOLVE_BENEATH: a relative symlink is followed by splicing its target
  into the remaining path (at most 40 times), '..' pops a held directory fd and can never rise above
  the root, and an absolute symlink is refused, as the kernel does.

Both give the answers agent.safety.workspace's docstring promises. A refusal is an OSError: EXDEV for a
way out, ELOOP for a symlink refused or changed underfoot; the workspace turns those into PathRefused.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import stat as st

_CLOEXEC = os.O_CLOEXEC
_DIR_PATH = os.O_PATH | os.O_DIRECTORY
_MAX_LINKS = 40  # the kernel's own bound on symlinks per lookup
_SYS_OPENAT2 = 437  # same number on x86_64 and aarch64
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_BENEATH = 0x08


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _openat2(dir_fd: int, rel: str, flags: int) -> int:
    how = _OpenHow(flags | _CLOEXEC, 0, _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS)
    for _ in range(3):  # EAGAIN: a concurrent rename touched the lookup; the kernel asks for a retry
        fd = _libc.syscall(
            ctypes.c_long(_SYS_OPENAT2),
            ctypes.c_long(dir_fd),
            os.fsencode(rel),
            ctypes.byref(how),
            ctypes.c_size_t(ctypes.sizeof(how)),
        )
        if fd >= 0:
            return fd
        code = ctypes.get_errno()
        if code != errno.EAGAIN:
            break
    raise OSError(code, os.strerror(code))


@functools.cache
def openat2_available() -> bool:
    """Whether this kernel (and its seccomp policy) lets us use openat2 with RESOLVE_BENEATH."""
    if platform.machine() not in ("x86_64", "aarch64"):
        return False
    root = os.open("/", _DIR_PATH | _CLOEXEC)
    try:
        os.close(_openat2(root, ".", _DIR_PATH))
    except OSError:
        return False
    finally:
        os.close(root)
    return True


def _walk_open(root_fd: int, rel: str, flags: int) -> int:
    """RESOLVE_BENEATH emulated in user space; see the module docstring for the rules."""
    todo = [part for part in reversed(rel.split("/")) if part not in ("", ".")]
    held = [os.dup(root_fd)]
    links = 0
    try:
        while todo:
            name = todo.pop()
            if name == "..":
                if len(held) == 1:
                    raise OSError(errno.EXDEV, "'..' would leave the workspace")
                os.close(held.pop())
                continue
            fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | _CLOEXEC, dir_fd=held[-1])
            mode = os.fstat(fd).st_mode
            if st.S_ISLNK(mode) and (todo or not flags & os.O_NOFOLLOW):
                links += 1
                target = _read_link(fd, links)
                todo.extend(part for part in reversed(target.split("/")) if part not in ("", "."))
            elif todo and not st.S_ISDIR(mode):
                os.close(fd)
                raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
            elif todo:
                held.append(fd)
            else:
                return _reopen(held[-1], name, fd, flags)
        return os.open(".", flags | _CLOEXEC, dir_fd=held[-1])
    finally:
        for fd in held:
            os.close(fd)


def _read_link(link_fd: int, links: int) -> str:
    try:
        if links > _MAX_LINKS:
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))
        target = os.readlink("", dir_fd=link_fd)  # the link we fstat'ed, not whatever the name holds now
    finally:
        os.close(link_fd)
    if target.startswith("/"):
        raise OSError(errno.EXDEV, "absolute symlink")
    return target


def _reopen(dir_fd: int, name: str, path_fd: int, flags: int) -> int:
    """Turn the O_PATH handle on the last component into one opened with the caller's flags."""
    if flags & os.O_PATH:
        if flags & os.O_DIRECTORY and not st.S_ISDIR(os.fstat(path_fd).st_mode):
            os.close(path_fd)
            raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
        return path_fd
    try:
        fd = os.open(name, flags | os.O_NOFOLLOW | _CLOEXEC, dir_fd=dir_fd)
        seen, now = os.fstat(path_fd), os.fstat(fd)
    finally:
        os.close(path_fd)
    if (seen.st_dev, seen.st_ino) != (now.st_dev, now.st_ino):
        os.close(fd)  # replaced in between; the caller gets a refusal rather than a guess
        raise OSError(errno.ELOOP, "changed while it was opened")
    return fd
