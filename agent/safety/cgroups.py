"""A cgroup per run: its commands' processes and memory capped by the kernel, whoever runs hearth.

RLIMIT_NPROC does not bind root (the kernel skips it for uid 0), so a fork loop started by hearth
running as root used to go on past any limit. A cgroup's pids.max binds everyone. Where one is made:

- ``delegated``: hearth runs in a systemd unit with ``Delegate=`` (the hearth-agent@ unit, which
  says so with HEARTH_CGROUP_DELEGATED=1, or systemd's ``DelegateSubgroup=supervisor``): the
  unit's cgroup is hearth's to divide, so hearth moves itself into ``<unit>/supervisor`` (a
  cgroup with processes cannot hand controllers to children) and the run's commands get
  ``<unit>/commands`` beside it;
- ``root``: hearth runs as root on a cgroup v2 host: ``<cgroup root>/hearth.runs/<run>``;
- ``v1``: a cgroup v1 (or hybrid) host where hearth may write: ``<own cgroup>/hearth-<run>`` in
  the pids, memory and (if there) cpuacct hierarchies;
- none: no cgroup could be made (an ordinary user outside a delegated unit, a read-only
  cgroupfs). Commands then rely on the user namespace's uid: for a user other than root,
  RLIMIT_NPROC is enforced; for root it is not, which the run records.

Limits: pids.max, memory.max (v1: memory.limit_in_bytes) and no swap. A command joins the cgroup
between fork and exec (writing 0 to cgroup.procs through an fd opened before), so nothing it
starts is ever outside. The counters say afterwards whether the kernel refused a fork (pids
events) or killed for memory (oom_kill), and how much CPU the run's commands used.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Counters", "RunCgroup", "counters", "create", "kill_all"]

_REMOVE_TRIES = 50  # rmdir waits for the kernel to reap what kill_all killed: a bounded retry
STALE_S = 7 * 24 * 3600  # an empty run cgroup made this long ago was left by a hearth that was killed


@dataclass(frozen=True)
class Counters:
    pids_refused: int  # forks the kernel refused at pids.max
    oom_kills: int  # processes killed at the memory cap
    cpu_s: float  # CPU time used by everything that ran in the cgroup


@dataclass(frozen=True)
class RunCgroup:
    dirs: tuple[str, ...]  # v2: one directory; v1: one per hierarchy
    where: str  # delegated | root | v1
    max_procs: int
    memory_bytes: int

    def counters(self) -> Counters:
        return counters(self.dirs)

    def remove(self) -> None:
        """Kill whatever is left and remove the directories (the run is over)."""
        for directory in self.dirs:
            for _ in range(_REMOVE_TRIES):
                kill_all((directory,))
                try:
                    os.rmdir(directory)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)


def create(name: str, *, max_procs: int, memory_bytes: int) -> tuple[RunCgroup | None, str]:
    """The run's cgroup with its limits set, or None and the one-line reason none could be made."""
    reasons = []
    for attempt in (_delegated, _v2_as_root, _v1):
        try:
            made = attempt(name, max_procs, memory_bytes)
        except OSError as exc:
            reasons.append(f"{attempt.__name__.strip('_')}: {exc.strerror or exc}")
            continue
        if made is not None:
            return made, ""
    return None, "; ".join(reasons) or "no writable cgroup hierarchy with the pids and memory controllers"


def counters(dirs: tuple[str, ...]) -> Counters:
    refused = oom = 0
    cpu = 0.0
    for d in dirs:
        refused += _field(f"{d}/pids.events", "max")
        oom += _field(f"{d}/memory.events", "oom_kill") + _field(f"{d}/memory.oom_control", "oom_kill")
        cpu += _field(f"{d}/cpu.stat", "usage_usec") / 1e6 + _number(f"{d}/cpuacct.usage") / 1e9
    return Counters(refused, oom, cpu)


def kill_all(dirs: tuple[str, ...]) -> None:
    """SIGKILL every process in the cgroups (cgroup.kill where the kernel has it)."""
    for d in dirs:
        if os.path.exists(f"{d}/cgroup.kill"):
            _write(f"{d}/cgroup.kill", "1", missing_ok=True)
            continue
        for pid in _pids(d):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


# --- where -----------------------------------------------------------------------------------------


def _delegated(name: str, max_procs: int, memory_bytes: int) -> RunCgroup | None:
    own = _own_dir_v2()
    if own is None:
        return None
    if own.name != "supervisor":
        if os.environ.get("HEARTH_CGROUP_DELEGATED") != "1":
            return None  # not ours to divide: moving this process elsewhere would surprise its owner
        (own / "supervisor").mkdir(exist_ok=True)
        _write(f"{own}/supervisor/cgroup.procs", str(os.getpid()))
        own = own / "supervisor"
    base = own.parent
    if not os.access(base / "cgroup.subtree_control", os.W_OK):
        return None
    if not _enable(base, ("pids", "memory")):
        return None
    _enable(base, ("cpu",))  # accounting only: cpu.stat exists without it, the limit is RLIMIT_CPU
    return _made_v2(base / "commands", "delegated", max_procs, memory_bytes)


