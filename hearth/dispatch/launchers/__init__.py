"""The launcher seam: everything about where a run executes, behind one Protocol and one table.

A claimed request becomes a run through a `Launcher`. Every launcher does these, for the runs it
starts, wherever they execute:

    start(id)            begin the run of a claimed request (LaunchError if it cannot)
    stop(run_id, grace)  make one run's process go (`hearth stop`); how it went:
                         systemd | signal | killed | cancelled (there was no process)
    alive(run_id)        whether a run's process may still go: what settle asks before it
                         records a run `interrupted` (hearth/dispatch/settle.py), and what
                         `hearth state` shows. A run of this host holding its flock is alive
                         whichever launcher is asked (`held_here`, hearth/dispatch/launchers/host.py)
    gone(run_id)         for a run it calls not alive that is still recorded running: None when
                         the run's process simply went (settle resumes it once or records it
                         interrupted), or the reason it was lost where it ran (a fleet's worker
                         died), which settles it `interrupted` with that reason, never resumed
    live()               the live state of runs it started that this host's state directory
                         does not hold (a run on another machine); this host's own are read there
    heal()               a request was just queued: make sure something will start it; one
                         note per thing done (LaunchError if it cannot tell)

What a launcher adds, when it is so, is its own small Protocol; the callers ask for it through
one helper each and never by the launcher's name:

    Paced                a limit on how many start now: free_slots() (None: no limit here) and
                         wait(fds, timeout), sleeping until that may change (the local row's
                         concurrency; a broker that does not answer, the celery row)
    LocalProcesses       Paced, and runs that are this process's children: reap() (those that
                         ended: id, exit code), running() (the spawner stays while there are
                         any) and shutdown() (the spawner is ending: what becomes of them)
    Remote               runs on other machines, which report back through the hub's door:
                         door() is its path on the command center (hearth/remote/); the command
                         center mounts it, and `hearth watch` hands such requests to this launcher

`processes_of(launcher)` is the launcher as LocalProcesses, or `Detached` (no limit, no children,
a plain sleep) for one that owns no process here (systemd's units, a fleet's workers), with its
pace where it is Paced; `door_of(launcher)` is its door or None (`door_for(settings)`: the
chosen launcher's), which is how the command center knows to mount it.

The rows (`LAUNCHERS`) name a factory `(settings, concurrency) -> Launcher` by import path, so
resolving one loads only that row's module:

    systemd   hearth/dispatch/launchers/systemd.py: a `hearth-agent@<id>.service` unit per run
    local     hearth/dispatch/launchers/local.py: a forked process per run (`hearth spawn --local`,
              `hearth watch`, `hearth serve --watch`), for hosts without systemd
    celery    hearth/fleet/launcher.py: a hub's; each request goes through Celery to a worker
              (`hearth worker`) on another box

`launcher_for(settings)` resolves HEARTH_LAUNCHER (`auto`: systemd where this host runs it, else
local); a name not in the table is a ConfigError that lists what exists (as mini-swe-agent
resolves its environments). Nothing outside this package asks which launcher runs.

Adding a launcher (runs on another machine, say) is one module and one row: write a class with
the six methods (and what it adds of the above) whose constructor takes `(settings, concurrency)`,
and add `"name": "package.module:Class"` to `LAUNCHERS` (or call `register("name", ...)`, which is
how tests/remote_launcher.py is added at test time). HEARTH_LAUNCHER=name then selects it.
docs/fleet.md says how a Nomad or Kubernetes job would be one.
"""

from __future__ import annotations

import importlib
import os
import re
import select
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from hearth.errors import ConfigError, HearthError
from hearth.settings import Settings

STOP_GRACE_S = 30.0  # a stopped run records `interrupted` within this, or is killed
AUTO = "auto"
NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")


class LaunchError(HearthError):
    """A run could not be started, stopped or checked; str() is one line naming what failed."""


class Launcher(Protocol):
    """Where runs execute; each method is described in this module's docstring."""

    def start(self, request_id: str) -> None: ...
    def stop(self, run_id: str, grace_s: float) -> str: ...
    def alive(self, run_id: str) -> bool: ...
    def gone(self, run_id: str) -> str | None: ...
    def live(self) -> list[dict[str, Any]]: ...
    def heal(self) -> list[str]: ...


@runtime_checkable
class Paced(Protocol):
    """A launcher with a limit on how many of its runs start now."""

    def free_slots(self) -> int | None: ...
    def wait(self, fds: Sequence[int], timeout: float | None) -> None: ...


