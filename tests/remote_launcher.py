"""A launcher that runs each request the way a job engine would on another machine: one module,
added as one row.

`register("remote", "tests.remote_launcher:RemoteLauncher")` (hearth/dispatch/launchers/) is all
hearth is told. `start` is what a Nomad dispatch or a Kubernetes Job would be (docs/fleet.md):
`python -m hearth.remote.job ID` in a subprocess of its own session, the request as the hub
recorded it on stdin, with the state directory of "the other machine" (a directory beside the
hub's: its own queue, locks, live states, workspaces, audit and outbox) and the hub's address, the
machine's name and a token of its own in its environment. Its run reports back through the hub's
door over loopback HTTP, as a fleet's worker does; nothing of the hub's state is shared with it.

The engine's own word (`nomad alloc status`, a Job's pod) is stood in for by the pid this
launcher keeps (alive, stop) and the live states the other machine writes (live). Its runs do not
go on where they died: a job that ended with its run still going at the hub was lost there, and
is settled `interrupted` with that reason, as a fleet's lost worker's runs are. OPENED (set in its
environment by a test) makes the job list every file it opens (tests/remote_job.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from hearth.audit.store import AuditStore
from hearth.dispatch.launchers import LaunchError
from hearth.dispatch.launchers.host import held_here, signal_then_kill
from hearth.queue.ledger import recorded_request
from hearth.remote import DOOR, hub
from hearth.run.state import read_states
from hearth.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
MACHINE = "elsewhere"  # its name at the hub, as `hearth fleet add` would make it
HUB = "HEARTH_REMOTE_HUB"  # the hub's command center URL, which its jobs report to
LOST = "its job on elsewhere ended without the run's end reaching the hub; it is not run again"


def elsewhere(settings: Settings) -> Path:
    """The other machine's state directory."""
    return settings.state_dir.parent / "remote"


class RemoteLauncher:
    def __init__(self, settings: Settings, concurrency: int | None = None) -> None:
        self.settings = settings
        self.root = elsewhere(settings)
        self.pids = self.root / "launched"

    def start(self, request_id: str) -> None:
        url = os.environ.get(HUB, "")
        if not url:
            raise LaunchError(f"{HUB} is not set: the hub's URL its jobs report to")
        body = self._sent(request_id)
        self.pids.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "HEARTH_STATE_DIR": str(self.root), "HEARTH_LAUNCHER": "local", "PYTHONPATH": str(ROOT)}
        env.update(HEARTH_FLEET_HUB=url, HEARTH_FLEET_NAME=MACHINE, HEARTH_FLEET_TOKEN_FILE=str(self._token()))
        for name in ("HEARTH_QUEUE_DIR", "HEARTH_FLEET_OUTBOX"):
            env.pop(name, None)
        with open(self.root / f"{request_id}.log", "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tests.remote_job", request_id],
                cwd=ROOT,
                env=env,
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        assert proc.stdin is not None
        proc.stdin.write(body)
        proc.stdin.close()
        (self.pids / f"{request_id}.pid").write_text(f"{proc.pid}\n")

    def _sent(self, request_id: str) -> bytes:
        """The request as recorded, recorded sent to this machine (the claim it makes is checked against it)."""
        with AuditStore(self.settings.audit_path) as audit:
            recorded = recorded_request(audit, request_id)
            if recorded is None:
                raise LaunchError(f"request {request_id} is not recorded in the audit; it cannot be sent")
            request = recorded[0].request
            hub.sent(audit, request_id, f"worker.{MACHINE}", request.model, None)
        return request.model_dump_json(exclude_none=True).encode()

    def _token(self) -> Path:
        """The machine's token file (a secret an engine would mount), made at the first start."""
        path = self.root / "token"
        if not path.exists():
            self.root.mkdir(parents=True, exist_ok=True)
            with AuditStore(self.settings.audit_path) as audit:
                token = hub.add_worker(audit, MACHINE, [], "remote launcher")
            path.write_text(token)
            path.chmod(0o600)
        return path

    def alive(self, run_id: str) -> bool:
        if held_here(self.settings, run_id):
            return True
        return self.pid(run_id) is not None and not self._ended(run_id)

    def _ended(self, run_id: str) -> bool:
        """The hub's audit holds the run's end (its job may still be sending what follows)."""
        with AuditStore(self.settings.audit_path) as audit:
            run = audit.run(run_id)
        return run is not None and run["status"] not in ("running", "waiting")

    def gone(self, run_id: str) -> str | None:
        with AuditStore(self.settings.audit_path) as audit:
            row = hub.fleet_run(audit, run_id)
            if row is None or not row["worker"]:
                return None  # its job never claimed it: nothing ran there, settle says so
            hub.mark_lost(audit, run_id, LOST)
        return LOST

    def stop(self, run_id: str, grace_s: float) -> str:
        pid = self.pid(run_id)
        if pid is None:
            return "cancelled"
        return signal_then_kill(pid, lambda: self.pid(run_id) is not None, grace_s)

    def heal(self) -> list[str]:
        return []

    def live(self) -> list[dict[str, Any]]:
        return [s for s in read_states(self.root / "state") if running(s.get("pid"))]

    def door(self) -> str:
        return DOOR

    def pid(self, run_id: str) -> int | None:
        """The live process of the run's job there: the one started for it, or the one its live state names."""
        try:
            started: Any = int((self.pids / f"{run_id}.pid").read_text())
        except (OSError, ValueError):
            started = None
        state = next((s for s in read_states(self.root / "state") if s.get("run_id") == run_id), {})
        return next((pid for pid in (started, state.get("pid")) if running(pid)), None)

    def kill(self, run_id: str) -> None:
        """What a crash there does: the job's process group goes at once, recording nothing."""
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
