"""The OS wall around run_command: bubblewrap when it works, Landlock when it does not.

- ``bwrap``: a read-only view of the whole filesystem with the workspace bound writable, a private
  /tmp and /run (no host service sockets), tmpfs over every ``hide`` path, new PID/IPC/UTS (and,
  unless granted, network) namespaces, no capabilities. Preferred: it is the only kind that can
  make paths invisible.
- ``landlock``: applied in the child just before exec. Read and execute everywhere, write only in
  the workspace (its ``.tmp`` is TMPDIR) and /dev/null; TCP bind/connect denied unless granted
  (ABI >= 4). Landlock restricts access rights, not visibility, so ``hide`` paths stay READABLE
  here; that is why bwrap comes first. Needs ABI >= 3, without which truncate(2) escapes it.
- ``none``: an explicit, unsafe operator choice; only rlimits, the timeout and the scrubbed env.

Without network, bwrap and Landlock also get agent.safety.seccomp's filter (no sockets but netlink, no
io_uring): it closes pathname Unix sockets and, under Landlock, UDP.
Every kind gets the rlimits, a stdin of /dev/null, a capped merged output and a timeout that kills
the whole process group (and with bwrap the whole PID namespace). SandboxUnavailable means the
asked kind cannot be set up here; the caller refuses to run the command.
"""

from __future__ import annotations

import ctypes
import functools
import os
import resource
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from agent.safety import seccomp

__all__ = ["CommandResult", "SandboxPolicy", "SandboxUnavailable", "detect", "run_sandboxed", "scrubbed_env"]

_KINDS = ("auto", "bwrap", "landlock", "none")
_PASSED_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")  # allowlist: nothing else reaches a command
_DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
_DRAIN_GRACE_S = 1.0  # how long output may keep flowing after the main process is gone
_CHUNK = 1 << 16

# Landlock ABI (include/uapi/linux/landlock.h)
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_FS_EXECUTE, _FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_TRUNCATE, _FS_IOCTL_DEV = 1 << 14, 1 << 15
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1
_MIN_LANDLOCK_ABI = 3
_PR_CAPBSET_DROP, _PR_SET_NO_NEW_PRIVS, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 24, 38, 47, 4


class SandboxUnavailable(Exception):
    """The asked sandbox kind cannot be set up on this host; str() is one line saying why."""


@dataclass(frozen=True)
class SandboxPolicy:
    """What one command may do. ``hide`` paths are invisible under bwrap but only unwritable under
    Landlock; a workspace beneath one of them stays usable either way."""

    kind: str = "auto"  # 'auto' (bwrap, else landlock) | 'bwrap' | 'landlock' | 'none' (unsafe)
    network: bool = False  # granted by the run's manifest
    hide: tuple[str, ...] = ()  # hearth's state dir, credentials, other runs
    memory_bytes: int = 1 << 30
    max_procs: int = 256
    file_size_bytes: int = 256 << 20


@dataclass(frozen=True)
class CommandResult:
    exit_code: int | None  # None when timed out; negative when killed by a signal (Popen's rule)
    output: str
    timed_out: bool
    truncated: bool
    sandbox: str
    duration_s: float


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


# --- detection -----------------------------------------------------------------------------------


def detect(kind: str = "auto") -> str:
    """The kind that would be used for ``kind``: 'bwrap', 'landlock' or 'none'."""
    if kind not in _KINDS:
        raise ValueError(f"unknown sandbox kind {kind!r}; use one of {', '.join(_KINDS)}")
    if kind == "none":
        return "none"
    bwrap_problem = _bwrap_problem() if kind in ("auto", "bwrap") else None
    if kind == "bwrap" or (kind == "auto" and bwrap_problem is None):
        if bwrap_problem:
            raise SandboxUnavailable(bwrap_problem)
        return "bwrap"
    landlock_problem = _landlock_problem()
    if landlock_problem is None:
        return "landlock"
    reasons = f"{bwrap_problem}; {landlock_problem}" if bwrap_problem else landlock_problem
    raise SandboxUnavailable(reasons)


