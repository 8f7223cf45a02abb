"""The hub's launcher (HEARTH_LAUNCHER=celery): a claimed request goes to Celery, a worker runs it.

`start` sends the request as recorded to the queue of what it needs (hearth/fleet/config.py's
`queue_for`: a worker label's, its model's, or the general one); a run that goes on (its approval
was decided after it suspended) goes to `worker.<name>` of the worker holding its workspace. That
it was sent is recorded before it is sent: a worker that takes it from the broker at once must find
it (one told "the hub sent no request" dropped it, and the request sat claimed with no run); a send
the broker does not take puts the record back as it was. What
happened since is in the audit (`fleet_runs`, hearth/remote/hub.py), which is what the other methods
read: a run is alive while its request waits in the broker or its worker answers and holds it, and
gone, "worker lost", when its worker fell silent or says it no longer holds it. A stop is asked of
the worker at its next heartbeat and waited for here.

While the broker does not answer (restarting, the network), `free_slots` is 0: the spawner claims
nothing, so a request waits in the queue (and `wait` looks again every DOWN_CHECK_S) instead of
being recorded failed for a broker that is back a second later.
"""

from __future__ import annotations

import contextlib
import select
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

from hearth.audit import fleet
from hearth.audit.store import AuditStore
from hearth.dispatch.launchers import LaunchError
from hearth.dispatch.launchers.host import held_here
from hearth.errors import ConfigError
from hearth.fleet.config import FleetConfig, queue_for, waits
from hearth.remote import DOOR, hub
from hearth.settings import Settings

TASK = "hearth.fleet.run"
FINAL_WAIT_S = 10.0  # beyond the stop's grace: the worker's heartbeat, its SIGKILL and its last events
UP_CHECK_S = 1.0  # a broker that answered is taken to be up this long
DOWN_CHECK_S = 0.5  # one that did not is asked again this often
# a send that meets a broker gone since it last answered is tried again for about 5 s
SEND_RETRY = {"max_retries": 10, "interval_start": 0.1, "interval_step": 0.25, "interval_max": 1.0}


