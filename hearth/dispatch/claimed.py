"""A claimed request's run: `hearth agent ID` (a systemd unit), or a local launcher's child process.

It takes the request's lock, runs the request the spawner recorded in the audit (the file is read
once, by the spawner: a file changed after that check never runs), and hands the file to
hearth/dispatch/settle.py to be put where its final status says. A request moved into claimed/ by
hand has no record yet: it is read, checked and recorded here, once.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from agent.clock import utc_now
from hearth.audit.requests import FileFacts, record_unfinished
from hearth.audit.store import AuditStore
from hearth.dispatch.settle import place, reject, settle_locked
from hearth.errors import HearthError, NotFound, UsageError
from hearth.evolve import run_evolve_request
from hearth.ids import ID_PATTERN
from hearth.leash import alerts
from hearth.locks import RunLock, lock_holder
from hearth.queue.directory import Queue, read_request_bytes
from hearth.queue.intake import Parsed, RequestRefused, check, parse_request
from hearth.queue.ledger import ensure_request_row, recorded_request
from hearth.queue.longspec import Research
from hearth.queue.request import Request
from hearth.queue.submit import submit
from hearth.render import visible_line
from hearth.run.admission import goal_request
from hearth.run.delegate import caller_goes_on
from hearth.run.exits import Interrupted, exit_code
from hearth.run.profiles import load_profile
from hearth.run.runner import run_goal
from hearth.run.suspend import ready
from hearth.settings import Settings

LOCK_WAIT_S = 1.0  # a sweep or `hearth state` holds a lock for a moment; a live run for good


def run_claimed(request_id: str, settings: Settings, *, out: TextIO = sys.stdout, json_lines: bool = False) -> int:
    """`hearth agent ID`: run a claimed request once and place its file; the exit code of its status."""
    if not re.fullmatch(ID_PATTERN, request_id):
        raise UsageError(f"{request_id!r} is not a request id")
    settings.writable_state_dir()
    queue = Queue(settings.queue_dir)
    path = queue.claimed / f"{request_id}.json"
    if not path.exists():
        raise NotFound(f"no claimed request {request_id} in {queue.claimed}; `hearth spawn` claims requests first")
    lock = RunLock.acquire(queue.lock_path(request_id), wait_s=LOCK_WAIT_S)
    if lock is None:
        pid = lock_holder(queue.lock_path(request_id))
        raise UsageError(f"request {request_id} is already running (pid {pid or 'unknown'})")
    try:
        return _run_locked(queue, path, request_id, settings, _Output(out, json_lines))
    finally:
        lock.release(remove=True)


@dataclass(frozen=True)
class _Output:
    out: TextIO
    json_lines: bool


def _run_locked(queue: Queue, path: Path, request_id: str, settings: Settings, out: _Output) -> int:
    if not path.exists():  # a sweep settled it while we waited for the lock
        raise NotFound(f"request {request_id} is no longer claimed")
    with AuditStore(settings.audit_path) as audit:
        previous = audit.run(request_id)
        cause = ready(audit, previous) if previous is not None else None
        if previous is not None and cause is None:
            if previous["status"] == "waiting":  # its approval still waits: nothing to do yet
                print(f"hearth agent: run {request_id} waits for its approval; it goes on once decided", flush=True)
                return exit_code("waiting")
            # started before and died (or already went on once after a restart): settled, never run twice
            status = settle_locked(queue, audit, path, settings, previous)
            raise UsageError(f"request {request_id} already ran; its run is now {status}")
        if cause:
            recorded = recorded_request(audit, request_id)
            if recorded is None:
                raise UsageError(f"run {request_id} cannot go on: its request is not in the audit")
            going = recorded[0].request
        else:
            parsed = _admitted(queue, audit, path)
            if parsed is None:
                return exit_code("rejected")
    if cause:
        return _run_request(queue, path, going, settings, out, resume=cause)
    assert parsed is not None
    return _run_request(queue, path, parsed.request, settings, out)


def _admitted(queue: Queue, audit: AuditStore, path: Path) -> Parsed | None:
    """The recorded request (checked again against this host), else the file read and recorded now."""
    data: bytes | None = None
    try:
        recorded = recorded_request(audit, path.name.removesuffix(".json"))
        if recorded is not None:
            check(recorded[0].request)
            _say_if_changed(path, recorded[1])
            return recorded[0]
        data = read_request_bytes(path)
        parsed = parse_request(data, path.name)
        check(parsed.request)
    except RequestRefused as exc:
        reject(queue, audit, path, str(exc), data)
        return None
    ensure_request_row(audit, parsed, FileFacts.of(path.name, data), utc_now())
    return parsed


def _say_if_changed(path: Path, sha256: str | None) -> None:
    """A claimed file rewritten after its check is not what runs; the run's log says so."""
    try:
        now = FileFacts.of(path.name, read_request_bytes(path)).sha256
    except (OSError, RequestRefused):
        now = None
    if sha256 and now != sha256:
        print(
            f"hearth agent: {path.name} changed after it was checked (sha256 {sha256[:12]}, now "
            f"{(now or 'unreadable')[:12]}); the request as recorded runs",
            file=sys.stderr,
            flush=True,
        )


