"""The OS wall around every command: bubblewrap when it works, Landlock when it does not.

- ``bwrap`` (agent.safety.bwrap): the allow-list filesystem (agent.safety.allowlist) in new user,
  mount, PID, IPC, UTS and network namespaces, as nobody with no capabilities. Preferred: it is
  the only kind that can make paths not exist and give a command network only through the proxy.
- ``landlock`` (agent.safety.landlock): applied in the child just before exec: reads and writes
  limited to the same allow list, no TCP, no network at all (a grant is refused: Landlock cannot
  confine TCP to one proxy). What it cannot contain, `gaps()` names.
- ``none``: an explicit, unsafe operator choice; only rlimits, the timeout and the scrubbed env.

Every kind gets: the seccomp filter of agent.safety.seccomp (bwrap and Landlock), the rlimits
(RLIMIT_CPU from the run's remaining CPU budget), the run's cgroup (agent.safety.cgroups: the
process and memory caps that hold for root too), no_new_privs, a fresh session, a stdin of
/dev/null, a capped merged output and a timeout that kills the whole process group (with bwrap the
whole PID namespace, with a cgroup everything in it); the child-side hooks are agent.safety.child.
SandboxUnavailable means the asked kind cannot be set up here; the caller refuses to run the command.
"""

from __future__ import annotations

import functools
import os
import resource
import selectors
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from agent.errors import AgentError
from agent.safety import bwrap, landlock

if TYPE_CHECKING:
    from agent.safety import netns

__all__ = [
    "CommandResult",
    "ProxyPort",
    "SandboxPolicy",
    "SandboxUnavailable",
    "detect",
    "gaps",
    "run_sandboxed",
    "scrubbed_env",
]

_KINDS = ("auto", "bwrap", "landlock", "none")
_PASSED_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")  # allowlist: nothing else reaches a command
_PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")  # curl reads only lowercase http_proxy
_DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
_DRAIN_GRACE_S = 1.0  # how long output may keep flowing after the main process is gone
_CHUNK = 1 << 16


class SandboxUnavailable(AgentError):
    """The asked sandbox kind cannot be set up on this host; str() is one line saying why."""


class ProxyPort(Protocol):
    """The run's proxy as a command sees it: it serves a listener in the command's namespace."""

    def attach(self, listener: socket.socket) -> None: ...

    def detach(self, listener: socket.socket) -> None: ...


@dataclass(frozen=True)
class SandboxPolicy:
    """What one command may do. ``hide`` paths are masked when they lie beneath something a
    command sees (the workspace, an exposed path); everything else is not there at all."""

    kind: str = "auto"  # 'auto' (bwrap, else landlock) | 'bwrap' | 'landlock' | 'none' (unsafe)
    network: bool = False  # granted by the run: only through the run's proxy (run_sandboxed's proxy=)
    hide: tuple[str, ...] = ()  # hearth's state dir, credentials, other runs
    expose: tuple[str, ...] = ()  # more read-only paths: the operator's tools outside the system dirs
    writable: tuple[str, ...] = ()  # more read-write paths (the config repository's git data)
    home: str | None = None  # the run's sandbox home (its decoys); None: HOME is the workspace
    tmp: str | None = None  # the run's private tmp on the host, TMPDIR under Landlock; None: <ws>/.tmp
    cgroup: tuple[str, ...] = ()  # the run's cgroup directories (agent.safety.cgroups), joined by each command
    memory_bytes: int = 1 << 30
    max_procs: int = 256
    file_size_bytes: int = 256 << 20
    cpu_seconds: int | None = None  # RLIMIT_CPU of each process; the run's remaining budget
    unix_sockets: bool = False  # AF_UNIX allowed (nix_check, to reach nix-daemon)


@dataclass(frozen=True)
class CommandResult:
    exit_code: int | None  # None when timed out; negative when killed by a signal (Popen's rule)
    output: str
    timed_out: bool
    truncated: bool
    sandbox: str
    duration_s: float
    memory_killed: bool = False  # the kernel killed a process at the run's memory cap
    forks_refused: int = 0  # forks the kernel refused at the run's process cap
    cpu_s: float = 0.0  # CPU time the command used (its cgroup's, else its children's)


# --- detection -----------------------------------------------------------------------------------


def start_detection(kind: str) -> None:
    """Begin what detect(kind) will wait for (bwrap's probe is a process), so it runs beside other work."""
    if kind in ("auto", "bwrap"):
        bwrap.start_probe()


