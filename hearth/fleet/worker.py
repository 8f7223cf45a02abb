"""`hearth worker`: a box that runs its hub's requests, each exactly as a single box runs its own.

A Celery worker (threads, HEARTH_FLEET_CONCURRENCY at once, one prefetched each) consumes the
queues of what it can do: `model.<name>` for every model its Ollama hosts have pulled (surveyed
again every MODELS_S; a queue is added or cancelled when that changes), `general`, and
`worker.<label>` for its name and each label the hub gives it (`hearth fleet add|labels`, told at
each heartbeat: the labels are the hub's, so they are set in one place). For each request it takes:

1. it claims the run at the hub (hearth/remote/hub.py): the first claim runs it; a request the broker
   handed out again after its worker died is dropped there, never run twice;
2. it drops the request into its own queue, `<state>/fleet/queue` (not the box's queue, which the
   box's own spawner serves: a request from the hub must run here, through the outbox), where its
   own `hearth watch` (a process it keeps, with HEARTH_FLEET_OUTBOX set) runs it as a single box
   does: its state directory, sandbox, local launcher (a run is forked from the warm watch) and
   Ollama hosts; the run records into this box's audit and the outbox (hearth/remote/outbox.py),
   which a thread sends to the hub;
3. when the run has ended (or suspended), the request is acknowledged to the broker (late
   acknowledgement).

A heartbeat every HEARTBEAT_S tells the hub the models and the runs' live states and brings back
the stops asked of its runs (SIGTERM to the run's process group, SIGKILL after the grace). A run
that suspended for an approval (no process) goes on when the hub sends it again to
`worker.<name>`: the claim answers `resume` with the decisions made at the hub, which go into this
box's audit, where the watch's sweep finds the run ready and goes on with it.
"""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import replace
from typing import Any

from celery.signals import worker_ready

from hearth.audit.reader import AuditReader
from hearth.fleet.config import FleetConfig
from hearth.fleet.launcher import TASK
from hearth.remote.client import HubClient
from hearth.remote.outbox import Outbox, Sender, closing_events, take_decisions
from hearth.settings import Settings

log = logging.getLogger("hearth.fleet")
HEARTBEAT_S = 2.0
MODELS_S = 30.0  # HEARTH_FLEET_SURVEY_S: how often the Ollama hosts are asked what they have
STOP_GRACE_S = 30.0
CLAIM_RETRY_S = 2.0
POLL_S = 0.05  # how often a task looks whether its run has ended


