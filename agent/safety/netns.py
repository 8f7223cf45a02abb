"""A command's private network namespace: empty, or with network granted, one whose only listener
is the run's proxy.

The child (between fork and exec, before bwrap) makes a new network namespace (as root directly;
otherwise inside a user namespace of its own, mapping its own uid and gid) and brings its loopback
up with an ioctl. With network granted it then listens on 127.0.0.1:3128 there, and the listening
socket goes back to hearth over a socketpair (SCM_RIGHTS); hearth's proxy accepts on it and makes
the real connections from the host's namespace, through the network guard. bwrap then builds the
sandbox inside that namespace: the command's HTTP_PROXY is the only address that answers, and
nothing else routes anywhere (the namespace has no other interface). Without network the
namespace is `empty()`: loopback alone. hearth makes it rather than bwrap (--unshare-net), whose
loopback is brought up over rtnetlink: a unit running bwrap would have to allow netlink sockets.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct
from dataclasses import dataclass

__all__ = ["PROXY_ADDRESS", "PROXY_URL", "Plan", "child_plan", "empty", "plan"]

PROXY_ADDRESS = ("127.0.0.1", 3128)
PROXY_URL = f"http://{PROXY_ADDRESS[0]}:{PROXY_ADDRESS[1]}"
_CLONE_NEWUSER, _CLONE_NEWNET = 0x10000000, 0x40000000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_libc = ctypes.CDLL(None, use_errno=True)


@dataclass
class Plan:
    """The parent's end, and what the child needs (made in the parent: the child should not allocate)."""

    parent: socket.socket | None  # None: an empty namespace, where nothing listens
    child: socket.socket | None
    maps: tuple[bytes, bytes] | None  # uid_map and gid_map lines, when a user namespace is needed
    ifreq: bytes

    def enter(self) -> None:
        """In the child: the namespace, loopback, the listener (if any) handed to the parent."""
        flags = _CLONE_NEWNET | (_CLONE_NEWUSER if self.maps else 0)
        if _libc.unshare(flags) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNET) failed")
        if self.maps:
            _write("/proc/self/setgroups", b"deny")
            _write("/proc/self/uid_map", self.maps[0])
            _write("/proc/self/gid_map", self.maps[1])
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            current = struct.unpack("16sH14x", fcntl.ioctl(probe, _SIOCGIFFLAGS, self.ifreq))[1]
            fcntl.ioctl(probe, _SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", current | _IFF_UP))
        if self.child is None:
            return
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
            listener.bind(PROXY_ADDRESS)
            listener.listen(64)
            socket.send_fds(self.child, [b"L"], [listener.fileno()])
        self.child.close()

    def listener(self) -> socket.socket:
        """In the parent, once the child is started: the listening socket inside its namespace."""
        assert self.parent is not None and self.child is not None, "an empty namespace has no listener"
        self.child.close()
        self.parent.settimeout(30)
        try:
            _, fds, _, _ = socket.recv_fds(self.parent, 1, 1)
        finally:
            self.parent.close()
        if not fds:
            raise OSError("the command's network namespace could not be set up")
        return socket.socket(fileno=fds[0])

    def abandon(self) -> None:
        for end in (self.child, self.parent):
            if end is not None:
                end.close()


def empty() -> Plan:
    """A namespace with loopback alone: a command's, or a server's, without network."""
    return Plan(None, None, _maps(), struct.pack("16sH14x", b"lo", 0))


def plan() -> Plan:
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return Plan(parent, child, _maps(), struct.pack("16sH14x", b"lo", 0))


def child_plan(back: socket.socket) -> Plan:
    """A plan for a process that makes its own namespace (not a fork's child): the listener goes
    back over `back`, a socket already connected to the one who serves it (hearth/mcp/netwrap.py)."""
    return Plan(back, back, _maps(), struct.pack("16sH14x", b"lo", 0))


def _maps() -> tuple[bytes, bytes] | None:
    uid, gid = os.getuid(), os.getgid()
    return None if os.geteuid() == 0 else (f"{uid} {uid} 1".encode(), f"{gid} {gid} 1".encode())


def _write(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
