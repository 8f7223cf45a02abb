"""The seccomp filter every sandboxed command runs under, with network or without.

Why it is needed beside the namespaces and Landlock:
- a pathname Unix socket (/run/docker.sock, a database's socket) can be connected to through a
  read-only bind mount, and Landlock does not govern socket connections at all;
- Landlock's network rules cover TCP only, so UDP to any host would pass under it;
- io_uring can create sockets and open files without the system calls checked here;
- the kernel interfaces below are how sandboxes are escaped or the host is probed, and no tool
  command needs them.

Refused with EPERM: the keyring (keyctl, add_key, request_key), ptrace and process_vm_readv/
writev (another process's memory), userfaultfd (stalls the kernel mid-copy, the usual race
helper), perf_event_open, bpf, mount, umount2, pivot_root and the new mount API (fsopen, fsmount,
fsconfig, fspick, move_mount, open_tree, mount_setattr), open_by_handle_at (opens files by inode,
past any mount), kexec_load/kexec_file_load, module loading (init_module, finit_module,
delete_module), unshare and setns, and clone with any CLONE_NEW* flag. Refused with ENOSYS, so
callers fall back: io_uring_setup/enter/register and clone3 (its flags live in memory a filter
cannot read; glibc then uses clone, whose flags are checked).

socket(2) is answered with EACCES except for:
- AF_NETLINK with NETLINK_ROUTE only: getaddrinfo's AI_ADDRCONFIG and `ip addr` read the
  interfaces through it, and it only reads (changes need CAP_NET_ADMIN, which no command has);
  the other netlink families (audit, uevents, sock_diag, netfilter, generic) are refused;
- with network granted, AF_INET and AF_INET6 stream sockets: the command reaches the run's proxy
  over TCP. No UDP (so no DNS of its own: the proxy resolves), no raw or packet sockets;
- ``unix=True`` (nix_check alone, to reach nix-daemon's socket): AF_UNIX.
socketpair(2) stays allowed: it makes a connected pair and reaches nothing. A process that calls
in through a foreign ABI (i386 or x32 system calls on x86_64) is killed: it would dodge every
number checked.

`program()` is the compiled classic BPF program (what bwrap's --seccomp FD reads); `install()`
loads it into the calling process, for the Landlock path, between fork and exec.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct

__all__ = ["Prepared", "install", "prepared", "program", "program_fd", "supported"]

# Per architecture: AUDIT_ARCH_* and the numbers of the calls the filter looks at.
# fmt: off
_ARCHES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (
        0xC000003E,
        {
            "socket": 41, "clone": 56, "clone3": 435, "ptrace": 101, "keyctl": 250, "add_key": 248,
            "request_key": 249, "process_vm_readv": 310, "process_vm_writev": 311, "userfaultfd": 323,
            "perf_event_open": 298, "bpf": 321, "mount": 165, "umount2": 166, "pivot_root": 155,
            "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313,
            "delete_module": 176, "unshare": 272, "setns": 308, "open_by_handle_at": 304,
            "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428,
            "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
            "mount_setattr": 442,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "socket": 198, "clone": 220, "clone3": 435, "ptrace": 117, "keyctl": 219, "add_key": 217,
            "request_key": 218, "process_vm_readv": 270, "process_vm_writev": 271, "userfaultfd": 282,
            "perf_event_open": 241, "bpf": 280, "mount": 40, "umount2": 39, "pivot_root": 41,
            "kexec_load": 104, "kexec_file_load": 294, "init_module": 105, "finit_module": 273,
            "delete_module": 106, "unshare": 97, "setns": 268, "open_by_handle_at": 265,
            "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428,
            "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
            "mount_setattr": 442,
        },
    ),
}
REFUSED = (
    "keyctl", "add_key", "request_key", "ptrace", "process_vm_readv", "process_vm_writev", "userfaultfd",
    "perf_event_open", "bpf", "mount", "umount2", "pivot_root", "open_tree", "move_mount", "fsopen",
    "fsconfig", "fsmount", "fspick", "mount_setattr", "open_by_handle_at", "kexec_load", "kexec_file_load",
    "init_module", "finit_module", "delete_module", "unshare", "setns",
)
# fmt: on
UNSUPPORTED = ("io_uring_setup", "io_uring_enter", "io_uring_register", "clone3")
CLONE_NEW_FLAGS = 0x7E020080  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET|NEWTIME
_X32_BIT = 0x40000000
_AF_UNIX, _AF_INET, _AF_NETLINK, _AF_INET6 = 1, 2, 16, 10
_SOCK_STREAM, _SOCK_TYPE_MASK, _NETLINK_ROUTE = 1, 0xF, 0
_LD_W_ABS, _ALU_AND_K, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x54, 0x15, 0x35, 0x45, 0x06
_RET_ALLOW, _RET_KILL_PROCESS, _RET_ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
# struct seccomp_data: nr, arch, ip, then args; each arg's low word (little endian)
_OFFSET_NR, _OFFSET_ARCH, _ARG = 0, 4, (16, 24, 32)
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def supported() -> bool:
    return platform.machine() in _ARCHES


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def _ret(value: int) -> bytes:
    return _insn(_RET_K, 0, 0, value)


def _refuse_if(nr: int, answer: int) -> list[bytes]:
    """`nr == A` -> return `answer`; otherwise fall through (A still holds the number)."""
    return [_insn(_JEQ_K, 0, 1, nr), _ret(answer)]


def _socket_rules(network: bool, unix: bool) -> list[bytes]:
    """Entered with A = socket's domain; every path returns."""
    deny = _ret(_RET_ERRNO | errno.EACCES)
    steps = [
        _insn(_JEQ_K, 0, 3, _AF_NETLINK),
        _insn(_LD_W_ABS, 0, 0, _ARG[2]),  # the protocol
        _insn(_JEQ_K, 0, 1, _NETLINK_ROUTE),
        _ret(_RET_ALLOW),
    ]
    steps.append(deny)  # netlink other than ROUTE (and the fall-through of the block above)
    if unix:
        steps = [_insn(_JEQ_K, 0, 1, _AF_UNIX), _ret(_RET_ALLOW), *steps]
    if network:
        steps = [
            _insn(_JEQ_K, 1, 0, _AF_INET),
            _insn(_JEQ_K, 0, 5, _AF_INET6),
            _insn(_LD_W_ABS, 0, 0, _ARG[1]),  # the type, with SOCK_NONBLOCK/SOCK_CLOEXEC masked off
            _insn(_ALU_AND_K, 0, 0, _SOCK_TYPE_MASK),
            _insn(_JEQ_K, 0, 1, _SOCK_STREAM),
            _ret(_RET_ALLOW),
            deny,
            *steps,
        ]
    return steps


