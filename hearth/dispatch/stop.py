"""Stopping runs: one run or every active one, recorded `interrupted` with who stopped it.

    stop_run(settings, run_id, by=...)   one run, wherever it is:
        waiting at the top of the queue -> claimed here and kept in failed/ (it never starts)
        claimed, its agent not started  -> kept in failed/
        waiting (suspended for approval) -> interrupted here, its approval cancelled (it has no process)
        running                         -> its launcher's `stop` (hearth/dispatch/launchers/): a
                                           unit stopped under systemd, a local process SIGTERMed
                                           then SIGKILLed after `grace_s`, wherever else it runs
        already finished                -> NotRunning (nothing changed)
    stop_all(settings, by=...)           every run that is claimed or running now
    stop_as(settings, run_id, user, by=...)   a person's stop: asked of hearth/users/access.py
                                           first (`stop` in the run's profile), then stop_run

Runs made from the stopped one go with it: a swarm's or a delegating run's children (queued,
claimed or running; its `child` steps name them before they are queued) and any linked run still
running (a marathon's leg, a synthesis), each stopped the same way with the reason naming the
parent. A stopped child wakes the run that delegated to it, which goes on told so.

A run that gets SIGTERM records itself `interrupted` and keeps its request in failed/; one that
had to be killed, or never started, is recorded here the way a sweep would. Either way its
error names who stopped it, a `stop` step is in its timeline, and its pending approvals are
cancelled (nobody approves a call that can no longer run). The command center's Stop buttons
and the CLI's stop command are both this module.

Stops of one run are one at a time (an flock on queue/locks/<id>.stop): two at once, from two
operators or a button pressed twice, give one stop, recorded once (one `stop` step, one
`interrupted`), and the other caller hears that the run has already ended. A stop that meets a
spawner claiming the same request waits for the claim and stops it as a claimed one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from agent.clock import utc_now
from hearth.audit import steps
from hearth.audit.approvals import cancel_pending_of_run
from hearth.audit.requests import FileFacts, record_unfinished
from hearth.audit.store import AuditStore
from hearth.dispatch.launchers import STOP_GRACE_S, Launcher, LaunchError, launcher_for
from hearth.errors import HearthError, NotFound
from hearth.ids import ID_PATTERN
from hearth.locks import RunLock
from hearth.queue.directory import Queue, read_request_bytes
from hearth.queue.intake import RequestRefused, parse_request
from hearth.queue.ledger import ensure_request_row
from hearth.run.state import FINAL_STATES, read_states, remove_state
from hearth.settings import Settings
from hearth.users.access import EVERY, User, require

STOP_WAIT_S = 15.0  # a second stop of one run waits this long beyond the first one's grace


class NotRunning(HearthError):
    """The run has finished already; nothing was changed (exit 1)."""


class StopFailed(HearthError):
    """The run could not be stopped (systemctl refused, no right to signal it); str() says why."""


@dataclass(frozen=True)
class Stopped:
    run_id: str
    how: str  # dequeued | cancelled | systemd | signal | killed
    status: str  # the run's status now (interrupted, or what it ended with meanwhile)
    approvals_cancelled: int = 0
    with_it: tuple[Stopped, ...] = ()  # runs made from this one, stopped with it


def stop_run(
    settings: Settings,
    run_id: str,
    *,
    by: str,
    grace_s: float = STOP_GRACE_S,
    launcher: Launcher | None = None,
) -> Stopped:
    """Stop one run and record who did; NotFound for an unknown id, NotRunning for a finished run
    (one another stop ended meanwhile, too). `launcher` is the one that started it (default:
    HEARTH_LAUNCHER's)."""
    return _stop(settings, run_id, by, grace_s, launcher, frozenset())


def stop_as(settings: Settings, run_id: str, user: User, *, by: str, grace_s: float = STOP_GRACE_S) -> Stopped:
    """A person's stop of one run (a door's): Forbidden unless `user` may stop in its profile."""
    require(user, "stop", run_profile(settings, run_id))
    return stop_run(settings, run_id, by=by, grace_s=grace_s)


def stop_all_as(settings: Settings, user: User, *, by: str, grace_s: float = STOP_GRACE_S) -> list[Stopped]:
    """A person's stop of every run: Forbidden unless `user` may stop in every profile."""
    require(user, "stop", EVERY)
    return stop_all(settings, by=by, grace_s=grace_s)


def run_profile(settings: Settings, run_id: str) -> str:
    """The agent profile a run is (its row), or will be (its request in the queue); `default`."""
    run = None
    if settings.audit_path.exists():
        with AuditStore(settings.audit_path) as audit:
            run = audit.run(run_id)
    if run is not None:
        return str(run["agent_name"] or "default")
    queue = Queue(settings.queue_dir)
    if not re.fullmatch(ID_PATTERN, run_id):
        return "default"
    for path in (queue.root / f"{run_id}.json", queue.claimed / f"{run_id}.json"):
        try:
            return parse_request(read_request_bytes(path), path.name).request.agent_name or "default"
        except (OSError, RequestRefused):
            continue
    return "default"


def _stop(
    settings: Settings, run_id: str, by: str, grace_s: float, launcher: Launcher | None, chain: frozenset[str]
) -> Stopped:
    """stop_run, one stop of `run_id` at a time; `chain` holds the runs this stop is already stopping."""
    queue = Queue(settings.queue_dir)
    queue.ensure()
    turn = RunLock.acquire(queue.locks / f"{run_id}.stop", wait_s=grace_s + STOP_WAIT_S)
    if turn is None:
        raise StopFailed(f"another stop of run {run_id} is still going; try again")
    try:
        return _stop_locked(settings, queue, run_id, by, grace_s, launcher, chain | {run_id})
    finally:
        turn.release(remove=True)


def _stop_locked(
    settings: Settings,
    queue: Queue,
    run_id: str,
    by: str,
    grace_s: float,
    launcher: Launcher | None,
    chain: frozenset[str],
) -> Stopped:
    reason = f"stopped by {by}"
    if (queue.root / f"{run_id}.json").is_file() and _dequeued(settings, queue, run_id, reason):
        return Stopped(run_id, "dequeued", "interrupted")
    status = _status(settings, run_id)
    claimed = (queue.claimed / f"{run_id}.json").exists()
    if status is None and not claimed:
        raise NotFound(f"no run or request with id {run_id!r}; see: hearth runs")
    if status not in (None, "running", "waiting"):
        raise NotRunning(f"run {run_id} has already ended ({status}); nothing changed")
    if status in ("running", "waiting"):  # a waiting run has no process: it ends here, its approval cancelled
        _mark(settings, run_id, reason)
    launcher = launcher or launcher_for(settings)
    how = _end_process(launcher, run_id, grace_s)
    stopped = _settle(settings, queue, run_id, reason, how)
    stopped = replace(stopped, with_it=_stop_linked(settings, run_id, by, grace_s, launcher, chain))
    _wake_caller(settings, run_id)
    return stopped


def _wake_caller(settings: Settings, run_id: str) -> None:
    """A run that delegated to the stopped one goes on, told that it was stopped (hearth/run/delegate.py)."""
    from hearth.run.delegate import caller_goes_on  # only when a child was stopped

    with AuditStore(settings.audit_path) as audit:
        run = audit.run(run_id)
    if run and run.get("link") == "child" and run.get("parent_run"):
        caller_goes_on(settings, str(run["parent_run"]))


def _stop_linked(
    settings: Settings, run_id: str, by: str, grace_s: float, launcher: Launcher, chain: frozenset[str]
) -> tuple[Stopped, ...]:
    """The runs made from this one that may still go: a swarm's children, a running leg or synthesis."""
    with AuditStore(settings.audit_path) as audit:
        ids = steps.children(audit, run_id)
        ids += [r["id"] for r in audit.linked(run_id) if r["status"] == "running"]
    stopped = []
    for linked in dict.fromkeys(i for i in ids if i and i not in chain):
        try:
            stopped.append(_stop(settings, linked, f"{by}, with {run_id}", grace_s, launcher, chain))
        except (NotRunning, NotFound):
            continue
    return tuple(stopped)


def stop_all(
    settings: Settings, *, by: str, grace_s: float = STOP_GRACE_S, launcher: Launcher | None = None
) -> list[Stopped]:
    """Stop every claimed or running run (each as stop_run); those that ended meanwhile are skipped."""
    launcher = launcher or launcher_for(settings)
    stopped = []
    for run_id in active_ids(settings, launcher):
        try:
            stopped.append(stop_run(settings, run_id, by=by, grace_s=grace_s, launcher=launcher))
        except (NotRunning, NotFound):
            continue
    return stopped


def active_ids(settings: Settings, launcher: Launcher) -> list[str]:
    """Runs claimed from the queue or with a live state (here, or as the launcher reports) not final."""
    claimed = Queue(settings.queue_dir).claimed
    names = {p.name.removesuffix(".json") for p in claimed.glob("*.json")} if claimed.is_dir() else set()
    states = [*read_states(settings.runs_state_dir), *launcher.live()]
    live = {str(s.get("run_id")) for s in states if s.get("state") not in FINAL_STATES}
    return sorted(names | live)


def _status(settings: Settings, run_id: str) -> str | None:
    if not settings.audit_path.exists():
        return None
    with AuditStore(settings.audit_path) as audit:
        run = audit.run(run_id)
    return run["status"] if run else None


def _mark(settings: Settings, run_id: str, reason: str) -> None:
    """The stop in the run's timeline, before any signal, so a replay shows where it came."""
    with AuditStore(settings.audit_path) as audit:
        audit.record_step(run_id, "stop", detail=reason)


def _dequeued(settings: Settings, queue: Queue, run_id: str, reason: str) -> bool:
    """A request still waiting: claim it first (the spawner cannot then start it), keep it in
    failed/; False when a spawner claimed it this very moment (it is then stopped as a claimed one)."""
    path = queue.claim(f"{run_id}.json")
    if path is None:
        return False
    with AuditStore(settings.audit_path) as audit:
        _admit_quietly(audit, path)
        record_unfinished(audit, run_id, "interrupted", f"{reason} before it started")
    queue.fail(path, f"{reason} before it started", run_id=run_id, status="interrupted")
    return True


def _admit_quietly(audit: AuditStore, path: Path) -> None:
    """Keep the request's body in the audit, as the spawner would have, so its run row says what it was."""
    try:
        data = read_request_bytes(path)
        ensure_request_row(audit, parse_request(data, path.name), FileFacts.of(path.name, data), utc_now())
    except (OSError, RequestRefused):
        pass  # a request the spawner would have rejected: its run row still says it was stopped


def _end_process(launcher: Launcher, run_id: str, grace_s: float) -> str:
    """Make the run's process go, through the launcher that started it; how it went."""
    try:
        return launcher.stop(run_id, grace_s)
    except LaunchError as exc:
        raise StopFailed(f"cannot stop run {run_id}: {exc}") from None


def _settle(settings: Settings, queue: Queue, run_id: str, reason: str, how: str) -> Stopped:
    """After the process: record what it could not (killed, never started), name who stopped it."""
    queue.ensure()
    lock = RunLock.acquire(queue.lock_path(run_id), wait_s=2.0)
    if lock is None:
        raise StopFailed(f"run {run_id} still holds its lock after the stop; try again")
    path = queue.claimed / f"{run_id}.json"
    try:
        with AuditStore(settings.audit_path) as audit:
            status = _record(audit, run_id, reason)
            cancelled = cancel_pending_of_run(audit, run_id, f"its run was {reason}")
        if path.exists() and status == "interrupted":
            queue.fail(path, reason, run_id=run_id, status=status)
    finally:
        lock.release(remove=not path.exists())
    remove_state(settings.runs_state_dir, run_id)
    return Stopped(run_id, how, status, cancelled)


def _record(audit: AuditStore, run_id: str, reason: str) -> str:
    run = audit.run(run_id)
    if run is None or run["status"] in ("running", "waiting"):
        record_unfinished(audit, run_id, "interrupted", reason)
        return "interrupted"
    if run["status"] == "interrupted" and reason not in (run["error"] or ""):
        audit.update_run(run_id, error=f"{reason} ({run['error'] or 'interrupted'})")
    return str(run["status"])


def stopped_line(stopped: Stopped) -> str:
    """One line for a person: what became of the run."""
    cancelled = f", {stopped.approvals_cancelled} approval(s) cancelled" if stopped.approvals_cancelled else ""
    with_it = f"; with it: {', '.join(s.run_id for s in stopped.with_it)}" if stopped.with_it else ""
    return f"{stopped.run_id}: {stopped.status} ({stopped.how}){cancelled}{with_it}"
