"""What runs in a command's child process between fork and exec: the run's cgroup, the rlimits,
no capabilities, no_new_privs, Landlock and the seccomp filter, or the network namespace before
bwrap. Everything that allocates or may fail is prepared by the parent (agent.safety.sandbox);
these hooks only make system calls (forking a threaded Python is fragile).
"""

from __future__ import annotations

import os
import resource

from agent.safety import landlock, netns, seccomp

_PR_CAPBSET_DROP, _PR_SET_NO_NEW_PRIVS, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 24, 38, 47, 4
_libc = landlock._libc


def _apply_limits(limits: list[tuple[int, int]], joins: list[int]) -> None:
    for fd in joins:
        os.write(fd, b"0")  # "0": the writing process joins the run's cgroup, before it can fork
    for which, value in limits:
        resource.setrlimit(which, (value, value))


def _drop_capabilities() -> None:
    """Empty the bounding and ambient sets, so even a root caller's command execs with no caps."""
    for cap in range(64):
        _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)  # EINVAL past the last cap, EPERM when unprivileged
    _libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)


def _no_new_privs() -> None:
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(0, "prctl(PR_SET_NO_NEW_PRIVS) failed")


def enter_none(limits: list[tuple[int, int]], joins: list[int]) -> None:
    _apply_limits(limits, joins)


def enter_bwrap(limits: list[tuple[int, int]], joins: list[int], net: netns.Plan | None) -> None:
    _apply_limits(limits, joins)
    if net is not None:
        net.enter()
    _no_new_privs()


def enter_landlock(
    limits: list[tuple[int, int]], joins: list[int], ruleset: int, fprog: seccomp.Prepared | None
) -> None:
    """Runs in the child between fork and exec; an exception here aborts the launch."""
    _apply_limits(limits, joins)
    _drop_capabilities()
    _no_new_privs()  # the kernel demands it before restrict_self
    landlock.enter(ruleset)
    if fprog is not None:
        seccomp.install(fprog[0])
