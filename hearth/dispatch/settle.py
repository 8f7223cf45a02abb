"""Settlement: what becomes of a claimed request once its run has ended or its process is gone.

Whether a run's process is gone is its launcher's word (`Launcher.alive`, hearth/dispatch/launchers/):
the systemd and local rows answer by the run's flocks on this host, a launcher of runs elsewhere
by what that place says. A run the launcher calls gone and whose lock no process of this host
holds, while its row still says `running`, died (SIGKILL, OOM, power loss). `settle()` turns that
into an `interrupted` run and a request kept in failed/, and stops the runs it started (its
children, which nobody would wait for); the spawner and `hearth watch` call it
on every sweep. Settling takes the request's lock (queue/locks/<id>.lock) so that one settler
settles it, once, and a run starting on this host cannot begin meanwhile.

Final places by the run's recorded status: `interrupted` -> failed/ (kept to run again under a
new id), `rejected` -> rejected/, anything else -> the file is removed (the audit keeps its body).

`settle_dead()` is what every command that looks at runs calls first (`hearth runs`, `show`,
`state`, `spawn`, `watch`, `serve`; the command center's overview and metrics through
`settle_dead_runs()`): a `running` row whose process is gone, however it went (killed, crashed,
a broken pipe, a power cut), becomes `interrupted`; a claimed request goes through `settle()`
as above. A run not from the queue (a `hearth-loop`) holds <state>/state/<id>.lock
(`hold_run`, hearth/run/liveness.py), which settling takes the same way.

This module is the spawner's (the path unit's oneshot): it reads and writes the queue and the
audit and never imports the engine, so a sweep starts fast.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.safety.display import bounded
from hearth.audit import requests, runs, steps
from hearth.audit.requests import FileFacts, record_unfinished
from hearth.audit.store import AuditStore, new_run_id
from hearth.dispatch.launchers import Launcher, launcher_for
from hearth.errors import NotFound
from hearth.ids import ID_PATTERN
from hearth.locks import RunLock
from hearth.queue.directory import Queue, read_request_bytes
from hearth.queue.intake import RequestRefused
from hearth.queue.ledger import record_rejection
from hearth.queue.request import Request
from hearth.run.liveness import run_lock_path
from hearth.run.state import remove_state
from hearth.run.suspend import AGAIN, ready, resumable
from hearth.settings import Settings

RESUME_NOW = "resume"  # settle's word for a run to start again (the spawner's sweep starts it)
CLAIM_GRACE_S = 120.0  # a claim this old with no run and no lock: its agent never started
GONE = "the run's process is gone (killed, crashed or the machine stopped) before it finished"


def settle_dead(audit: AuditStore, settings: Settings, launcher: Launcher | None = None) -> list[str]:
    """Settle every run recorded `running` whose process is gone as `interrupted`; their ids.

    `launcher` says which are gone (default: HEARTH_LAUNCHER's). A reader who may not write the
    audit or the state directory settles nothing, and is not stopped by that: what it shows is
    what is recorded.
    """
    launcher = launcher or launcher_for(settings)
    try:
        running = runs.with_status(audit, "running")
        settled = []
        for run_id in running:
            if _settle_one(audit, settings, run_id, launcher):
                settled.append(run_id)
        return settled
    except (OSError, sqlite3.Error):
        return []


def settle_dead_runs(settings: Settings, launcher: Launcher | None = None) -> list[str]:
    """`settle_dead` over the audit at its place, if there is one and this reader may write it
    (a viewer may not: it shows what is recorded); what a report of what runs now calls first."""
    if not settings.audit_path.exists():
        return []
    try:
        with AuditStore(settings.audit_path) as audit:
            return settle_dead(audit, settings, launcher)
    except (OSError, sqlite3.Error):
        return []


def _settle_one(audit: AuditStore, settings: Settings, run_id: str, launcher: Launcher) -> bool:
    queue = Queue(settings.queue_dir)
    name = f"{run_id}.json"
    if (queue.claimed / name).exists():  # a queue run: its file is placed too (or it goes on: the spawner's)
        return settle(queue, audit, settings, name, launcher) == "interrupted"
    if not re.fullmatch(ID_PATTERN, run_id) or launcher.alive(run_id):
        return False
    settings.runs_state_dir.mkdir(parents=True, exist_ok=True)
    lock = RunLock.try_acquire(run_lock_path(settings, run_id))
    if lock is None:
        return False  # a process of this host holds it: alive, whatever the launcher knows
    try:
        run = audit.run(run_id)
        if run is None or run["status"] != "running":
            return False  # it ended while we looked
        record_unfinished(audit, run_id, "interrupted", GONE)
        remove_state(settings.runs_state_dir, run_id)
        alert_ended(audit, settings, run_id, "interrupted", GONE)
        return True
    finally:
        lock.release(remove=True)


def reject(
    queue: Queue,
    audit: AuditStore,
    path: Path,
    reason: str,
    data: bytes | None,
    *,
    request: Request | None = None,
    run_id: str | None = None,
) -> Path | None:
    """Keep a refused file in rejected/ and record why (at most 500 characters); None if someone
    else moved it first.

    The rejected run is named by the file's id when that is a free, valid id (so `hearth show ID`
    finds the refusal the sender was told about), else by a fresh one."""
    reason = bounded(reason)
    facts = FileFacts.of(path.name, data)
    run_id = run_id or _free_id(audit, facts.file.removesuffix(".json")) or new_run_id()
    kept = queue.reject(path, reason, run_id=run_id, size=facts.size, sha256=facts.sha256)
    if kept is not None:
        record_rejection(
            audit,
            reason,
            facts,
            kept_as=str(kept),
            run_id=run_id,
            request=request,
            request_id=facts.file.removesuffix(".json"),
        )
    return kept


def _free_id(audit: AuditStore, stem: str) -> str | None:
    if not (re.fullmatch(ID_PATTERN, stem) and audit.run(stem) is None):
        return None
    if requests.request_row(audit, stem) is not None:
        return None  # an accepted request owns that id
    return stem


def place(queue: Queue, audit: AuditStore, path: Path, status: str, error: str | None) -> None:
    """Put a claimed request whose run has a final status where that status says."""
    request_id = path.name.removesuffix(".json")
    if status == "waiting":
        return  # suspended: its request stays claimed until the run goes on and ends
    if status == "interrupted":
        queue.fail(path, error or "interrupted", run_id=request_id, status=status)
    elif status == "rejected":
        reject(queue, audit, path, error or "rejected", _bytes(path), run_id=request_id)
    else:
        queue.finish(request_id)


def settle(
    queue: Queue,
    audit: AuditStore,
    settings: Settings,
    name: str,
    launcher: Launcher,
    *,
    grace_s: float = CLAIM_GRACE_S,
    now: Callable[[], float] = time.time,
) -> str | None:
    """Settle one claimed file if nobody runs it (its launcher's word); what became of it, or None."""
    path = queue.claimed / name
    request_id = name.removesuffix(".json")
    if not (name.endswith(".json") and re.fullmatch(ID_PATTERN, request_id)):
        return _junk(queue, audit, path, grace_s, now)
    if launcher.alive(request_id):
        return None
    lock = RunLock.try_acquire(queue.lock_path(request_id))
    if lock is None:
        return None  # a process of this host took it this moment (its run, or another settler)
    outcome: str | None = None
    try:
        run = audit.run(request_id) if path.exists() else None
        lost = launcher.gone(request_id) if run is not None and run["status"] == "running" else None
        if run is not None and lost:
            outcome = _lost(queue, audit, path, settings, lost)
        elif run is not None:
            outcome = settle_locked(queue, audit, path, settings, run)
            if outcome in (RESUME_NOW, "waiting"):
                return outcome  # its lock is released below, its file stays: the run goes on
        elif path.exists() and _age(path, now) >= grace_s:
            outcome = _never_started(queue, audit, path, settings)
        return outcome
    finally:
        lock.release(remove=outcome not in (None, RESUME_NOW) or not path.exists())


def _age(path: Path, now: Callable[[], float]) -> float:
    try:
        return now() - path.lstat().st_ctime  # the rename into claimed/ set ctime
    except FileNotFoundError:
        return 0.0


def _junk(queue: Queue, audit: AuditStore, path: Path, grace_s: float, now: Callable[[], float]) -> str | None:
    """A claimed name that is no request: its spawner stopped before rejecting it."""
    if _age(path, now) < grace_s:
        return None  # its spawner is about to reject it
    reason = "left in claimed/ by a spawner that stopped; not a request file"
    return "rejected" if reject(queue, audit, path, reason, None) else None


def settle_locked(queue: Queue, audit: AuditStore, path: Path, settings: Settings, run: dict[str, Any]) -> str:
    """What becomes of a claimed request whose run's process is gone: `resume` when the run goes on
    in a new process (hearth/run/suspend.py: its approval was decided, or it stopped with the
    machine, once), `waiting` while its approval waits, else its final place."""
    if run["status"] in ("running", "waiting") and ready(audit, run) is not None:
        return RESUME_NOW
    if run["status"] == "waiting":
        return "waiting"
    if run["status"] == "running":
        reason = AGAIN if resumable(audit, run) else GONE
        record_unfinished(audit, run["id"], "interrupted", reason)
        remove_state(settings.runs_state_dir, run["id"])  # what it last said is no longer true
        place(queue, audit, path, "interrupted", reason)
        alert_ended(audit, settings, run["id"], "interrupted", reason)
        stop_children(audit, settings, run["id"])
        return "interrupted"
    place(queue, audit, path, run["status"], run.get("error"))
    return run["status"]


def _lost(queue: Queue, audit: AuditStore, path: Path, settings: Settings, reason: str) -> str:
    """A run its launcher lost (a fleet's worker died): `interrupted` with the launcher's reason,
    never resumed (its workspace is where it was), its request kept in failed/, alerted."""
    run_id = path.name.removesuffix(".json")
    record_unfinished(audit, run_id, "interrupted", reason)
    remove_state(settings.runs_state_dir, run_id)
    place(queue, audit, path, "interrupted", reason)
    alert_ended(audit, settings, run_id, "interrupted", reason)
    stop_children(audit, settings, run_id)
    return "interrupted"


def stop_children(audit: AuditStore, settings: Settings, run_id: str) -> list[str]:
    """A run that died stops the runs it started and that may still go (a swarm's or a delegating
    run's children, named by its `child` steps), as a stop of it would; the ids stopped."""
    from hearth.dispatch.stop import NotRunning, StopFailed, stop_run  # only when a dead run had children

    stopped = []
    for child in steps.children(audit, run_id):
        try:
            stop_run(settings, child, by=f"hearth, with {run_id}, whose process was gone")
        except (NotRunning, NotFound, StopFailed):
            continue
        stopped.append(child)
    return stopped


def _never_started(queue: Queue, audit: AuditStore, path: Path, settings: Settings) -> str:
    request_id = path.name.removesuffix(".json")
    reason = "claimed, but its agent never started (is hearth-agent@.service installed and startable?)"
    record_unfinished(audit, request_id, "failed", reason)
    queue.fail(path, reason, run_id=request_id, status="failed")
    alert_ended(audit, settings, request_id, "failed", reason)
    return "failed"


def alert_ended(audit: AuditStore, settings: Settings, run_id: str, status: str, reason: str) -> None:
    """A run that could not say it ended (killed, never started): alerted as it would have been."""
    from hearth.leash import alerts  # loaded only when a sweep finds such a run

    run = audit.run(run_id) or {}
    agent = str(run.get("agent_name") or "")
    alerts.run_ended(settings, run_id, status, goal=str(run.get("goal") or ""), detail=reason, agent=agent)


def _bytes(path: Path) -> bytes | None:
    try:
        return read_request_bytes(path)
    except (OSError, RequestRefused):
        return None