def _run_request(
    queue: Queue, path: Path, request: Request, settings: Settings, out: _Output, *, resume: str | None = None
) -> int:
    """Run the request (or, with `resume`, go on with its run: hearth/run/resume.py) and place its file."""
    try:
        if request.evolve:
            run_evolve_request(goal_request(request, settings), settings)
            status, error = _recorded(settings, request.id)
        elif request.marathon or request.swarm:
            status, error = _run_long(request, settings, out)
        elif (spec := research_of(request, settings)) is not None:
            status, error = _run_research(request, spec, settings, out, resume)
        else:
            goal = goal_request(request, settings)
            _, outcome = run_goal(goal, settings, out=out.out, json_lines=out.json_lines, suspend=True, resume=resume)
            status, error = outcome.status, outcome.error
    except UsageError as exc:  # recorded by run_goal as a rejected run
        status, error = "rejected", str(exc)
    except (KeyboardInterrupt, Interrupted):  # a signal outside the loop's own handling
        status, error = "interrupted", "interrupted by a signal"
        _close_run(settings, request.id, status, error)
    except BaseException as exc:
        reason = f"internal error: {type(exc).__name__}: {exc}"
        _close_run(settings, request.id, "failed", reason)
        queue.fail(path, reason, run_id=request.id, status="failed")
        raise
    with AuditStore(settings.audit_path) as audit:
        place(queue, audit, path, status, error)
    if request.child_of and status != "waiting":
        caller_goes_on(settings, request.child_of)  # a caller waiting on this child goes on
    if request.source == "eval":  # a case of an eval: scored as it ends (hearth/eval/watch.py)
        from hearth.eval.watch import after_run

        after_run(settings, request.id)
    return exit_code(status)


def _run_long(request: Request, settings: Settings, out: _Output) -> tuple[str, str]:
    """A marathon or a swarm: its code loads only for such a request."""
    if request.marathon:
        from hearth.run.long.marathon import run_marathon

        _, outcome = run_marathon(
            goal_request(request, settings), request.marathon, settings, out=out.out, json_lines=out.json_lines
        )
    else:
        from hearth.run.long.swarm import run_swarm

        outcome = run_swarm(request, goal_request(request, settings), settings, submit=submit, out=out.out)
    return outcome.status, outcome.error


def research_of(request: Request, settings: Settings) -> Research | None:
    """The research limits a request runs under: its own `research`, else its profile's [research]
    table (a follow-up, a marathon, a swarm or self-evolution under that profile is not research)."""
    if request.research is not None:
        return request.research
    if request.continues or request.evolve or request.marathon or request.swarm:
        return None
    try:
        profile = load_profile(settings.config_dir, goal_request(request, settings).agent_name)
    except HearthError:
        return None  # admission refuses the run with the reason, recorded
    return profile.research


def _run_research(
    request: Request, spec: Research, settings: Settings, out: _Output, resume: str | None
) -> tuple[str, str]:
    """A research run: its code loads only for such a request."""
    from hearth.research.run import How, run_research

    how = How(out=out.out, json_lines=out.json_lines, suspend=True, resume=resume)
    _, outcome = run_research(goal_request(request, settings), spec, settings, how)
    return outcome.status, outcome.error


def _recorded(settings: Settings, run_id: str) -> tuple[str, str]:
    """The final status and error the run recorded (the evolve flow records its own run)."""
    with AuditStore(settings.audit_path) as audit:
        run = audit.run(run_id)
    if run is None or run["status"] == "running":
        return "failed", "the self-evolution flow ended without recording a final status"
    return run["status"], run.get("error") or ""


def _close_run(settings: Settings, request_id: str, status: str, reason: str) -> None:
    with AuditStore(settings.audit_path) as audit:
        record_unfinished(audit, request_id, status, reason)


def run_child(request_id: str, settings: Settings, log_path: str) -> None:
    """Entry of a local run's process (`hearth spawn --local`, `hearth watch`): log, run, exit."""
    os.setsid()  # a terminal's ^C reaches the spawner, which stops its runs with SIGTERM
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o640)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    try:
        code = run_claimed(request_id, settings)
    except Exception as exc:
        print(visible_line(f"hearth agent {request_id}: {exc}"), file=sys.stderr)
        code = getattr(exc, "exit_code", 70)
    alerts.flush()  # while the interpreter can still send them
    sys.stdout.flush()
    sys.exit(code)
