"""The launcher seam: everything about where a run executes, behind one Protocol and one table.

A claimed request becomes a run through a `Launcher`. It owns, for the runs it starts:

    start(id)            begin the run of a claimed request (LaunchError if it cannot)
    free_slots()         how many more may start now; None: no limit here (systemd schedules)
    wait(fds, timeout)   sleep until a run of its ends, an fd is readable or the timeout passes
    reap()               runs of its that ended since the last call: (id, exit code)
    running()            the runs this process waits for (the spawner stays while there are any)
    alive(run_id)        whether a run's process may still go: what settle asks before it
                         records a run `interrupted` (hearth/dispatch/settle.py), and what
                         `hearth state` shows. A run of this host holding its flock is alive
                         whichever launcher is asked (`held_here`, hearth/dispatch/launchers/host.py)
    gone(run_id)         for a run it calls not alive that is still recorded running: None when
                         the run's process simply went (settle resumes it once or records it
                         interrupted), or the reason it was lost where it ran (a fleet's worker
                         died), which settles it `interrupted` with that reason, never resumed
    stop(run_id, grace)  make one run's process go (`hearth stop`); how it went:
                         systemd | signal | killed | cancelled (there was no process)
    shutdown()           the spawner is ending: what becomes of the runs it started
    heal()               a request was just queued: make sure something will start it; one
                         note per thing done (LaunchError if it cannot tell)
    live()               the live state of runs it started that this host's state directory
                         does not hold (a run on another machine); this host's own are read there

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
the methods above whose constructor takes `(settings, concurrency)`, and add
`"name": "package.module:Class"` to `LAUNCHERS` (or call `register("name", ...)`, which is how
tests/remote_launcher.py is added at test time). HEARTH_LAUNCHER=name then selects it.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol

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
    def free_slots(self) -> int | None: ...
    def wait(self, fds: Sequence[int], timeout: float | None) -> None: ...
    def reap(self) -> list[tuple[str, int | None]]: ...
    def running(self) -> list[str]: ...
    def alive(self, run_id: str) -> bool: ...
    def gone(self, run_id: str) -> str | None: ...
    def stop(self, run_id: str, grace_s: float) -> str: ...
    def shutdown(self) -> None: ...
    def heal(self) -> list[str]: ...
    def live(self) -> list[dict[str, Any]]: ...


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


def here_or_fleet(settings: Settings) -> str:
    """What `hearth watch` and `hearth serve --watch` start runs with: forked processes here (they
    are for hosts without systemd), or, on a hub of several boxes, the fleet's workers."""
    return "celery" if settings.launcher == "celery" else "local"


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
