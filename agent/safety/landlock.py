"""Landlock: the command sandbox where bwrap cannot make namespaces, applied between fork and exec.

Reads, like writes, are limited to the allow list of agent.safety.allowlist: read and execute the
system paths, the /etc entries, the operator's exposed paths and /proc (a process's own files;
other processes' private ones stay behind Landlock's ptrace rule); everything in the workspace,
the run's home and private tmp, and the writable extras; read and write a few character devices.
TCP bind/connect is denied (ABI >= 4); abstract Unix sockets and signals to processes outside the
domain are scoped (ABI >= 6). ABI 3 is the minimum: below it truncate(2) escapes.

What Landlock cannot do, `gaps()` names, so the run records it: file names and metadata outside
the list stay visible to stat(2) (only opening and listing are ruled); the host's /etc/passwd and
/etc/group are shown as they are; the uid is the caller's (no user namespace), so for root
RLIMIT_NPROC does not hold without a cgroup; below ABI 6, signals can reach the caller's other
processes.
"""

from __future__ import annotations

import ctypes
import functools
import os
from collections.abc import Iterable

from agent.safety import allowlist

__all__ = ["MIN_ABI", "abi", "enter", "gaps", "problem", "ruleset"]

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_FS_EXECUTE, _FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_TRUNCATE, _FS_IOCTL_DEV = 1 << 14, 1 << 15
_FILE_RIGHTS = _FS_EXECUTE | _FS_WRITE_FILE | _FS_READ_FILE | _FS_TRUNCATE | _FS_IOCTL_DEV  # all a file may get
_READ = _FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1
MIN_ABI = 3
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # the kernel struct is packed: 12 bytes
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _syscall(number: int, *args: object) -> int:
    result = _libc.syscall(ctypes.c_long(number), *args)
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


@functools.cache
def abi() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is missing or disabled."""
    try:
        return _syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except OSError:
        return 0


def problem() -> str | None:
    level = abi()
    if level == 0:
        return "Landlock is not enabled in this kernel"
    if level < MIN_ABI:
        return f"Landlock ABI {level} < {MIN_ABI} cannot stop truncate(2) outside the workspace"
    return None


def gaps(*, root: bool, cgroup: bool) -> list[str]:
    """What a command under Landlock is not contained from, one line each."""
    found = [
        "under Landlock, names and metadata of files outside the allow list can still be probed with stat",
        "under Landlock, commands see the host's /etc/passwd and /etc/group",
    ]
    if root and not cgroup:
        found.append("hearth runs as root without a cgroup: the process cap (RLIMIT_NPROC) is not enforced")
    if abi() < 6:
        found.append(f"Landlock ABI {abi()} < 6: commands can signal the caller's other processes")
    return found


def ruleset(read: Iterable[str], write: Iterable[str]) -> int:
    """A ruleset fd: read/execute ``read``, everything in ``write``, read/write DEVICES; no TCP."""
    level = abi()
    fs_all = (1 << 15) - 1 | (_FS_IOCTL_DEV if level >= 5 else 0)  # ABI 1-3 rights, plus IOCTL_DEV from 5
    net = _NET_BIND_TCP | _NET_CONNECT_TCP if level >= 4 else 0  # handled + no rule = denied
    scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if level >= 6 else 0
    attr = _RulesetAttr(fs_all, net, scoped)
    size = 24 if level >= 6 else 16 if level >= 4 else 8  # the struct grew with the ABI; older kernels want less
    fd = _syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    try:
        for path in read:
            _allow(fd, path, _READ & fs_all)
        for path in write:
            _allow(fd, path, fs_all)
        for device in DEVICES:
            _allow(fd, device, (_FS_READ_FILE | _FS_WRITE_FILE | _FS_TRUNCATE | _FS_IOCTL_DEV) & fs_all)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_paths(expose: Iterable[str]) -> list[str]:
    """The allow list as Landlock read rules: system paths, /etc entries, passwd/group, /proc, ``expose``."""
    system = [path for path, link in allowlist.system_paths() if link is None]
    etc = [*allowlist.etc_paths(), "/etc/passwd", "/etc/group"]
    return [p for p in (*system, *etc, "/proc", *expose) if os.path.exists(p)]


def _allow(ruleset_fd: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return  # nothing to allow: it cannot be reached either
    try:
        if not os.path.isdir(path):
            access &= _FILE_RIGHTS  # the kernel refuses directory rights on a file
        rule = _PathBeneathAttr(access, fd)
        _syscall(
            _SYS_ADD_RULE,
            ctypes.c_int(ruleset_fd),
            ctypes.c_int(_RULE_PATH_BENEATH),
            ctypes.byref(rule),
            ctypes.c_uint32(0),
        )
    finally:
        os.close(fd)


def enter(ruleset_fd: int) -> None:
    """Restrict this process (between fork and exec); no_new_privs must be set already."""
    _syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset_fd), ctypes.c_uint32(0))
