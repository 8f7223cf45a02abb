"""The hub's side of the fleet, on its audit: workers and their tokens, what each says, what it sends.

Every call here is made for one worker that its token named (`identify`); what a worker sends is
checked as any request is, and a worker reaches only the runs it claimed:

    claim(worker, run_id)    the worker took the request from the broker: the first claim wins; a
                             second one (the broker handed out a request again after its worker
                             died) is refused, counted, and the run is not run twice
    heartbeat(worker, ...)   what it has (models, runs): the answer carries what it must do (stop a
                             run, hold while the hub is paused) and its labels, which are the hub's
                             to give (`hearth fleet add|labels`): a worker takes what they name
    accept(worker, lines)    a batch of its runs' events (hearth/run/events.py), written through the
                             hub's own SqliteRecorder as a local run's are; an event whose id was
                             written before is skipped, so a batch sent twice writes once
    approval(worker, id)     an approval of one of its runs, as the hub holds it (decided here)

A hostile worker cannot write another worker's runs (each event's run must be one it claimed, each
approval one of its runs), cannot forge an operator's decision (a decision it sends is taken only
when it is one a run makes itself: expired, cancelled, or what the hub already holds), and cannot
rename a run's worker (the hub writes that column).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agent.clock import utc_now
from hearth.audit import approvals, fleet
from hearth.audit.approvals import parse_stamp
from hearth.audit.store import AuditStore, ColumnRefused, Rows
from hearth.errors import HearthError, NotFound, UsageError
from hearth.ids import ID_PATTERN
from hearth.leash.actions import digest
from hearth.leash.budget import Budget, local_now, refusal
from hearth.remote import NAME
from hearth.run.events import (
    ApprovalAsked,
    ApprovalDecided,
    RunEvent,
    RunFinished,
    RunStarted,
    SqliteRecorder,
    check,
    from_json,
)

PREFIX = "hw-"
LOST_S = 30.0  # a worker silent this long has lost its runs (its heartbeat is every 2 s)
WORKER_LOST = "worker lost: {worker} stopped answering the hub while the run was going; it is not run again"
RUNS_OWN_DECISIONS = ("expired", "cancelled")


class WorkerRefused(HearthError):
    """A worker's call refused; `status` is the HTTP status the door answers with."""

    def __init__(self, status: int, message: str, index: int | None = None) -> None:
        super().__init__(message)
        self.status, self.index = status, index  # index: the event of a batch that was refused


@dataclass(frozen=True)
class Worker:
    name: str
    labels: tuple[str, ...]
    models: tuple[str, ...]
    states: tuple[dict[str, Any], ...]  # its runs' live states, as its last heartbeat said
    seen_at: float | None

    @property
    def running(self) -> tuple[str, ...]:
        return tuple(str(s["run_id"]) for s in self.states)

    def seen_within(self, seconds: float, now: float | None = None) -> bool:
        return self.seen_at is not None and (now or time.time()) - self.seen_at < seconds


def add_worker(audit: AuditStore, name: str, labels: Iterable[str], by: str) -> str:
    """A new worker; its token, printed once (the audit keeps its SHA-256)."""
    if not NAME.fullmatch(name):
        raise UsageError(f"a worker's name is 1-63 of a-z 0-9 . _ - starting with a letter or digit, got {name!r}")
    labels = tuple(labels)
    for label in labels:
        if not NAME.fullmatch(label):
            raise UsageError(f"{label!r} is not a label (a-z 0-9 . _ -)")
    token = PREFIX + secrets.token_urlsafe(32)
    row = {"name": name, "digest": digest(token), "labels": json.dumps(labels), "models": "[]", "running": "[]"}
    if not fleet.add_worker(audit, {**row, "created_at": utc_now(), "created_by": by}):
        raise UsageError(f"there is a worker {name} already; `hearth fleet rm {name}` first to make a new token")
    return token