class CeleryLauncher:
    """A Launcher that is Paced (by the broker) and Remote (its workers report through the door)."""

    def __init__(self, settings: Settings, concurrency: int | None = None) -> None:
        self.settings = settings
        self._app: Any = None
        self._shown = ""  # the broker's URL without its password, for messages
        self._up, self._asked_at = True, -1e9  # whether the broker answered, and when it was asked
        self._kept = threading.local()  # each thread's connection to the audit

    @contextlib.contextmanager
    def _audit(self) -> Iterator[AuditStore]:
        """The audit through one connection this launcher keeps for each thread that asks (the live
        map asks `alive` of every claimed request; opening the file for each was most of its cost)."""
        audit: AuditStore | None = getattr(self._kept, "audit", None)
        if audit is None:
            audit = self._kept.audit = AuditStore(self.settings.audit_path)
        yield audit

    def app(self) -> Any:
        if self._app is None:
            from hearth.fleet.app import celery_app

            try:
                config = FleetConfig.from_env()
                self._app, self._shown = celery_app(config), config.shown_broker
            except ConfigError as exc:
                raise LaunchError(str(exc)) from None
        return self._app

    def start(self, request_id: str) -> None:
        from hearth.queue.ledger import recorded_request

        with self._audit() as audit:
            recorded = recorded_request(audit, request_id)
            if recorded is None:
                raise LaunchError(f"request {request_id} is not recorded in the audit; it cannot be sent")
            request = recorded[0].request
            held = hub.fleet_run(audit, request_id)
            if held and held["worker"] and audit.run(request_id):
                queue = f"worker.{held['worker']}"  # it goes on where its workspace is
            else:
                queue = queue_for(request.model, request.worker)
            body = request.model_dump_json(exclude_none=True)
            hub.sent(audit, request_id, queue, request.model, request.worker)  # first: see the module's doc
            try:
                self.app().send_task(
                    TASK,
                    args=[request_id, body],
                    queue=queue,
                    task_id=f"{request_id}-{time.time_ns()}",
                    retry=True,
                    retry_policy=SEND_RETRY,
                )
            except Exception as exc:  # kombu's errors for a broker that is down or refuses
                fleet.unsent(audit, request_id, held)
                raise LaunchError(
                    f"the broker did not take request {request_id}: {type(exc).__name__}: {exc}"
                ) from None

    def free_slots(self) -> int | None:
        """None while the broker answers (the workers' own concurrency, prefetching one each, is the
        limit); 0 while it does not, so what arrives waits in the queue."""
        return None if self.broker_answers() else 0

    def broker_answers(self) -> bool:
        """Whether the broker answers, asked at most every UP_CHECK_S (DOWN_CHECK_S while it does
        not); a change is one line on stderr (the spawner's journal). A broken configuration counts
        as answering: `start` says what is wrong, with the request it cannot send."""
        now = time.monotonic()
        if now - self._asked_at < (UP_CHECK_S if self._up else DOWN_CHECK_S):
            return self._up
        try:
            app = self.app()
        except LaunchError:
            return True
        try:
            with app.connection_for_write() as connection:
                connection.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=2)
            up, why = True, ""
        except Exception as exc:  # kombu's and redis' errors for a broker that is down, unreachable or refuses
            up, why = False, f"{type(exc).__name__}: {exc}"
        if up != self._up:
            line = "answers again" if up else f"does not answer ({why}); requests wait in the queue until it does"
            print(f"hearth: the broker at {self._shown} {line}", file=sys.stderr, flush=True)
        self._up, self._asked_at = up, time.monotonic()
        return up

    def wait(self, fds: Sequence[int], timeout: float | None) -> None:
        if not self._up:  # the broker was away: look again soon, whatever else wakes the spawner
            timeout = DOWN_CHECK_S if timeout is None else min(timeout, DOWN_CHECK_S)
        select.select(list(fds), [], [], timeout)

    def alive(self, run_id: str) -> bool:
        if held_here(self.settings, run_id):
            return True
        if not self.settings.audit_path.exists():
            return False
        with self._audit() as audit:
            row = hub.fleet_run(audit, run_id)
            if row is None or row["lost"]:
                return False
            run = audit.run(run_id)
            if run is not None and run["status"] not in ("running", "waiting"):
                return False
            if not row["worker"]:
                return True  # it waits in the broker for a worker that can run it
            if run is not None and run["status"] == "waiting":  # suspended: alive while a process still holds it
                held = [w for w in hub.workers(audit) if w.name == row["worker"]]
                return bool(held) and run_id in held[0].running
            return hub.lost(audit, run_id) is None

    def gone(self, run_id: str) -> str | None:
        """Why a run of the fleet is gone: its worker was lost (it is then settled, never run again)."""
        with self._audit() as audit:
            reason = hub.lost(audit, run_id)
            if reason is not None:
                hub.mark_lost(audit, run_id, reason)
            return reason

    def stop(self, run_id: str, grace_s: float) -> str:
        with self._audit() as audit:
            row = hub.fleet_run(audit, run_id)
            run = audit.run(run_id)
            if row is None or not row["worker"] or run is None or run["status"] != "running":
                return "cancelled"  # not started anywhere (a worker that takes it later drops it)
            hub.ask_stop(audit, run_id, "stopped at the hub")
        deadline = time.monotonic() + grace_s + FINAL_WAIT_S
        while time.monotonic() < deadline:
            with self._audit() as audit:
                run = audit.run(run_id)
                if run is None or run["status"] != "running" or hub.lost(audit, run_id):
                    return "signal"
            time.sleep(0.1)
        return "killed"

    def heal(self) -> list[str]:
        return []

    def close(self) -> None:
        """Close this thread's connection to the audit (the others close as their threads end)."""
        audit: AuditStore | None = getattr(self._kept, "audit", None)
        if audit is not None:
            audit.close()
            self._kept.audit = None

    def door(self) -> str:
        return DOOR  # the workers send their runs' events there (hearth/remote/)

    def live(self) -> list[dict[str, Any]]:
        """The live states the workers' heartbeats carried, and a line for each request still in
        the broker: which worker it waits for, or that no worker has its model."""
        if not self.settings.audit_path.exists():
            return []
        with self._audit() as audit:
            workers = [w for w in hub.workers(audit) if w.seen_within(hub.lost_after())]
            states = [{**s, "worker": w.name} for w in workers for s in w.states]
            waiting = fleet.waiting(audit)
        return states + [{"run_id": row["run_id"], "state": "queued", "detail": waits(row, workers)} for row in waiting]