def detect(kind: str = "auto") -> str:
    """The kind that would be used for ``kind``: 'bwrap', 'landlock' or 'none'."""
    if kind not in _KINDS:
        raise ValueError(f"unknown sandbox kind {kind!r}; use one of {', '.join(_KINDS)}")
    if kind == "none":
        return "none"
    bwrap_problem = bwrap.problem() if kind in ("auto", "bwrap") else None
    if kind == "bwrap" or (kind == "auto" and bwrap_problem is None):
        if bwrap_problem:
            raise SandboxUnavailable(bwrap_problem)
        return "bwrap"
    landlock_problem = landlock.problem()
    if landlock_problem is None:
        return "landlock"
    reasons = f"{bwrap_problem}; {landlock_problem}" if bwrap_problem else landlock_problem
    raise SandboxUnavailable(reasons)


def gaps(policy: SandboxPolicy) -> list[str]:
    """What commands under ``policy`` are NOT contained from here, one line each (the run records them)."""
    try:
        kind = detect(policy.kind)
    except SandboxUnavailable as exc:
        return [f"no command sandbox: {exc}"]
    root = os.geteuid() == 0
    found = []
    if kind == "landlock":
        found += landlock.gaps(root=root, cgroup=bool(policy.cgroup))
        found.append(f"under Landlock, commands run as hearth's own uid ({os.geteuid()}), not as nobody")
        if policy.network:
            found.append("network was granted, but under Landlock commands get none (it needs bwrap's namespace)")
    elif kind == "bwrap" and root and not policy.cgroup:
        found.append("hearth runs as root without a cgroup: the process cap (RLIMIT_NPROC) is not enforced")
    if not policy.cgroup:
        found.append("no cgroup: memory is capped per process (RLIMIT_AS), not for the run")
        if kind == "bwrap":
            found.append(
                "no cgroup: each process gets the run's remaining CPU time (RLIMIT_CPU), but under bwrap the run's total is not counted"
            )
    return found


# --- environment ---------------------------------------------------------------------------------


def scrubbed_env(
    base: Mapping[str, str] | None = None, *, home: str | None = None, tmpdir: str | None = None
) -> dict[str, str]:
    """A minimal environment built from an allowlist, so no HEARTH_*, credential, token, key,
    secret, password or cloud variable of ``base`` (default: os.environ) can ever pass."""
    source = os.environ if base is None else base
    env = {name: source[name] for name in _PASSED_ENV if name in source}
    env.setdefault("PATH", _DEFAULT_PATH)
    env.setdefault("LANG", "C.UTF-8")
    env["TERM"] = "dumb"
    if home is not None:
        env["HOME"] = home
    if tmpdir is not None:
        env["TMPDIR"] = tmpdir
    return env


def _command_env(kind: str, ws: str, policy: SandboxPolicy, env: Mapping[str, str] | None) -> dict[str, str]:
    from agent.safety import allowlist, netns  # the command's side: only once a command runs

    if kind == "bwrap":
        home, tmp = (allowlist.SANDBOX_HOME if policy.home else ws), "/tmp"
    else:
        home, tmp = policy.home or ws, policy.tmp or _private_tmp(ws)
    child = scrubbed_env(env, home=home, tmpdir=tmp)
    # the host's /etc/gitconfig is not in the allow list (it may name credential helpers): git
    # reads none, instead of warning on every call that it cannot read it
    child["GIT_CONFIG_NOSYSTEM"] = "1"
    if policy.network and kind == "bwrap":
        child.update(dict.fromkeys(_PROXY_ENV, netns.PROXY_URL))
    return child


def _private_tmp(ws: str) -> str:
    path = os.path.join(ws, ".tmp")
    os.makedirs(path, exist_ok=True)
    return path


# --- running -------------------------------------------------------------------------------------