def set_labels(audit: AuditStore, name: str, labels: Iterable[str]) -> tuple[str, ...]:
    """The worker's labels from now on (it takes the requests they name from its next heartbeat)."""
    labels = tuple(dict.fromkeys(labels))
    for label in labels:
        if not NAME.fullmatch(label):
            raise UsageError(f"{label!r} is not a label (a-z 0-9 . _ -)")
    if not fleet.set_labels(audit, name, json.dumps(labels)):
        raise NotFound(f"no worker {name}; `hearth fleet list` shows them")
    return labels


def remove_worker(audit: AuditStore, name: str) -> None:
    if not fleet.remove_worker(audit, name):
        raise NotFound(f"no worker {name}; `hearth fleet list` shows them")


def workers(db: Rows) -> list[Worker]:
    return [worker_of(row) for row in fleet.workers(db)]


def identify(audit: AuditStore, authorization: str) -> Worker:
    """The worker whose token this `Bearer` header carries; WorkerRefused(401) otherwise."""
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip().startswith(PREFIX):
        raise WorkerRefused(401, "a worker's token is needed: Authorization: Bearer hw-...")
    row = fleet.worker_with_digest(audit, digest(token.strip()))
    if row is None:
        raise WorkerRefused(401, "no worker has this token (`hearth fleet add NAME` makes one)")
    return worker_of(row)


def worker_of(row: dict[str, Any]) -> Worker:
    """A `fleet_workers` row as its record (its digest, if selected, is left out)."""
    return Worker(
        row["name"],
        tuple(json.loads(row["labels"] or "[]")),
        tuple(json.loads(row["models"] or "[]")),
        tuple(json.loads(row["running"] or "[]")),
        row["seen_at"],
    )


# -- what the launcher records ------------------------------------------------------------------
sent = fleet.sent
fleet_run = fleet.fleet_run


def ask_stop(audit: AuditStore, run_id: str, by: str, status: str = "interrupted") -> None:
    """The run's worker stops it at its next heartbeat; the run ends `status` with `by` as its error."""
    fleet.ask_stop(audit, run_id, by, status)


def stop_spent(
    audit: AuditStore, worker: Worker, states: list[dict[str, Any]], budget: Budget, now: datetime
) -> list[str]:
    """Ask a stop of each of the worker's runs whose daily budget is spent, counted at the hub across
    every box (hearth/leash/budget.py): it ends `budget_exceeded` with the line a run here would give."""
    if not budget.configured:
        return []
    stopped: list[str] = []
    spent_for: dict[str, str | None] = {}
    for state in states:
        row = fleet_run(audit, str(state["run_id"]))
        if row is None or row["worker"] != worker.name or row["lost"] or row["stop_by"]:
            continue  # not a run it claimed (or lost), or one asked to stop already
        run = audit.run(row["run_id"])
        if run is None or run["status"] != "running":
            continue
        agent = str(run.get("agent_name") or "")
        if agent not in spent_for:
            spent_for[agent] = refusal(budget, audit, agent, now)
        reason = spent_for[agent]
        if reason:
            ask_stop(audit, run["id"], f"stopped: {reason}", "budget_exceeded")
            stopped.append(run["id"])
    return stopped


ALIVE_EVERY_S = 2.0


def door_alive(path: Any, started: float, *, closing: bool = False) -> None:
    """The hub's door is up since `started` and now (hearth/web/app.py calls this every ALIVE_EVERY_S,
    and with `closing` as it stops, so a hub restarted at once is not taken to have heard all along)."""
    try:
        with AuditStore(path) as audit:
            fleet.door_alive(audit, started, 0.0 if closing else time.time())
    except Exception:  # best effort: a sweep that cannot tell the door is up calls nobody lost
        return


def _heard_since(audit: AuditStore, now: float) -> float | None:
    """Since when the door has been up without a break (None: it is not up now, so silence says nothing)."""
    row = fleet.door(audit)
    if row is None or now - row["alive_at"] > 2 * ALIVE_EVERY_S + 1:
        return None
    return float(row["up_since"])