def program(*, network: bool = False, unix: bool = False) -> bytes:
    """The filter as struct sock_filter[]; ValueError on an architecture it does not know."""
    if not supported():
        raise ValueError(f"no seccomp filter for {platform.machine()}")
    arch, nr = _ARCHES[platform.machine()]
    steps = [
        _insn(_LD_W_ABS, 0, 0, _OFFSET_ARCH),
        _insn(_JEQ_K, 1, 0, arch),  # native ABI: go on; else kill
        _ret(_RET_KILL_PROCESS),
        _insn(_LD_W_ABS, 0, 0, _OFFSET_NR),
        _insn(_JGE_K, 0, 1, _X32_BIT),  # x32 numbers on x86_64: kill
        _ret(_RET_KILL_PROCESS),
    ]
    for name in REFUSED:
        steps += _refuse_if(nr[name], _RET_ERRNO | errno.EPERM)
    for name in UNSUPPORTED:
        steps += _refuse_if(nr[name], _RET_ERRNO | errno.ENOSYS)
    steps += [
        _insn(_JEQ_K, 0, 4, nr["clone"]),
        _insn(_LD_W_ABS, 0, 0, _ARG[0]),  # clone's flags
        _insn(_JSET_K, 0, 1, CLONE_NEW_FLAGS),
        _ret(_RET_ERRNO | errno.EPERM),
        _ret(_RET_ALLOW),
    ]
    socket_rules = _socket_rules(network, unix)
    steps += [_insn(_JEQ_K, 1, 0, nr["socket"]), _ret(_RET_ALLOW), _insn(_LD_W_ABS, 0, 0, _ARG[0]), *socket_rules]
    return b"".join(steps)


def program_fd(*, network: bool = False, unix: bool = False) -> int:
    """A memfd holding the program, for bwrap's --seccomp FD; the caller closes it."""
    fd = os.memfd_create("hearth-seccomp", 0)
    os.write(fd, program(network=network, unix=unix))
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


Prepared = tuple["_SockFprog", "ctypes.Array[ctypes.c_char]"]  # the prctl argument, and the buffer it points into


def prepared(code: bytes) -> Prepared:
    """The prctl argument for ``code``, built in the parent (the child should not allocate)."""
    buffer = ctypes.create_string_buffer(code, len(code))
    return _SockFprog(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p)), buffer


_libc = ctypes.CDLL(None, use_errno=True)


def install(fprog: _SockFprog) -> None:
    """Load the filter into this process; needs no_new_privs (or CAP_SYS_ADMIN) first."""
    if _libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")
