"""`hearth worker`: a box that runs its hub's requests, each exactly as a single box runs its own.

A Celery worker (threads, HEARTH_FLEET_CONCURRENCY at once, one prefetched each) consumes the
queues of what it can do: `model.<name>` for every model its Ollama hosts have pulled (surveyed
again every MODELS_S; a queue is added or cancelled when that changes), `general`, and
`worker.<label>` for its name and each label. For each request it takes:

1. it claims the run at the hub (hearth/fleet/hub.py): the first claim runs it; a request the broker
   handed out again after its worker died is dropped there, never run twice;
2. it writes the request into its own queue's claimed/ and runs `hearth agent ID` in its own state
   directory, sandbox, launcher and Ollama hosts, with HEARTH_FLEET_OUTBOX set: the run records
   into this box's audit and the outbox (hearth/fleet/outbox.py), which a thread sends to the hub;
3. when the agent has ended, the request is acknowledged to the broker (late acknowledgement).

A heartbeat every HEARTBEAT_S tells the hub the models and the runs' live states and brings back
the stops asked of its runs (SIGTERM to the run's process group, SIGKILL after the grace). A run
that suspended for an approval (no process) goes on when the hub sends it again to
`worker.<name>`: the claim answers `resume` with the decisions made at the hub.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from hearth.fleet.client import HubClient
from hearth.fleet.config import FleetConfig
from hearth.fleet.launcher import TASK
from hearth.fleet.outbox import Outbox, Sender
from hearth.settings import Settings

log = logging.getLogger("hearth.fleet")
HEARTBEAT_S = 2.0
MODELS_S = 30.0
STOP_GRACE_S = 30.0
CLAIM_RETRY_S = 2.0


class Worker:
    def __init__(self, settings: Settings, config: FleetConfig) -> None:
        from hearth.fleet.app import celery_app

        self.settings, self.config = settings, config
        self.client = HubClient(config)
        self.outbox_path = settings.state_dir / "fleet" / "outbox.db"
        self.outbox = Outbox(self.outbox_path)
        self.sender = Sender(self.outbox, self.client)
        self.app = celery_app(config)
        self.hostname = f"{config.name}@hearth"
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.stopping: dict[str, float] = {}
        self.lock = threading.Lock()
        self.models: list[str] = []
        self.done = threading.Event()

        def run(task: Any, run_id: str, body: str) -> str:
            return self._task(task, run_id, body)

        self.app.task(name=TASK, bind=True, acks_late=True, max_retries=None)(run)

    # -- what it can do --------------------------------------------------------------------------
    def queues(self) -> list[str]:
        own = [f"worker.{x}" for x in (self.config.name, *self.config.labels)]
        return [*own, "general", *(f"model.{m}" for m in self.models)]

    def survey(self) -> list[str]:
        from hearth.run.hosts import pulled

        try:
            found = pulled(self.settings, timeout_s=2.0) or []
        except Exception as exc:  # a host down or a bad router.toml: keep what was known, say why
            log.warning("could not survey this box's Ollama hosts: %s", exc)
            return self.models
        names = set(found)
        names |= {m.removesuffix(":latest") for m in found if m.endswith(":latest")}
        return sorted(names)

    def refresh_models(self) -> None:
        models = self.survey()
        if models == self.models:
            return
        added, gone = set(models) - set(self.models), set(self.models) - set(models)
        self.models = models
        control = self.app.control
        for model in sorted(added):
            control.add_consumer(f"model.{model}", reply=False, destination=[self.hostname])
        for model in sorted(gone):
            control.cancel_consumer(f"model.{model}", reply=False, destination=[self.hostname])
        log.info("models now %s (added %s, gone %s)", models, sorted(added), sorted(gone))

    # -- the loop --------------------------------------------------------------------------------
    def run(self) -> int:
        self.models = self.survey()
        self.beat_once()  # the hub knows it before it takes a request
        self.sender.start()
        threading.Thread(target=self._beat, name="hearth-fleet-heartbeat", daemon=True).start()
        worker = self.app.Worker(
            hostname=self.hostname,
            queues=self.queues(),
            concurrency=self.config.concurrency,
            pool="threads",
            loglevel="INFO",
            without_gossip=True,
            without_mingle=True,
            optimization="fair",
        )
        print(f"hearth worker {self.config.name}: consuming {', '.join(self.queues())}", flush=True)
        try:
            worker.start()
        finally:
            self.done.set()
            self.sender.stop()
        return int(worker.exitcode or 0)

    def _beat(self) -> None:
        last_survey = time.monotonic()
        while not self.done.wait(HEARTBEAT_S):
            if time.monotonic() - last_survey >= MODELS_S:
                last_survey = time.monotonic()
                try:
                    self.refresh_models()
                except Exception as exc:
                    log.warning("refreshing the model queues failed: %s", exc)
            self.beat_once()

    def beat_once(self) -> None:
        try:
            status, body = self.client.post("/fleet/heartbeat", {"models": self.models, "running": self.states()})
        except OSError as exc:
            log.warning("heartbeat: the hub does not answer: %s", exc)
            return
        if status != 200:
            log.warning("heartbeat refused (%s): %s", status, body.get("error"))
            return
        for run_id, why in (body.get("stop") or {}).items():
            self.stop(str(run_id), str(why))
        self._kill_overdue()

    def states(self) -> list[dict[str, Any]]:
        from hearth.run.state import read_states

        with self.lock:
            held = {run_id: proc.pid for run_id, proc in self.procs.items()}
        found = {str(s.get("run_id")): s for s in read_states(self.settings.runs_state_dir)}
        states = [{**found.get(r, {"state": "starting"}), "run_id": r, "pid": pid} for r, pid in held.items()]
        sending = [r for r in self.outbox.runs() if r not in held]  # ended here, its last events on their way
        return states + [
            {"run_id": r, "state": "sending", "detail": "its last events are on their way"} for r in sending
        ]

    def stop(self, run_id: str, why: str) -> None:
        with self.lock:
            proc = self.procs.get(run_id)
            if proc is None or run_id in self.stopping:
                return
            self.stopping[run_id] = time.monotonic() + STOP_GRACE_S
        log.info("stopping run %s: %s", run_id, why)
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass

    def _kill_overdue(self) -> None:
        now = time.monotonic()
        with self.lock:
            overdue = [self.procs[r] for r, at in self.stopping.items() if at <= now and r in self.procs]
        for proc in overdue:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    # -- one request -----------------------------------------------------------------------------
    def _task(self, task: Any, run_id: str, body: str) -> str:
        with self.lock:
            if run_id in self.procs:  # handed out again while it runs here: it is not run twice
                log.info("request %s is running here already; the copy is dropped", run_id)
                return "dropped"
        try:
            status, answer = self.client.post("/fleet/claim", {"run_id": run_id})
        except OSError as exc:
            log.warning("claim of %s: the hub does not answer (%s); it is tried again", run_id, exc)
            raise task.retry(countdown=CLAIM_RETRY_S) from None
        if status != 200:
            log.error("claim of %s refused (%s): %s", run_id, status, answer.get("error"))
            return "refused"
        go = answer.get("go")
        if go == "drop":
            log.info("request %s not run: %s", run_id, answer.get("why"))
            return "dropped"
        if go == "resume":
            self._decided(run_id, answer.get("approvals") or [])
        else:
            self._take(run_id, body)
        return self._run(run_id)

    def _take(self, run_id: str, body: str) -> None:
        from hearth.atomic import write_atomic
        from hearth.queue.directory import Queue

        queue = Queue(self.settings.queue_dir).ensure()
        write_atomic(queue.claimed / f"{run_id}.json", body.encode())

    def _decided(self, run_id: str, rows: list[dict[str, Any]]) -> None:
        """The decisions made at the hub while the run was suspended, into this box's audit."""
        from hearth.audit import approvals
        from hearth.audit.store import AuditStore

        with AuditStore(self.settings.audit_path) as audit:
            for row in rows:
                if isinstance(row, dict) and row.get("run_id") == run_id and row.get("status") != "pending":
                    approvals.close(
                        audit,
                        str(row["id"]),
                        row["status"],
                        row.get("decided_at"),
                        row.get("decided_by"),
                        row.get("note"),
                    )

    def _run(self, run_id: str) -> str:
        env = {**os.environ, "HEARTH_STATE_DIR": str(self.settings.state_dir), "HEARTH_LAUNCHER": "local"}
        env["HEARTH_FLEET_OUTBOX"] = str(self.outbox_path)
        env.pop("HEARTH_QUEUE_DIR", None)
        logs = self.settings.state_dir / "fleet" / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        with open(logs / f"{run_id}.log", "ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-P", "-m", "hearth.cli.main", "agent", run_id],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        with self.lock:
            self.procs[run_id] = proc
        try:
            code = proc.wait()
        finally:
            with self.lock:
                self.procs.pop(run_id, None)
                self.stopping.pop(run_id, None)
        self._closed(run_id, code)
        return f"exit {code}"

    def _closed(self, run_id: str, code: int) -> None:
        """What the agent could not say itself (it was killed, or failed before its first record):
        its row and final status, sent after its own events (a repeat changes nothing at the hub)."""
        from hearth.audit.requests import record_unfinished
        from hearth.audit.store import AuditStore
        from hearth.dispatch.settle import GONE
        from hearth.run.events import RunFinished, RunStarted

        with AuditStore(self.settings.audit_path) as audit:
            run = audit.run(run_id)
            if run is not None and run["status"] == "running":
                record_unfinished(audit, run_id, "interrupted", GONE)
                run = audit.run(run_id)
        if run is None:
            return
        row = {k: v for k, v in run.items() if k in _RUN_COLUMNS}
        self.outbox.keep(RunStarted(run_id, row, str(run["started_at"])))
        if run["status"] != "waiting":
            columns = {"error": run.get("error")}
            self.outbox.keep(RunFinished(run_id, str(run["status"]), columns, if_running=True, at=str(run["ended_at"])))


_RUN_COLUMNS = {
    "id", "agent_name", "model", "goal", "mode", "source", "requested_by", "workspace", "sandbox", "status",
    "started_at", "parent_run", "link", "kind", "label", "model_requested", "model_reason", "model_host",
}  # fmt: skip


def main(settings: Settings) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per heartbeat otherwise
    return Worker(settings, FleetConfig.from_env(worker=True)).run()
