"""A launcher that runs each request the way another machine would: one module, added as one row.

`register("remote", "tests.remote_launcher:RemoteLauncher")` (hearth/dispatch/launchers/) is all
hearth is told. A run is shipped to "the other machine", a directory beside the state directory
with its own state: its own queue (the request lands in its claimed/), its own locks, live state
files and workspaces. `hearth agent ID` runs there as a subprocess in its own session, so no
process of this host holds the run's flocks here: only this launcher can say it is alive, from
the pid it keeps and the live state the other machine writes.

Its audit is the one file both share (standing in for the recorder a real remote machine would
ship its events through). Like systemd it owns its runs once started: the spawner waits for none.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from hearth.dispatch.launchers.host import held_here, signal_then_kill
from hearth.queue.directory import Queue
from hearth.run.state import read_states
from hearth.settings import Settings

ROOT = Path(__file__).resolve().parent.parent


def elsewhere(settings: Settings) -> Path:
    """The other machine's state directory."""
    return settings.state_dir.parent / "remote"


class RemoteLauncher:
    def __init__(self, settings: Settings, concurrency: int | None = None) -> None:
        self.settings = settings
        self.root = elsewhere(settings)
        self.pids = self.root / "launched"

    def start(self, request_id: str) -> None:
        name = f"{request_id}.json"
        there = Queue(self.root / "queue").ensure()
        (there.claimed / name).write_bytes((Queue(self.settings.queue_dir).claimed / name).read_bytes())
        shared = self.root / "audit.db"
        if not shared.is_symlink():
            shared.symlink_to(self.settings.audit_path)
        self.pids.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "HEARTH_STATE_DIR": str(self.root), "HEARTH_LAUNCHER": "local", "PYTHONPATH": str(ROOT)}
        env.pop("HEARTH_QUEUE_DIR", None)
        with open(self.root / f"{request_id}.log", "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "hearth.cli.main", "agent", request_id],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        (self.pids / f"{request_id}.pid").write_text(f"{proc.pid}\n")

    def alive(self, run_id: str) -> bool:
        return held_here(self.settings, run_id) or self.pid(run_id) is not None

    def gone(self, run_id: str) -> str | None:
        return None  # its process went; settle says so (or resumes it once)

    def stop(self, run_id: str, grace_s: float) -> str:
        pid = self.pid(run_id)
        if pid is None:
            return "cancelled"
        return signal_then_kill(pid, lambda: self.pid(run_id) is not None, grace_s)

    def heal(self) -> list[str]:
        return []

    def live(self) -> list[dict[str, Any]]:
        return [s for s in read_states(self.root / "state") if running(s.get("pid"))]

    def pid(self, run_id: str) -> int | None:
        """The live process of the run there: the one started for it, or the one its live state names."""
        try:
            started: Any = int((self.pids / f"{run_id}.pid").read_text())
        except (OSError, ValueError):
            started = None
        state = next((s for s in read_states(self.root / "state") if s.get("run_id") == run_id), {})
        return next((pid for pid in (started, state.get("pid")) if running(pid)), None)

    def kill(self, run_id: str) -> None:
        """What a crash there does: the run's process group goes at once, recording nothing."""
        pid = self.pid(run_id)
        assert pid is not None, f"run {run_id} has no live process there"
        os.killpg(pid, signal.SIGKILL)


def running(pid: Any) -> bool:
    """A process with this pid that has not ended (a zombie not yet waited for has ended)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")