class Worker:
    def __init__(self, settings: Settings, config: FleetConfig) -> None:
        from hearth.fleet.app import celery_app

        # the worker's own queue, apart from the box's (whose spawner would start a hub's request
        # as a unit of its own, recording nowhere but here)
        self.settings = replace(settings, queue_path=settings.state_dir / "fleet" / "queue")
        self.config = config
        self.client = HubClient(config.hub, config.token)
        self.outbox_path = settings.state_dir / "fleet" / "outbox.db"
        self.outbox = Outbox(self.outbox_path)
        self.sender = Sender(self.outbox, self.client)
        self.app = celery_app(config)
        self.hostname = f"{config.name}@hearth"
        self.held: set[str] = set()  # the runs of the requests it has taken and not yet acknowledged
        self.stopping: dict[str, float] = {}
        self.watch: subprocess.Popen[bytes] | None = None
        self.lock = threading.Lock()
        self.models: list[str] = []
        self.labels: list[str] = []  # as the hub gave them at the last heartbeat
        self.consuming = False  # the Celery worker is started: a queue is added to it by a broadcast
        self.done = threading.Event()
        self._reads = AuditReader(self.settings.audit_path)  # a connection per task thread

        def run(task: Any, run_id: str, body: str) -> str:
            return self._task(task, run_id, body)

        self.app.task(name=TASK, bind=True, acks_late=True, max_retries=None)(run)

    # -- what it can do --------------------------------------------------------------------------
    def queues(self) -> list[str]:
        own = [f"worker.{x}" for x in (self.config.name, *self.labels)]
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
        before, self.models = self.models, models
        self._retake("model", before, models)

    def _retake(self, kind: str, before: list[str], now: list[str]) -> None:
        """Take the queues `<kind>.<name>` of `now` that `before` had not, and leave the others."""
        control = self.app.control
        added, gone = sorted(set(now) - set(before)), sorted(set(before) - set(now))
        for name in added:
            control.add_consumer(f"{kind}.{name}", reply=False, destination=[self.hostname])
        for name in gone:
            control.cancel_consumer(f"{kind}.{name}", reply=False, destination=[self.hostname])
        log.info("%s queues now %s (added %s, gone %s)", kind, now, added, gone)

    # -- the loop --------------------------------------------------------------------------------
    def run(self) -> int:
        self.models = self.survey()
        self.start_watch()
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
        started_with = list(self.labels)

        def ready(**_: Any) -> None:  # the consumer listens now: a label given meanwhile is added
            self.consuming = True
            if self.labels != started_with:
                self._retake("worker", started_with, self.labels)

        worker_ready.connect(ready, weak=False)
        try:
            worker.start()
        finally:
            self.done.set()
            self.sender.stop()
            if self.watch is not None and self.watch.poll() is None:
                self.watch.send_signal(signal.SIGTERM)  # it stops its runs, which record so
                self.watch.wait(STOP_GRACE_S + 10)
        return int(worker.exitcode or 0)

    def start_watch(self) -> None:
        """This box's own `hearth watch`, which runs what the worker drops into its queue."""
        env = {**os.environ, "HEARTH_STATE_DIR": str(self.settings.state_dir), "HEARTH_LAUNCHER": "local"}
        env["HEARTH_FLEET_OUTBOX"] = str(self.outbox_path)
        env["HEARTH_QUEUE_DIR"] = str(self.settings.queue_dir)
        logs = self.settings.state_dir / "fleet"
        argv = [sys.executable, "-P", "-m", "hearth.cli.main", "watch", "--concurrency", str(self.config.concurrency)]
        with open(logs / "watch.log", "ab") as out:
            self.watch = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)

    def _beat(self) -> None:
        last_survey, every = time.monotonic(), _seconds("HEARTH_FLEET_SURVEY_S", MODELS_S)
        while not self.done.wait(HEARTBEAT_S):
            if time.monotonic() - last_survey >= every:
                last_survey = time.monotonic()
                try:
                    self.refresh_models()
                except Exception as exc:
                    log.warning("refreshing the model queues failed: %s", exc)
            if self.watch is not None and self.watch.poll() is not None:
                log.error("this box's hearth watch ended (exit %s); starting it again", self.watch.returncode)
                self.start_watch()
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
        labels = body.get("labels")
        if isinstance(labels, list):
            self.relabel(sorted({str(x) for x in labels if isinstance(x, str) and x}))

    def relabel(self, labels: list[str]) -> None:
        """Take the queues of the labels the hub gives it now (before it consumes, only noted)."""
        if labels == self.labels:
            return
        before, self.labels = self.labels, labels
        if self.consuming:
            self._retake("worker", before, labels)

    def states(self) -> list[dict[str, Any]]:
        from hearth.run.state import read_states

        with self.lock:
            held = set(self.held)
        found = {str(s.get("run_id")): s for s in read_states(self.settings.runs_state_dir)}
        states = [{**found.get(r, {"state": "starting"}), "run_id": r} for r in sorted(held)]
        sending = [r for r in self.outbox.runs() if r not in held]  # ended here, its last events on their way
        return states + [
            {"run_id": r, "state": "sending", "detail": "its last events are on their way"} for r in sending
        ]

    def stop(self, run_id: str, why: str) -> None:
        from hearth.dispatch.launchers.host import pid_here

        with self.lock:
            if run_id not in self.held or run_id in self.stopping:
                return
            self.stopping[run_id] = time.monotonic() + STOP_GRACE_S
        pid = pid_here(self.settings, run_id)
        log.info("stopping run %s (pid %s): %s", run_id, pid, why)
        if pid is not None:
            _signal(pid, signal.SIGTERM)

    def _kill_overdue(self) -> None:
        from hearth.dispatch.launchers.host import pid_here

        now = time.monotonic()
        with self.lock:
            overdue = [r for r, at in self.stopping.items() if at <= now]
        for run_id in overdue:
            pid = pid_here(self.settings, run_id)
            if pid is not None:
                _signal(pid, signal.SIGKILL)

    # -- one request -----------------------------------------------------------------------------
    def _task(self, task: Any, run_id: str, body: str) -> str:
        with self.lock:
            if run_id in self.held:  # handed out again while it runs here: it is not run twice
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
        if go == "wait":
            raise task.retry(countdown=CLAIM_RETRY_S)
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
        write_atomic(queue.root / f"{run_id}.json", body.encode())  # the watch takes it from here

    def _decided(self, run_id: str, rows: list[dict[str, Any]]) -> None:
        take_decisions(self.settings, run_id, rows)

    def _run(self, run_id: str) -> str:
        """Wait for the run the watch starts to end (or suspend); what it ended as."""
        with self.lock:
            self.held.add(run_id)
        try:
            while not self.done.is_set():
                status = self._ended(run_id)
                if status is not None:
                    break
                time.sleep(POLL_S)
            else:
                return "worker stopping"
        finally:
            with self.lock:
                self.held.discard(run_id)
                self.stopping.pop(run_id, None)
        self._closed(run_id)
        return status

    def _ended(self, run_id: str) -> str | None:
        """The run's status once it no longer goes on here: final and its request placed, or
        suspended for a person; None while it is queued, claimed or running."""
        from hearth.queue.directory import Queue

        queue = Queue(self.settings.queue_dir)
        if (queue.root / f"{run_id}.json").exists():
            return None
        try:
            found = self._status(run_id)
        except sqlite3.Error:
            self._reads.forget()  # opened again at the next look
            return None
        if found is None or found == "running":
            return None
        if found != "waiting" and (queue.claimed / f"{run_id}.json").exists():
            return None  # ended, its request not yet placed
        return found

    def _status(self, run_id: str) -> str | None:
        """The run's status in this box's audit, read through a connection each task's thread keeps
        (it is asked every POLL_S for every run here)."""
        from hearth.audit import runs

        return runs.status(self._reads, run_id)

    def _closed(self, run_id: str) -> None:
        """What the run could not say itself, sent after its own events (hearth/remote/outbox.py)."""
        from hearth.audit.store import AuditStore

        with AuditStore(self.settings.audit_path) as audit:
            for event in closing_events(audit, run_id):
                self.outbox.keep(event)


def _seconds(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name) or default)
    except ValueError:
        return default
    return value if value > 0 else default


def _signal(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum) if os.getpgid(pid) == pid else os.kill(pid, signum)
    except ProcessLookupError:
        pass


def main(settings: Settings) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per heartbeat otherwise
    return Worker(settings, FleetConfig.from_env(worker=True)).run()
