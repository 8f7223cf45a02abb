"""bubblewrap: the command sandbox made of namespaces, preferred because it can make paths not exist.

The command runs as nobody (uid and gid 65534) in a new user namespace with no capabilities, in
new mount, PID, IPC and UTS namespaces, and with no network namespace of the host's: the one
agent.safety.netns made before bwrap runs, empty or, with network granted, whose only listener
is the run's proxy. Its filesystem is the allow list (agent.safety.allowlist): the
workspace read-write, the run's home at /home/nobody, a bounded private /tmp and /run, generated
/etc/passwd and /etc/group (with the allowed /etc files, one prepared directory bound at /etc),
and read-only the system paths and the operator's exposed paths. ``hide`` paths beneath any of those are masked (an empty tmpfs, /dev/null for a
file). The seccomp filter keeps the command from making namespaces of its own.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass

from agent.safety import allowlist, netns

__all__ = ["Mounts", "argv", "problem"]

_RUN_BYTES = 1 << 20


@dataclass(frozen=True)
class Mounts:
    """What one command's sandbox binds, besides the system allow list."""

    workspace: str
    home: str | None  # bound at /home/nobody; None: HOME is the workspace
    writable: tuple[str, ...] = ()
    expose: tuple[str, ...] = ()
    hide: tuple[str, ...] = ()
    tmp_bytes: int = 256 << 20


_probe: subprocess.Popen[bytes] | None = None


def start_probe() -> None:
    """Start the probe problem() waits for, so it runs beside other work (a run's first model call).

    A process that never asks problem() (a run that runs no command) still waits for its probe, or
    ends it, before it exits (end_probe, registered here): no child of hearth is left unreaped."""
    global _probe
    if _probe is None and not problem.cache_info().currsize:
        try:
            _probe = _popen_probe()
        except (OSError, subprocess.SubprocessError):  # no namespace of its own for it either
            _probe = None  # problem() runs it again and reports why
        else:
            atexit.register(end_probe)