def lost_after() -> float:
    """LOST_S, or the hub's HEARTH_FLEET_LOST_S (a network that drops out for longer); a value that
    is no positive number is the default."""
    try:
        value = float(os.environ.get("HEARTH_FLEET_LOST_S") or LOST_S)
    except ValueError:
        return LOST_S
    return value if value > 0 else LOST_S


def lost(audit: AuditStore, run_id: str, now: float | None = None) -> str | None:
    """Why a claimed run's worker has lost it (silent past LOST_S, or alive without it), else None."""
    row = fleet_run(audit, run_id)
    if row is None or not row["worker"]:
        return None
    found = fleet.worker_named(audit, row["worker"])
    worker = worker_of(found) if found else None
    now = now or time.time()
    if worker is None:  # removed (`hearth fleet rm`): its token is refused, so it cannot send the rest
        return WORKER_LOST.format(worker=row["worker"])
    heard_since = _heard_since(audit, now)
    if heard_since is None:
        return None  # the door is down: workers could not have been heard
    silent_since = max(worker.seen_at or 0, row["claimed_at"] or 0, heard_since)
    if now - silent_since >= lost_after():
        return WORKER_LOST.format(worker=worker.name)
    if run_id not in worker.running and (worker.seen_at or 0) > (row["claimed_at"] or 0) + 5.0:
        run = audit.run(run_id) or {}
        if run.get("status") == "running":  # it says it holds no such run, well after taking it
            return WORKER_LOST.format(worker=worker.name)
    return None


# -- a worker's calls ---------------------------------------------------------------------------
def claim(audit: AuditStore, worker: Worker, run_id: str, *, paused: bool = False) -> dict[str, Any]:
    """The worker took `run_id` from the broker: {"go": "run" | "resume" | "wait" | "drop", ...};
    `wait` while the hub is paused (`hearth pause`): nothing new starts, the request is kept."""
    if not re.fullmatch(ID_PATTERN, run_id):
        raise WorkerRefused(400, f"{run_id!r} is not a run id")
    with audit.transaction():
        row = fleet_run(audit, run_id)
        if row is None:
            raise WorkerRefused(404, f"the hub sent no request {run_id}")
        if row["worker"] and row["worker"] != worker.name:
            fleet.refused(audit, run_id)
            return {"go": "drop", "why": f"run {run_id} is {row['worker']}'s; a redelivery is not run twice"}
        run = audit.run(run_id)
        if row["worker"] == worker.name:
            if run is not None and run["status"] == "waiting" and not row["lost"] and run_id not in worker.running:
                fleet.claimed(audit, run_id)
                return {"go": "resume", "approvals": approvals.decided_of_run(audit, run_id)}
            fleet.refused(audit, run_id)
            return {"go": "drop", "why": f"run {run_id} already ran here; a redelivery is not run twice"}
        if run is not None:  # ended at the hub before anyone took it (stopped while queued)
            return {"go": "drop", "why": f"run {run_id} is already {run['status']}"}
        if paused:
            return {"go": "wait", "why": "the hub is paused; the request waits in the broker"}
        if row["label"] and row["label"] not in (worker.name, *worker.labels):  # a label taken from it late
            why = f"run {run_id} is for a worker labelled {row['label']}; {worker.name} is not (`hearth fleet labels`)"
            return {"go": "wait", "why": why}
        fleet.claimed(audit, run_id, worker.name)
        fleet.heard(audit, worker.name)
    return {"go": "run"}


