"""The `systemd` row: `systemctl start --no-block hearth-agent@<id>.service`, one unit per run.

systemd runs `hearth agent <id>` inside the unit's sandbox (nix/units.nix) and owns the run from
then on: the spawner waits for none of them, and a unit that died is found by the next sweep.
The unit runs on this host, so `alive` is the run's flock (hearth/dispatch/launchers/host.py).
`stop` is `systemctl stop` (SIGTERM, then systemd's SIGKILL after the unit's TimeoutStopSec).

`heal()` is what `hearth enqueue` does on a systemd host so a launch is never swallowed: failed
spawn units are reset, the spawner runs now, the path unit is re-armed. systemctl is found on
PATH like any program (tests put a recording fake first).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from typing import Any

from hearth.dispatch.launchers import STOP_GRACE_S, LaunchError
from hearth.dispatch.launchers.host import held_here
from hearth.settings import Settings

SPAWN_PATH = "hearth-spawn.path"
SPAWN_SERVICE = "hearth-spawn.service"


def agent_unit(request_id: str) -> str:
    return f"hearth-agent@{request_id}.service"


def systemctl(*args: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["systemctl", *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
    except FileNotFoundError:
        raise LaunchError("systemctl is not on PATH; use `hearth spawn --local` or `hearth watch`") from None
    except subprocess.TimeoutExpired:
        raise LaunchError(f"systemctl {' '.join(args)} did not answer in {timeout:.0f} s") from None


def _must(*args: str, timeout: float = 30.0) -> None:
    done = systemctl(*args, timeout=timeout)
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}").splitlines()[0]
        raise LaunchError(f"systemctl {' '.join(args)} failed: {said}")


class SystemdLauncher:
    """A Launcher alone: systemd owns the runs (the spawner waits for none, the sweep finds the ones that
    died) and schedules them (no limit here)."""

    def __init__(self, settings: Settings, concurrency: int | None = None) -> None:
        self.settings = settings  # systemd schedules: `concurrency` is the units' business

    def start(self, request_id: str) -> None:
        _must("start", "--no-block", agent_unit(request_id))

    def alive(self, run_id: str) -> bool:
        return held_here(self.settings, run_id)

    def gone(self, run_id: str) -> str | None:
        return None  # its process went; settle says so (or resumes it once)

    def stop(self, run_id: str, grace_s: float) -> str:
        _must("stop", agent_unit(run_id), timeout=STOP_GRACE_S + 30)  # the unit's own grace applies
        return "systemd"

    def heal(self) -> list[str]:
        healing = heal_spawn_units()
        notes = [f"launcher healed: {action}" for action in healing.actions]
        return notes + ([f"warning: {healing.warning}"] if healing.warning else [])

    def live(self) -> list[dict[str, Any]]:
        return []  # the units write this host's state directory


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
