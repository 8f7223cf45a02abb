"""How a claimed request's run is started: a systemd unit per run, or a local process per run.

    SystemdLauncher   `systemctl start --no-block hearth-agent@<id>.service`; systemd runs
                      `hearth agent <id>` inside the unit's sandbox (one unit per run).
    LocalLauncher     a process per run, forked from a fork server that has hearth imported
                      already (starting is milliseconds, not a fresh interpreter), at most
                      `concurrency` at once. For hosts without systemd and for development.
                      A swarm waiting for its children (live state `waiting`) holds no slot:
                      otherwise a swarm could wait forever for children that cannot start.

`heal_spawn_units()` is what `hearth enqueue` does on a systemd host so a launch is never
swallowed: failed spawn units are reset, the spawner runs now, the path unit is re-armed.
systemctl is found on PATH like any program (tests put a recording fake first).
"""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.connection
import os
import select
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Protocol

from hearth.errors import HearthError
from hearth.settings import Settings

SPAWN_PATH = "hearth-spawn.path"
SPAWN_SERVICE = "hearth-spawn.service"
STOP_GRACE_S = 30.0  # a stopped run records `interrupted` within this, or is killed


def agent_unit(request_id: str) -> str:
    return f"hearth-agent@{request_id}.service"


class LaunchError(HearthError):
    """A run could not be started; str() is one line naming what failed."""


class Launcher(Protocol):
    def free_slots(self) -> int | None: ...  # None: no limit here (systemd schedules)
    def start(self, request_id: str) -> None: ...
    def wait(self, fds: Sequence[int], timeout: float | None) -> None: ...
    def reap(self) -> list[tuple[str, int | None]]: ...  # runs that ended: (id, exit code)
    def running(self) -> list[str]: ...
    def stop(self) -> None: ...


def systemd_booted() -> bool:
    """The test systemd itself uses (sd_booted): this directory exists only under systemd."""
    return os.path.isdir("/run/systemd/system")


def systemctl(*args: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["systemctl", *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
    except FileNotFoundError:
        raise LaunchError("systemctl is not on PATH; use `hearth spawn --local` or `hearth watch`") from None
    except subprocess.TimeoutExpired:
        raise LaunchError(f"systemctl {' '.join(args)} did not answer in {timeout:.0f} s") from None


def _must(*args: str) -> None:
    done = systemctl(*args)
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}").splitlines()[0]
        raise LaunchError(f"systemctl {' '.join(args)} failed: {said}")


class SystemdLauncher:
    def free_slots(self) -> int | None:
        return None

    def start(self, request_id: str) -> None:
        _must("start", "--no-block", agent_unit(request_id))

    def wait(self, fds: Sequence[int], timeout: float | None) -> None:
        select.select(list(fds), [], [], timeout)  # with no fds: a plain sleep

    def reap(self) -> list[tuple[str, int | None]]:
        return []

    def running(self) -> list[str]:
        return []  # systemd owns the runs; the sweep finds the ones that died

    def stop(self) -> None:
        pass


@dataclass
class Healing:
    actions: list[str] = field(default_factory=list)
    warning: str | None = None


def heal_spawn_units() -> Healing:
    """Clear failed spawn units, run the spawner now, re-arm the path unit; LaunchError if it cannot."""
    states = systemctl("is-failed", SPAWN_PATH, SPAWN_SERVICE).stdout.split()
    if len(states) != 2:
        raise LaunchError(f"systemctl is-failed {SPAWN_PATH} {SPAWN_SERVICE} gave {states!r}")
    path_state, _ = states
    failed = [unit for unit, state in zip((SPAWN_PATH, SPAWN_SERVICE), states) if state == "failed"]
    if not failed:
        warning = (
            None
            if path_state == "active"
            else (f"{SPAWN_PATH} is {path_state}: the request waits until it is started (systemctl start {SPAWN_PATH})")
        )
        return Healing(warning=warning)
    _must("reset-failed", *failed)
    _must("start", "--no-block", SPAWN_SERVICE)
    _must("restart", SPAWN_PATH)
    return Healing([f"reset-failed {' '.join(failed)}", f"started {SPAWN_SERVICE}", f"re-armed {SPAWN_PATH}"])


def _waiting(state_file: Path) -> bool:
    """The run's live state says it waits for other runs (a swarm for its children)."""
    try:
        return bool(json.loads(state_file.read_bytes()).get("state") == "waiting")
    except (OSError, ValueError, AttributeError):
        return False


class LocalLauncher:
    """Runs as local processes; their output goes to <state_dir>/logs/<id>.log."""

    def __init__(self, settings: Settings, concurrency: int) -> None:
        self.settings = settings
        self.concurrency = max(1, concurrency)
        self.logs = settings.state_dir / "logs"
        self._context = multiprocessing.get_context("forkserver")
        # The server imports hearth once and warms what every run would set up; a run is then a
        # fork, not a new interpreter. (Each child re-runs `__main__`, the CLI: its commands are
        # preloaded so that is cheap; hearth.cli itself is not, or runpy warns about it.)
        self._context.set_forkserver_preload(["hearth.commands", "hearth.dispatch.claimed", "hearth.dispatch.warmup"])
        self._procs: dict[str, BaseProcess] = {}

    def free_slots(self) -> int | None:
        if not self._procs:
            return self.concurrency
        waiting = sum(1 for rid in self._procs if _waiting(self.settings.runs_state_dir / f"{rid}.json"))
        return self.concurrency - len(self._procs) + waiting

    def start(self, request_id: str) -> None:
        from hearth.dispatch.claimed import run_child

        self.logs.mkdir(parents=True, exist_ok=True)
        log = str(self.logs / f"{request_id}.log")
        proc = self._context.Process(
            target=run_child, args=(request_id, self.settings, log), name=f"hearth-agent@{request_id}"
        )
        try:
            proc.start()
        except OSError as exc:
            raise LaunchError(f"could not start a local run for {request_id}: {exc}") from None
        self._procs[request_id] = proc

    def wait(self, fds: Sequence[int], timeout: float | None) -> None:
        sentinels = [proc.sentinel for proc in self._procs.values()]
        multiprocessing.connection.wait([*sentinels, *fds], timeout)

    def reap(self) -> list[tuple[str, int | None]]:
        ended = [(rid, proc) for rid, proc in self._procs.items() if not proc.is_alive()]
        for rid, _ in ended:
            del self._procs[rid]
        results = [(rid, proc.exitcode) for rid, proc in ended]
        for _, proc in ended:
            proc.close()
        return results

    def running(self) -> list[str]:
        return list(self._procs)

    def stop(self) -> None:
        """SIGTERM every run (each records `interrupted`), wait, then kill what is left."""
        for proc in self._procs.values():
            proc.terminate()
        for proc in self._procs.values():
            proc.join(STOP_GRACE_S)
            if proc.is_alive():
                proc.kill()
                proc.join()