def heartbeat(
    audit: AuditStore,
    worker: Worker,
    models: list[Any],
    states: list[Any],
    budget: Budget | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Keep what the worker says it has (its models, its runs' live states); answer with the stops
    asked of its runs (by an operator, by the hub's `budget` spent, or because the hub settled one
    as lost)."""
    models = sorted({m for m in models if isinstance(m, str) and 0 < len(m) <= 200})
    kept = [_state(s) for s in states if isinstance(s, dict) and re.fullmatch(ID_PATTERN, str(s.get("run_id")))]
    fleet.heard(audit, worker.name, models=json.dumps(models), running=json.dumps(kept))
    if budget is not None:
        stop_spent(audit, worker, kept, budget, now or local_now())
    stops = fleet.stops(audit, worker.name)
    running = {s["run_id"] for s in kept}
    return {
        "stop": {row["run_id"]: row["why"] for row in stops if row["run_id"] in running},
        "labels": list(worker.labels),
    }


STATE_KEYS = ("run_id", "state", "detail", "iteration", "tool", "agent_name", "label", "model", "updated_at", "pid")


def _state(state: dict[str, Any]) -> dict[str, Any]:
    """A live state as a worker sent it, kept to the keys the hub shows, each a short scalar."""
    kept: dict[str, Any] = {}
    for key in STATE_KEYS:
        value = state.get(key)
        if isinstance(value, str):
            kept[key] = value[:300]
        elif isinstance(value, int | float) and not isinstance(value, bool):
            kept[key] = value
    return kept


def mark_lost(audit: AuditStore, run_id: str, reason: str) -> None:
    """The run is settled as lost: its worker may write nothing more of it, and stops it if it comes back."""
    fleet.mark_lost(audit, run_id, reason)


def approval(audit: AuditStore, worker: Worker, approval_id: str) -> dict[str, Any]:
    row = approvals.row_of(audit, approval_id)
    if row is None or not _claimed_by(audit, worker, row["run_id"]):
        raise WorkerRefused(404, f"no approval {approval_id} of a run of {worker.name}")
    return row


def accept(audit: AuditStore, worker: Worker, batch: list[dict[str, Any]]) -> dict[str, Any]:
    """Write a batch of events `[{"id": ..., "event": <to_json line>}]`, each once; what was done
    (and, for the door, the runs that ended and the approvals asked: the hub alerts them).

    The batch is one transaction: a refused event refuses the batch (nothing of it is written) and
    the answer names it (`index`) and why; the worker's outbox drops that one (sending it again
    would be refused again) and sends the rest again."""
    recorder = SqliteRecorder(audit)
    written = skipped = 0
    finished: list[str] = []
    asked: list[dict[str, Any]] = []
    with audit.transaction():
        for index, item in enumerate(batch):
            try:
                found = _one(audit, worker, item)
            except WorkerRefused as exc:
                raise WorkerRefused(exc.status, str(exc), index) from None
            if found is None:
                skipped += 1
                continue
            event_id, event = found
            recorder.record(event)
            lag = _lag_ms(event, time.time())
            fleet.write_event(audit, event_id, _run_of(audit, event), worker.name, type(event).__name__, lag)
            written += 1
            if isinstance(event, RunFinished):
                finished.append(event.run_id)
            if isinstance(event, ApprovalAsked) and event.row.get("status") == "pending":
                asked.append(event.row)
    return {"written": written, "skipped": skipped, "finished": finished, "asked": asked}


def _lag_ms(event: RunEvent, now: float) -> float | None:
    """How long after the worker stamped it the hub wrote it (one clock only on one machine)."""
    at = getattr(event, "at", None)
    try:
        return round((now - parse_stamp(str(at)).timestamp()) * 1000, 1)
    except ValueError:
        return None


def _one(audit: AuditStore, worker: Worker, item: Any) -> tuple[str, RunEvent] | None:
    """One item of a batch, checked: (its id, the event to write), or None when written before."""
    event_id = item.get("id") if isinstance(item, dict) else None
    line = item.get("event") if isinstance(item, dict) else None
    if not isinstance(event_id, str) or not 8 <= len(event_id) <= 100 or not isinstance(line, str):
        raise WorkerRefused(400, "each event is {id: 8-100 characters, event: a run event as JSON text}")
    if fleet.event_written(audit, event_id):
        return None
    try:
        event = from_json(line)
    except (ValueError, TypeError) as exc:
        raise WorkerRefused(400, f"event {event_id} is not a run event: {exc}") from None
    checked = _checked(audit, worker, event)
    if isinstance(checked, RunStarted) and audit.run(checked.run_id) is not None:
        return None  # the row a worker sends again after its run ended (hearth/fleet/worker.py)
    if isinstance(checked, RunFinished):
        checked = _as_stopped(audit, checked)
    return event_id, checked


def _as_stopped(audit: AuditStore, event: RunFinished) -> RunFinished:
    """A run the hub stopped (its budget spent at the hub) ends as the hub asked, with the hub's reason:
    its worker only saw the signal."""
    row = fleet_run(audit, event.run_id)
    if row is None or not row["stop_by"] or event.status != "interrupted":
        return event
    status = row["stop_status"] or "interrupted"
    error = row["stop_by"] if status != "interrupted" else event.columns.get("error")
    return dataclasses.replace(event, status=status, columns={**event.columns, "error": error})


def _run_of(audit: AuditStore, event: RunEvent) -> str:
    if isinstance(event, ApprovalAsked):
        return str(event.row.get("run_id"))
    if isinstance(event, ApprovalDecided):
        row = approvals.row_of(audit, event.approval_id)
        return str(row["run_id"]) if row else ""
    return str(getattr(event, "run_id", ""))


def _checked(audit: AuditStore, worker: Worker, event: RunEvent) -> RunEvent:
    """The event as the hub writes it, or WorkerRefused(403) when it is not this worker's to send."""
    run_id = _run_of(audit, event)
    if not _claimed_by(audit, worker, run_id):
        raise WorkerRefused(403, f"{type(event).__name__} of run {run_id or '?'}: not a run {worker.name} claimed")
    try:
        check(event, audit)  # a closed schema: the columns of its table the stream may write, plain values
    except ColumnRefused as exc:
        raise WorkerRefused(400, str(exc)) from None
    if isinstance(event, RunStarted):
        if event.row.get("id") != event.run_id:
            raise WorkerRefused(403, f"RunStarted of {event.run_id} names another run in its row")
        return RunStarted(event.run_id, {**event.row, "worker": worker.name}, event.at)
    if isinstance(event, ApprovalAsked):
        _new_approval(audit, event.row)
        decided_by = str(event.row.get("decided_by") or "")
        if event.row.get("status") == "approved" and not decided_by.startswith("rule"):
            raise WorkerRefused(
                403, f"approval {event.row.get('id')}: a worker cannot send an approval decided by a person"
            )
    if isinstance(event, ApprovalDecided) and event.status not in RUNS_OWN_DECISIONS:
        held = approvals.row_of(audit, event.approval_id)
        if held is None or held["status"] != event.status:
            raise WorkerRefused(
                403, f"approval {event.approval_id}: {event.status} is decided at the hub, not by a worker"
            )
    if hasattr(event, "columns") and "worker" in getattr(event, "columns", {}):
        raise WorkerRefused(403, "a worker does not write a run's worker column")
    return event


def _new_approval(audit: AuditStore, row: dict[str, Any]) -> None:
    """WorkerRefused(409) when the approval's id is taken: an id names one approval, never a second."""
    held = approvals.row_of(audit, str(row.get("id")))
    if held is not None:
        whose = "this run" if held["run_id"] == row.get("run_id") else "another run"
        raise WorkerRefused(
            409, f"approval {held['id']} exists already, of {whose}; an id is not reused: nothing was written"
        )


def _claimed_by(audit: AuditStore, worker: Worker, run_id: str) -> bool:
    row = fleet_run(audit, run_id) if run_id else None
    return row is not None and row["worker"] == worker.name and not row["lost"]