def end_probe(grace_s: float = 2.0) -> None:
    """Wait for a started probe that nobody waited for, ending it after `grace_s`; its verdict is dropped."""
    proc = _probe
    if proc is None or proc.returncode is not None:
        return
    try:
        proc.communicate(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()


@functools.cache
def problem() -> str | None:
    """Why bwrap cannot be used here, found by really running it once, or None when it works."""
    if shutil.which("bwrap") is None:
        return "bwrap is not installed"
    try:
        proc = _probe or _popen_probe()
        _, err = proc.communicate(timeout=10)
    except (OSError, subprocess.SubprocessError) as exc:  # its start, its network namespace, its time
        return f"bwrap could not be started: {exc}"
    if proc.returncode != 0:
        detail = err.decode(errors="replace").strip().splitlines()
        return f"bwrap cannot set up namespaces here: {detail[-1] if detail else f'exit {proc.returncode}'}"
    return None


def _popen_probe() -> subprocess.Popen[bytes]:
    path = shutil.which("bwrap") or "bwrap"
    probe = [
        path,
        *_namespaces(),
        *_system(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        # `true` needs no init of bwrap's: without one the outer bwrap reaps what it started, while
        # its init would be left a zombie for the nearest subreaper (bwrap exits on init's report)
        "--as-pid-1",
        "--",
        "/bin/sh",
        "-c",
        "true",
    ]
    empty = netns.empty()  # as a command starts: in a network namespace of its own, made first
    return subprocess.Popen(
        probe, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=empty.enter
    )


def argv(
    command: str,
    mounts: Mounts,
    env: Mapping[str, str],
    *,
    seccomp_fd: int | None,
) -> list[str]:
    """The whole bwrap command line for ``/bin/sh -c command``.

    The caller puts the child in its own network namespace first (agent.safety.netns: empty, or
    whose only listener is the run's proxy), so bwrap makes none.
    """
    ws = mounts.workspace
    args = [shutil.which("bwrap") or "bwrap", *_namespaces(), *_system(), *_ETC.args()]
    args += ["--dev", "/dev", "--proc", "/proc", "--size", str(mounts.tmp_bytes), "--tmpfs", "/tmp"]
    for path in mounts.expose:
        if os.access(path, os.R_OK):  # what hearth itself cannot read, no command could use either
            args += ["--ro-bind", path, path]
    for path in mounts.writable:
        args += ["--bind", path, path]
    if mounts.home is not None:
        args += ["--bind", mounts.home, allowlist.SANDBOX_HOME]
    hidden = _hidden(mounts)
    inside = [path for path in hidden if _beneath(path, ws)]
    for path in (p for p in hidden if p not in inside):
        args += _mask(path)
    args += ["--bind", ws, ws]  # after the masks, so a workspace under a hidden dir stays usable
    for path in inside:
        args += _mask(path)
    args += [arg for path in hidden if os.path.isdir(path) for arg in ("--remount-ro", path)]
    args += ["--remount-ro", "/"]  # the directories bwrap made to hold the mounts are not scratch space
    args += ["--new-session", "--die-with-parent", "--cap-drop", "ALL", "--chdir", ws, "--clearenv"]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    for name, value in env.items():
        args += ["--setenv", name, value]
    return args + ["--", "/bin/sh", "-c", command]


def _namespaces() -> list[str]:
    uid, gid = str(allowlist.SANDBOX_UID), str(allowlist.SANDBOX_GID)
    # no --disable-userns: the seccomp filter already refuses unshare, setns, clone with CLONE_NEW*
    # and clone3, and bwrap's way (a second, locked user namespace) costs every command ~1.5 ms
    args = ["--unshare-user", "--uid", uid, "--gid", gid]
    # no cgroup namespace: /sys is not mounted, so it would only hide the run's cgroup path in
    # /proc/self/cgroup, and making one in the run's cgroup costs a command ~10 ms
    # no network namespace: agent.safety.netns made the command's (bwrap's would bring its loopback
    # up over rtnetlink, a socket family hearth's units otherwise never need)
    return [*args, "--unshare-pid", "--unshare-ipc", "--unshare-uts"]


@functools.cache
def _system() -> tuple[str, ...]:
    """The read-only system part, the same for every command: computed once per process."""
    args: list[str] = []
    for path, link in allowlist.system_paths():
        if path == "/run/current-system":
            continue  # goes on the private /run below
        args += ["--symlink", link, path] if link is not None else ["--ro-bind", path, path]
    args += ["--size", str(_RUN_BYTES), "--tmpfs", "/run"]  # the host's service sockets live in /run
    if os.path.exists("/run/current-system"):
        args += ["--symlink", os.path.realpath("/run/current-system"), "/run/current-system"]
    return tuple(args)


class _EtcView:
    """/etc for commands as one prepared directory bound at /etc: copies of the allowed files and
    directories (symlinks kept as symlinks: their targets are in the system paths) and the
    generated passwd and group. One mount instead of twenty (each costs a command ~0.3 ms, more in
    a cgroup); remade when an entry changes (resolv.conf does, with DHCP). A directory of many
    entries (ssl/certs, alternatives: hundreds of links, slow to recreate) is bound as it is.

    The directory is named after what it holds (hearth-etc-<uid>-<digest> in the temp directory),
    so every hearth process of this user shares it and none leaves one behind; one that is not
    this user's own, or is writable by others, is never used."""

    def __init__(self) -> None:
        self.directory: str | None = None
        self.bound: list[str] = []
        self.stamp: tuple[tuple[str, int, int], ...] = ()

    def args(self) -> list[str]:
        entries = allowlist.etc_paths()
        stamp = self.stamp_of(entries)
        if self.directory is None or stamp != self.stamp or not os.path.isdir(self.directory):
            self.stamp = stamp
            self._make(entries)
        assert self.directory is not None
        return ["--ro-bind", self.directory, "/etc", *(a for p in self.bound for a in ("--ro-bind", p, p))]

    def _make(self, entries: tuple[str, ...]) -> None:
        digest = hashlib.sha256(repr((self.VERSION, self.stamp_of(entries), allowlist.SANDBOX_HOME)).encode())
        final = os.path.join(tempfile.gettempdir(), f"hearth-etc-{os.geteuid()}-{digest.hexdigest()[:16]}")
        if not _ours(final):
            made = tempfile.mkdtemp(prefix="hearth-etc-new-")
            bound = self._fill(made, entries)
            with open(os.path.join(made, ".bound"), "w") as handle:
                handle.write("\n".join(bound))
            try:
                os.rename(made, final)
            except OSError:  # another process made it first (or a stranger's is in the way)
                shutil.rmtree(made, ignore_errors=True)
            if not _ours(final):
                raise OSError(f"{final} is not this user's own directory; remove it")
        with open(os.path.join(final, ".bound")) as handle:
            self.directory, self.bound = final, [p for p in handle.read().split("\n") if p]

    VERSION = 1  # of the layout below: a new one makes a new directory

    @staticmethod
    def stamp_of(entries: tuple[str, ...]) -> tuple[tuple[str, int, int], ...]:
        return tuple((p, *_stat(p)) for p in entries)

    def _fill(self, made: str, entries: tuple[str, ...]) -> list[str]:
        os.chmod(made, 0o755)
        bound = []
        for path in entries:
            target = os.path.join(made, path.removeprefix("/etc/"))
            os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
            if os.path.islink(path) and _system_target(path):
                os.symlink(os.readlink(path), target)  # /etc/static -> the store, /etc/localtime -> zoneinfo
            elif os.path.isdir(path) and _entries(path) <= _COPY_ENTRIES:
                _copy_tree(path, target)
            elif os.path.isdir(path):
                os.makedirs(target, mode=0o755, exist_ok=True)  # the mount point of its bind
                bound.append(path)
            else:
                shutil.copyfile(path, target)
                os.chmod(target, 0o644)
        for name, data in (("passwd", allowlist.passwd(allowlist.SANDBOX_HOME)), ("group", allowlist.group())):
            with open(os.path.join(made, name), "wb") as handle:
                handle.write(data)
            os.chmod(os.path.join(made, name), 0o644)
        return bound


def _ours(path: str) -> bool:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o022


_COPY_ENTRIES = 64


def _system_target(link: str) -> bool:
    target = os.path.realpath(link)
    return any(target == p or target.startswith(p + "/") for p, _ in allowlist.system_paths())


def _copy_tree(source: str, target: str) -> None:
    """Files copied, symlinks kept as they are, nothing else (no sockets, devices, metadata)."""
    os.makedirs(target, mode=0o755, exist_ok=True)
    with os.scandir(source) as entries:
        for entry in entries:
            into = os.path.join(target, entry.name)
            if entry.is_symlink():
                os.symlink(os.readlink(entry.path), into)
            elif entry.is_dir():
                _copy_tree(entry.path, into)
            elif entry.is_file():
                shutil.copyfile(entry.path, into)


def _entries(directory: str, limit: int = 10_000) -> int:
    count = 0
    for _, dirs, files in os.walk(directory):
        count += len(dirs) + len(files)
        if count > limit:
            break
    return count


def _stat(path: str) -> tuple[int, int]:
    try:
        info = os.stat(path)
    except OSError:
        return (0, 0)
    return (info.st_mtime_ns, info.st_size)


_ETC = _EtcView()


def _hidden(mounts: Mounts) -> list[str]:
    """``hide`` paths (and $CREDENTIALS_DIRECTORY) that lie beneath something bound: masked.
    Anything else is not in the sandbox at all."""
    wanted = [*mounts.hide, os.environ.get("CREDENTIALS_DIRECTORY", "")]
    bound = [mounts.workspace, *mounts.expose, *mounts.writable, *(p for p, _ in allowlist.system_paths())]
    real = sorted({os.path.realpath(p) for p in wanted if p and os.path.lexists(p)})
    return [p for p in real if any(_beneath(p, b) for b in bound)]


def _mask(path: str) -> list[str]:
    return ["--tmpfs", path] if os.path.isdir(path) else ["--ro-bind", "/dev/null", path]


def _beneath(path: str, base: str) -> bool:
    return path != base and path.startswith(base.rstrip("/") + "/")