def run_sandboxed(
    command: str,
    workspace: str | os.PathLike[str],
    *,
    policy: SandboxPolicy,
    timeout_s: float,
    output_limit: int = 64_000,
    env: Mapping[str, str] | None = None,
    proxy: ProxyPort | None = None,
) -> CommandResult:
    """Run ``/bin/sh -c command`` in ``workspace`` inside the sandbox the policy asks for.

    ``env`` is the environment to scrub (default os.environ): only allowlisted names survive.
    ``proxy`` is the run's proxy, required when the policy grants network (under bwrap).
    """
    from agent.safety import cgroups

    ws, kind = _checked(workspace, policy, timeout_s, output_limit, proxy)
    child_env = _command_env(kind, ws, policy, env)
    launch = _launch(kind, command, ws, policy, child_env)
    before, usage = cgroups.counters(policy.cgroup), resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc, listener = _start(launch, ws, child_env)
    data, total, timed_out = _waited(proc, listener, proxy, kind, policy, timeout_s, output_limit)
    after = cgroups.counters(policy.cgroup)
    output = data.decode("utf-8", errors="replace")
    if total > output_limit:
        output += f"\n[output truncated: {total} bytes, only the first {output_limit} kept]"
    return CommandResult(
        None if timed_out else proc.returncode,
        output,
        timed_out,
        total > output_limit,
        kind,
        time.monotonic() - started,
        memory_killed=after.oom_kills > before.oom_kills,
        forks_refused=after.pids_refused - before.pids_refused,
        cpu_s=after.cpu_s - before.cpu_s if policy.cgroup else _cpu_since(usage),
    )


def _waited(
    proc: subprocess.Popen[bytes],
    listener: socket.socket | None,
    proxy: ProxyPort | None,
    kind: str,
    policy: SandboxPolicy,
    timeout_s: float,
    output_limit: int,
) -> tuple[bytes, int, bool]:
    """The started command's output, its size and whether it timed out: the proxy serves it while it
    runs, and nothing it started outlives it."""
    from agent.safety import cgroups

    try:
        if listener is not None and proxy is not None:
            proxy.attach(listener)
        with proc:
            data, total, timed_out = _collect(proc, timeout_s, output_limit)
        if kind != "bwrap":  # under bwrap the PID namespace ends with its init: nothing is left
            cgroups.kill_all(policy.cgroup)  # what escaped the process group (setsid) goes too
    finally:
        if listener is not None and proxy is not None:
            proxy.detach(listener)
    return data, total, timed_out


def _checked(
    workspace: str | os.PathLike[str],
    policy: SandboxPolicy,
    timeout_s: float,
    output_limit: int,
    proxy: ProxyPort | None,
) -> tuple[str, str]:
    """The workspace's real path and the sandbox kind, or why a command cannot run as asked."""
    ws = os.path.realpath(workspace)
    if not os.path.isdir(ws):
        raise ValueError(f"workspace {os.fspath(workspace)!r} is not a directory")
    if timeout_s <= 0 or output_limit < 0:
        raise ValueError(f"timeout_s must be > 0 and output_limit >= 0, got {timeout_s} and {output_limit}")
    kind = detect(policy.kind)
    if policy.network and kind == "landlock":
        raise SandboxUnavailable(
            "network was granted, but Landlock cannot confine a command's TCP to the run's proxy; "
            "network for commands needs bwrap (user namespaces)"
        )
    if policy.network and kind == "bwrap" and proxy is None:
        raise ValueError("network is granted but no proxy was given: commands reach the network only through one")
    return ws, kind


def _rlimits(policy: SandboxPolicy, *, cgroup: bool) -> list[tuple[int, int]]:
    """The rlimits of a command under `policy`, worked out in the parent (the child only applies them)."""
    # with a cgroup holding the run's memory, RLIMIT_AS only stops one absurd allocation (twice
    # the cap), so a bomb that really uses memory meets the cgroup and is killed there
    wanted = [
        (resource.RLIMIT_AS, policy.memory_bytes * (2 if cgroup else 1)),
        (resource.RLIMIT_NPROC, policy.max_procs),
        (resource.RLIMIT_FSIZE, policy.file_size_bytes),
        (resource.RLIMIT_CORE, 0),
    ]
    if policy.cpu_seconds is not None:
        wanted.append((resource.RLIMIT_CPU, max(1, policy.cpu_seconds)))
    limits = []
    for which, value in wanted:
        hard = resource.getrlimit(which)[1]
        limits.append((which, value if hard == resource.RLIM_INFINITY else min(value, hard)))
    return limits


@dataclass
class _Launch:
    argv: list[str]
    preexec: Callable[[], None]
    fds: list[int]  # closed in the parent once the child started (passed to it under bwrap)
    pass_fds: tuple[int, ...]
    net: netns.Plan | None