@functools.cache
def _bwrap_problem() -> str | None:
    """Why bwrap cannot be used here, found by really running it once, or None when it works."""
    path = shutil.which("bwrap")
    if path is None:
        return "bwrap is not installed"
    probe = [
        path,
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--size",
        "1048576",
        "--tmpfs",
        "/tmp",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--cap-drop",
        "ALL",
        "--new-session",
        "--die-with-parent",
        "--clearenv",
        "/bin/sh",
        "-c",
        "true",
    ]
    try:
        done = subprocess.run(probe, stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not be started: {exc}"
    if done.returncode != 0:
        detail = done.stderr.decode(errors="replace").strip().splitlines()
        return f"bwrap cannot set up namespaces here: {detail[-1] if detail else f'exit {done.returncode}'}"
    return None


@functools.cache
def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is missing or disabled."""
    try:
        return _syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except OSError:
        return 0


def _landlock_problem() -> str | None:
    abi = landlock_abi()
    if abi == 0:
        return "Landlock is not enabled in this kernel"
    if abi < _MIN_LANDLOCK_ABI:
        return f"Landlock ABI {abi} < {_MIN_LANDLOCK_ABI} cannot stop truncate(2) outside the workspace"
    return None


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


# --- running -------------------------------------------------------------------------------------


def run_sandboxed(
    command: str,
    workspace: str | os.PathLike[str],
    *,
    policy: SandboxPolicy,
    timeout_s: float,
    output_limit: int = 64_000,
    env: Mapping[str, str] | None = None,
) -> CommandResult:
    """Run ``/bin/sh -c command`` in ``workspace`` inside the sandbox the policy asks for.

    ``env`` is the environment to scrub (default os.environ): only allowlisted names survive.
    """
    ws = os.path.realpath(workspace)
    if not os.path.isdir(ws):
        raise ValueError(f"workspace {os.fspath(workspace)!r} is not a directory")
    if timeout_s <= 0 or output_limit < 0:
        raise ValueError(f"timeout_s must be > 0 and output_limit >= 0, got {timeout_s} and {output_limit}")
    kind = detect(policy.kind)
    tmpdir = "/tmp" if kind == "bwrap" else _private_tmp(ws)
    child_env = scrubbed_env(env, home=ws, tmpdir=tmpdir)
    argv, preexec, fd = _launch_plan(kind, command, ws, policy, child_env)
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=ws,
            env=child_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=preexec,
            pass_fds=(fd,) if fd is not None and kind == "bwrap" else (),
        )
    finally:
        if fd is not None:
            os.close(fd)
    with proc:
        data, total, timed_out = _collect(proc, timeout_s, output_limit)
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
    )


def _private_tmp(ws: str) -> str:
    path = os.path.join(ws, ".tmp")
    os.makedirs(path, exist_ok=True)
    return path


def _launch_plan(
    kind: str, command: str, ws: str, policy: SandboxPolicy, env: dict[str, str]
) -> tuple[list[str], Callable[[], None], int | None]:
    """argv, the preexec hook, and an fd to close once the child is started: bwrap's seccomp
    program (passed to it) or Landlock's ruleset (used by the hook, closed at exec).

    Everything that allocates or may fail is done here in the parent, so the hook that runs
    between fork and exec only makes system calls (forking a threaded Python is fragile).
    Without network, both kinds also get the seccomp filter of agent.safety.seccomp.
    """
    limits = _rlimits(policy)
    filtered = not policy.network and seccomp.supported()
    if kind == "bwrap":
        fd = seccomp.program_fd() if filtered else None
        argv = _bwrap_argv(command, ws, policy, env, seccomp_fd=fd)
        return argv, functools.partial(_apply_limits, limits), fd
    shell = ["/bin/sh", "-c", command]
    if kind == "none":
        return shell, functools.partial(_apply_limits, limits), None
    ruleset_fd = _landlock_ruleset(ws, policy.network)
    fprog = seccomp.prepared(seccomp.program()) if filtered else None
    return shell, functools.partial(_enter_landlock, limits, ruleset_fd, fprog), ruleset_fd


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


# --- rlimits and capabilities --------------------------------------------------------------------


def _rlimits(policy: SandboxPolicy) -> list[tuple[int, int]]:
    wanted = [
        (resource.RLIMIT_AS, policy.memory_bytes),
        (resource.RLIMIT_NPROC, policy.max_procs),
        (resource.RLIMIT_FSIZE, policy.file_size_bytes),
        (resource.RLIMIT_CORE, 0),
    ]
    limits = []
    for which, value in wanted:
        hard = resource.getrlimit(which)[1]
        limits.append((which, value if hard == resource.RLIM_INFINITY else min(value, hard)))
    return limits


def _apply_limits(limits: list[tuple[int, int]]) -> None:
    for which, value in limits:
        resource.setrlimit(which, (value, value))


def _drop_capabilities() -> None:
    """Empty the bounding and ambient sets, so even a root caller's command execs with no caps."""
    for cap in range(64):
        _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)  # EINVAL past the last cap, EPERM when unprivileged
    _libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)