def _v2_as_root(name: str, max_procs: int, memory_bytes: int) -> RunCgroup | None:
    mount = _mounts().get("cgroup2")
    if mount is None or os.geteuid() != 0:
        return None
    root = Path(mount)
    if not _enable(root, ("pids", "memory")):
        return None
    base = root / "hearth.runs"
    base.mkdir(exist_ok=True)
    _sweep(base, "")
    if not _enable(base, ("pids", "memory")):
        return None
    return _made_v2(base / name, "root", max_procs, memory_bytes)


def _made_v2(directory: Path, where: str, max_procs: int, memory_bytes: int) -> RunCgroup:
    directory.mkdir(exist_ok=True)
    _write(f"{directory}/pids.max", str(max_procs))
    _write(f"{directory}/memory.max", str(memory_bytes))
    _write(f"{directory}/memory.swap.max", "0", missing_ok=True)
    return RunCgroup((str(directory),), where, max_procs, memory_bytes)


def _v1(name: str, max_procs: int, memory_bytes: int) -> RunCgroup | None:
    mounts, own = _mounts(), _own_paths()
    if "pids" not in mounts or "memory" not in mounts:
        return None
    dirs = []
    for controller in ("pids", "memory", "cpuacct"):
        if controller not in mounts:
            continue
        parent = Path(mounts[controller] + own.get(controller, "/"))
        _sweep(parent, "hearth-")
        directory = parent / f"hearth-{name}"
        directory.mkdir(exist_ok=True)
        dirs.append(str(directory))
    pids, memory = dirs[0], dirs[1]
    _write(f"{pids}/pids.max", str(max_procs))
    _write(f"{memory}/memory.limit_in_bytes", str(memory_bytes))
    _write(f"{memory}/memory.memsw.limit_in_bytes", str(memory_bytes), missing_ok=True)  # no swap beyond it
    return RunCgroup(tuple(dirs), "v1", max_procs, memory_bytes)


# --- the kernel's files ------------------------------------------------------------------------------


def _mounts() -> dict[str, str]:
    """'cgroup2' -> its mount point; each v1 controller -> its hierarchy's mount point."""
    found: dict[str, str] = {}
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        fields, _, tail = line.partition(" - ")
        parts, tail_parts = fields.split(), tail.split()
        if len(parts) < 5 or len(tail_parts) < 3 or parts[3] != "/":
            continue  # a bind of a subtree: paths in /proc/self/cgroup would not match it
        if tail_parts[0] == "cgroup2":
            found.setdefault("cgroup2", parts[4])
        elif tail_parts[0] == "cgroup":
            for option in tail_parts[2].split(","):
                found.setdefault(option, parts[4])
    return found


def _own_paths() -> dict[str, str]:
    """This process's cgroup path per v1 controller, and '' -> its v2 path."""
    paths: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return paths
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path
    return paths


def _own_dir_v2() -> Path | None:
    mount, path = _mounts().get("cgroup2"), _own_paths().get("")
    return Path(mount + path) if mount and path else None


def _sweep(parent: Path, prefix: str) -> None:
    """Remove run cgroups a killed hearth left behind: empty, and made over STALE_S ago (a live
    run's is empty between its commands too, so only age tells them apart)."""
    now = time.time()
    try:
        children = [c for c in parent.iterdir() if c.is_dir() and c.name.startswith(prefix)]
    except OSError:
        return
    for child in children:
        try:
            if not _read(f"{child}/cgroup.procs").strip() and now - child.stat().st_mtime > STALE_S:
                os.rmdir(child)
        except OSError:
            pass


def _enable(directory: Path, controllers: tuple[str, ...]) -> bool:
    """Make ``controllers`` available to the children of ``directory``; False if one is not there."""
    available = set(_read(f"{directory}/cgroup.controllers").split())
    if not set(controllers) <= available:
        return False
    enabled = set(_read(f"{directory}/cgroup.subtree_control").split())
    missing = [c for c in controllers if c not in enabled]
    if missing:
        _write(f"{directory}/cgroup.subtree_control", " ".join(f"+{c}" for c in missing))
    return True


def _pids(directory: str) -> list[int]:
    return [int(p) for p in _read(f"{directory}/cgroup.procs").split()]


def _read(path: str) -> str:
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return ""


def _write(path: str, value: str, *, missing_ok: bool = False) -> None:
    try:
        with open(path, "w") as handle:
            handle.write(value)
    except FileNotFoundError:
        if not missing_ok:
            raise


def _field(path: str, name: str) -> int:
    for line in _read(path).splitlines():
        key, _, value = line.partition(" ")
        if key == name and value.strip().isdigit():
            return int(value)
    return 0


def _number(path: str) -> int:
    text = _read(path).strip()
    return int(text) if text.isdigit() else 0