@runtime_checkable
class LocalProcesses(Paced, Protocol):
    """A launcher whose runs are this process's children."""

    def reap(self) -> list[tuple[str, int | None]]: ...
    def running(self) -> list[str]: ...
    def shutdown(self) -> None: ...


@runtime_checkable
class Remote(Protocol):
    """A launcher whose runs execute on other machines and report back through the hub's door."""

    def door(self) -> str: ...


class Detached:
    """What the spawner needs of a launcher that owns no process here: no children to reap or
    wait for, and no limit but the one its `pace` (when it is Paced) keeps."""

    def __init__(self, pace: Paced | None = None) -> None:
        self.pace = pace

    def free_slots(self) -> int | None:
        return self.pace.free_slots() if self.pace else None

    def wait(self, fds: Sequence[int], timeout: float | None) -> None:
        if self.pace:
            self.pace.wait(fds, timeout)
        else:
            select.select(list(fds), [], [], timeout)  # with no fds: a plain sleep

    def reap(self) -> list[tuple[str, int | None]]:
        return []

    def running(self) -> list[str]:
        return []  # its runs are not ours: a sweep settles the ones that were lost

    def shutdown(self) -> None:
        pass  # they go on without the spawner


def processes_of(launcher: Launcher) -> LocalProcesses:
    """The launcher's runs as the spawner paces, reaps and waits for them (see `Detached`)."""
    if isinstance(launcher, LocalProcesses):
        return launcher
    return Detached(launcher if isinstance(launcher, Paced) else None)


def door_of(launcher: Launcher) -> str | None:
    """Where the launcher's runs on other machines report back (the command center mounts it); None
    for a launcher whose runs execute here."""
    return launcher.door() if isinstance(launcher, Remote) else None


Factory = Callable[[Settings, int | None], Launcher]

# name -> "module:attribute" of its factory (or the factory itself, for a row added at run time)
LAUNCHERS: dict[str, str | Factory] = {
    "systemd": "hearth.dispatch.launchers.systemd:SystemdLauncher",
    "local": "hearth.dispatch.launchers.local:LocalLauncher",
    "celery": "hearth.fleet.launcher:CeleryLauncher",
}


def register(name: str, row: str | Factory) -> None:
    """Add (or replace) a row of the table: `name` becomes a value HEARTH_LAUNCHER accepts."""
    if not NAME.fullmatch(name) or name == AUTO:
        raise ValueError(f"a launcher name is 1-32 of a-z 0-9 _ - starting with a letter, not {AUTO!r}; got {name!r}")
    LAUNCHERS[name] = row


def launcher_for(settings: Settings, name: str | None = None, *, concurrency: int | None = None) -> Launcher:
    """The launcher `name` (default HEARTH_LAUNCHER) names; ConfigError listing the rows if none does."""
    name = name or settings.launcher
    if name == AUTO:
        name = "systemd" if systemd_booted() else "local"
    row = LAUNCHERS.get(name)
    if row is None:
        there = ", ".join([AUTO, *LAUNCHERS])
        raise ConfigError(f"HEARTH_LAUNCHER names no launcher {name!r}; there are: {there}")
    factory = _load(name, row) if isinstance(row, str) else row
    return factory(settings, concurrency)


def door_for(settings: Settings) -> str | None:
    """The door of the launcher HEARTH_LAUNCHER names (`door_of`); None too when it names none: that
    error is said where the launcher starts runs, not by every reader that asks."""
    try:
        return door_of(launcher_for(settings))
    except ConfigError:
        return None


def here_or_fleet(settings: Settings) -> str:
    """What `hearth watch` and `hearth serve --watch` start runs with: forked processes here (they
    are for hosts without systemd), or, where the chosen launcher runs them on other machines (a
    hub of several boxes), that launcher."""
    return settings.launcher if door_for(settings) is not None else "local"


def _load(name: str, path: str) -> Factory:
    module, _, attribute = path.partition(":")
    try:
        found: Factory = getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"launcher {name!r} names {path}, which cannot be loaded: {exc}") from None
    return found


def heal(settings: Settings) -> list[str]:
    """What `hearth enqueue` and the command center do after queueing: the launcher makes sure the
    request will be seen (never swallow a launch); one note per thing done, never an error."""
    try:
        return launcher_for(settings).heal()
    except (LaunchError, ConfigError) as exc:
        return [f"queued, but the launcher could not be checked: {exc}"]


def systemd_booted() -> bool:
    """The test systemd itself uses (sd_booted): this directory exists only under systemd."""
    return os.path.isdir("/run/systemd/system")