# --- bubblewrap ----------------------------------------------------------------------------------


def _bwrap_argv(
    command: str, ws: str, policy: SandboxPolicy, env: Mapping[str, str], *, seccomp_fd: int | None = None
) -> list[str]:
    hidden = _hidden_paths(policy)
    above = [path for path in hidden if not _beneath(path, ws)]
    inside = [path for path in hidden if _beneath(path, ws)]
    # /tmp is bounded like one file: a tmpfs is RAM, and RLIMIT_FSIZE alone does not cap the total
    argv = [
        shutil.which("bwrap") or "bwrap",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--size",
        str(policy.file_size_bytes),
        "--tmpfs",
        "/tmp",
    ]
    argv += _private_run(policy.network)
    for path in above:
        argv += _mask(path)
    argv += ["--bind", ws, ws]  # after the masks, so a workspace under a hidden dir stays usable
    for path in inside:
        argv += _mask(path)
    argv += [arg for path in hidden if os.path.isdir(path) for arg in ("--remount-ro", path)]
    argv += [
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--cap-drop",
        "ALL",
        "--new-session",
        "--die-with-parent",
        "--chdir",
        ws,
        "--clearenv",
    ]
    if not policy.network:
        argv.append("--unshare-net")
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    for name, value in env.items():
        argv += ["--setenv", name, value]
    return argv + ["--", "/bin/sh", "-c", command]


def _private_run(network: bool) -> list[str]:
    """An empty /run: the host's service sockets live there (docker, databases, D-Bus), and a
    read-only bind does not stop connect(2). With network granted, the resolver's file comes back."""
    argv = ["--size", str(1 << 20), "--tmpfs", "/run"]
    resolv = os.path.realpath("/etc/resolv.conf")
    if network and resolv.startswith("/run/") and os.path.exists(resolv):
        argv += ["--ro-bind", resolv, resolv]
    return argv


def _hidden_paths(policy: SandboxPolicy) -> list[str]:
    wanted = [*policy.hide, os.environ.get("CREDENTIALS_DIRECTORY", "")]
    # a path that does not exist has nothing to hide, and bwrap could not mount over it
    return sorted({os.path.realpath(path) for path in wanted if path and os.path.lexists(path)})


def _beneath(path: str, ws: str) -> bool:
    return path != ws and path.startswith(ws.rstrip("/") + "/")


def _mask(path: str) -> list[str]:
    return ["--tmpfs", path] if os.path.isdir(path) else ["--ro-bind", "/dev/null", path]


# --- Landlock ------------------------------------------------------------------------------------


def _landlock_ruleset(ws: str, network: bool) -> int:
    """A ruleset fd: read/execute everywhere, everything in the workspace, write to /dev/null."""
    abi = landlock_abi()
    fs_all = (1 << 15) - 1 | (_FS_IOCTL_DEV if abi >= 5 else 0)  # ABI 1-3 rights, plus IOCTL_DEV from 5
    net = _NET_BIND_TCP | _NET_CONNECT_TCP if abi >= 4 and not network else 0  # handled + no rule = denied
    scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if abi >= 6 else 0
    attr = _RulesetAttr(fs_all, net, scoped)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8  # the struct grew with the ABI; older kernels want less
    ruleset = _syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    try:
        _allow(ruleset, "/", _FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR)
        _allow(ruleset, ws, fs_all)
        _allow(ruleset, "/dev/null", (_FS_READ_FILE | _FS_WRITE_FILE | _FS_TRUNCATE | _FS_IOCTL_DEV) & fs_all)
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset


def _allow(ruleset: int, path: str, access: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        rule = _PathBeneathAttr(access, fd)
        _syscall(
            _SYS_ADD_RULE,
            ctypes.c_int(ruleset),
            ctypes.c_int(_RULE_PATH_BENEATH),
            ctypes.byref(rule),
            ctypes.c_uint32(0),
        )
    finally:
        os.close(fd)


def _enter_landlock(limits: list[tuple[int, int]], ruleset: int, fprog: seccomp.Prepared | None) -> None:
    """Runs in the child between fork and exec; an exception here aborts the launch."""
    _apply_limits(limits)
    _drop_capabilities()
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:  # the kernel demands it before restrict_self
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    _syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    if fprog is not None:
        seccomp.install(fprog[0])
