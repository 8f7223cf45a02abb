"""A seccomp filter for commands without network: no sockets but netlink, no io_uring.

Why it is needed beside the namespaces and Landlock:
- a pathname Unix socket (/run/docker.sock, a database's socket) can be connected to through a
  read-only bind mount, and Landlock does not govern socket connections at all;
- Landlock's network rules cover TCP only, so UDP to any host would pass under it;
- io_uring can create sockets without the socket(2) system call.

The filter answers socket(2) with EACCES for every domain but AF_NETLINK (which reaches only the
kernel: `ip addr` keeps working), io_uring_setup(2) with ENOSYS, and kills a process that calls
in through a foreign ABI (i386 or x32 system calls on x86_64), which would dodge the numbers
checked. socketpair(2) stays allowed: it makes a connected pair and reaches nothing.

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

_ARCHES = {  # machine -> (AUDIT_ARCH_*, socket nr, io_uring_setup nr)
    "x86_64": (0xC000003E, 41, 425),
    "aarch64": (0xC00000B7, 198, 425),
}
_X32_BIT = 0x40000000
_AF_NETLINK = 16
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_RET_ALLOW, _RET_KILL_PROCESS, _RET_ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
_OFFSET_NR, _OFFSET_ARCH, _OFFSET_ARG0 = 0, 4, 16  # struct seccomp_data (arg0's low word on little endian)
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def supported() -> bool:
    return platform.machine() in _ARCHES


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program() -> bytes:
    """The filter as struct sock_filter[]; ValueError on an architecture it does not know."""
    if not supported():
        raise ValueError(f"no seccomp filter for {platform.machine()}")
    arch, socket_nr, uring_nr = _ARCHES[platform.machine()]
    deny_socket = _RET_ERRNO | errno.EACCES
    steps = [
        _insn(_LD_W_ABS, 0, 0, _OFFSET_ARCH),
        _insn(_JEQ_K, 1, 0, arch),  # native ABI: go on; else kill
        _insn(_RET_K, 0, 0, _RET_KILL_PROCESS),
        _insn(_LD_W_ABS, 0, 0, _OFFSET_NR),
        _insn(_JGE_K, 0, 1, _X32_BIT),  # x32 numbers on x86_64: kill
        _insn(_RET_K, 0, 0, _RET_KILL_PROCESS),
        _insn(_JEQ_K, 0, 1, uring_nr),
        _insn(_RET_K, 0, 0, _RET_ERRNO | errno.ENOSYS),
        _insn(_JEQ_K, 0, 3, socket_nr),  # not socket(2): allow
        _insn(_LD_W_ABS, 0, 0, _OFFSET_ARG0),
        _insn(_JEQ_K, 1, 0, _AF_NETLINK),
        _insn(_RET_K, 0, 0, deny_socket),
        _insn(_RET_K, 0, 0, _RET_ALLOW),
    ]
    return b"".join(steps)


def program_fd() -> int:
    """A memfd holding the program, for bwrap's --seccomp FD; the caller closes it."""
    fd = os.memfd_create("hearth-seccomp", 0)
    os.write(fd, program())
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