def _launch(kind: str, command: str, ws: str, policy: SandboxPolicy, env: dict[str, str]) -> _Launch:
    """argv, the preexec hook and the fds it needs.

    Everything that allocates or may fail is done here in the parent, so the hook that runs
    between fork and exec only makes system calls (forking a threaded Python is fragile).
    """
    from agent.safety import child, netns, seccomp

    limits = _rlimits(policy, cgroup=bool(policy.cgroup))
    joins = [os.open(f"{d}/cgroup.procs", os.O_WRONLY | os.O_CLOEXEC) for d in policy.cgroup]
    if kind == "none":
        return _Launch(["/bin/sh", "-c", command], functools.partial(child.enter_none, limits, joins), joins, (), None)
    network = policy.network and kind == "bwrap"
    code = seccomp.program(network=network, unix=policy.unix_sockets) if seccomp.supported() else None
    if kind == "landlock":
        read = landlock.read_paths(policy.expose)
        write = [ws, *(p for p in (policy.home, policy.tmp) if p), *policy.writable]
        ruleset = landlock.ruleset(read, write)
        fprog = seccomp.prepared(code) if code is not None else None
        hook = functools.partial(child.enter_landlock, limits, joins, ruleset, fprog)
        return _Launch(["/bin/sh", "-c", command], hook, [*joins, ruleset], (), None)
    fds = [_memfd("hearth-seccomp", code)] if code is not None else []
    mounts = bwrap.Mounts(ws, policy.home, policy.writable, policy.expose, policy.hide, policy.file_size_bytes)
    argv = bwrap.argv(command, mounts, env, seccomp_fd=fds[0] if fds else None)
    net = netns.plan() if network else netns.empty()  # the command's network namespace: see netns
    hook = functools.partial(child.enter_bwrap, limits, joins, net)
    return _Launch(argv, hook, [*joins, *fds], tuple(fds), net if network else None)


def _start(launch: _Launch, ws: str, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], socket.socket | None]:
    try:
        proc = subprocess.Popen(
            launch.argv,
            cwd=ws,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=launch.preexec,
            pass_fds=launch.pass_fds,
        )
    except BaseException:
        if launch.net is not None:
            launch.net.abandon()
        raise
    finally:
        for fd in launch.fds:
            os.close(fd)
    if launch.net is None:
        return proc, None
    try:
        return proc, launch.net.listener()
    except BaseException:
        _kill_group(proc.pid)
        proc.wait()
        raise


def _memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name, 0)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _cpu_since(before: resource.struct_rusage) -> float:
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (now.ru_utime - before.ru_utime) + (now.ru_stime - before.ru_stime)


def _collect(proc: subprocess.Popen[bytes], timeout_s: float, limit: int) -> tuple[bytes, int, bool]:
    """Read merged output until EOF, keeping the first ``limit`` bytes; kill on timeout.

    Reading never stops early, so a chatty child does not block on a full pipe. When the main
    process exits, whatever it left running in its group is killed too.
    """
    assert proc.stdout is not None  # started with stdout=PIPE
    out_fd, pid_fd = proc.stdout.fileno(), os.pidfd_open(proc.pid)
    head, total, timed_out, deadline = bytearray(), 0, False, time.monotonic() + timeout_s
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(out_fd, selectors.EVENT_READ)
            selector.register(pid_fd, selectors.EVENT_READ)
            while True:
                ready = [key.fd for key, _ in selector.select(max(0.0, deadline - time.monotonic()))]
                if not ready and pid_fd not in selector.get_map():
                    break  # the grace is over: something outside our group still holds the pipe
                if not ready:
                    timed_out = True
                    _kill_group(proc.pid)
                    deadline = time.monotonic() + _DRAIN_GRACE_S
                if pid_fd in ready:
                    selector.unregister(pid_fd)
                    _kill_group(proc.pid)  # stragglers: `cmd &` must not outlive the command
                    deadline = min(deadline, time.monotonic() + _DRAIN_GRACE_S)
                if out_fd in ready:
                    chunk = os.read(out_fd, _CHUNK)
                    if not chunk:
                        break
                    total += len(chunk)
                    head += chunk[: max(0, limit - len(head))]
    except BaseException:
        _kill_group(proc.pid)  # interrupted: the caller's with-block would otherwise wait on it
        raise
    finally:
        os.close(pid_fd)
    proc.wait()
    return bytes(head), total, timed_out


def _kill_group(pgid: int) -> None:
    # the leader is not reaped yet (no wait() before this), so its pgid cannot have been reused
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
