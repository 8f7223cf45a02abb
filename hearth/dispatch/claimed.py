"""A claimed request's life: run it (`hearth agent ID`), put its file in its final place, settle
claims whose process is gone.

The run's process holds queue/locks/<id>.lock (flock) from before its run row exists until after its
request file is placed, so "the lock is free and the run is still `running`" can only mean the
process died (SIGKILL, OOM, power loss). `settle()` turns that into an `interrupted` run and a
request kept in failed/; the spawner and `hearth watch` call it on every sweep.

Final places by the run's recorded status: `interrupted` -> failed/ (kept to run again under a
new id), `rejected` -> rejected/, anything else -> the file is removed (the audit keeps its body).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from agent.hearth_tools import TOOLS
from hearth.audit.store import AuditStore, new_run_id, utc_now
from hearth.audit.requests import FileFacts, ensure_request_row, record_rejection, record_unfinished
from hearth.errors import NotFound, UsageError
from hearth.evolve import run_evolve_request
from hearth.queue import Queue, RunLock, lock_holder, read_request_bytes
from hearth.request import ID_PATTERN, Parsed, Request, RequestRefused, check_runnable, parse_request
from hearth.run.runner import GoalRequest, Interrupted, exit_code, run_goal
from hearth.settings import Settings
from hearth.run.state import write_atomic

CLAIM_GRACE_S = 120.0  # a claim this old with no run and no lock: its agent never started
LOCK_WAIT_S = 1.0  # a sweep or `hearth state` holds a lock for a moment; a live run for good
GONE = "the run's process is gone (killed, crashed or the machine stopped) before it finished"

def check(request: Request) -> None:
    """RequestRefused unless this host can run the request (the tools it names exist)."""
    check_runnable(request, TOOLS)


def goal_request(request: Request, settings: Settings) -> GoalRequest:
    return GoalRequest(
        goal=request.goal, model=request.model, agent_name=request.agent_name,
        mode=request.mode, max_iters=request.max_iterations, workspace=settings.agents_dir / request.id,
        run_id=request.id, source=request.source, requested_by=request.requested_by,
        allowed_tools=request.allowed_tools, timeout_s=float(request.timeout_s),
        credentials=request.credentials or [], egress=request.egress or [],
    )


def run_claimed(request_id: str, settings: Settings, *, out: TextIO = sys.stdout,
                json_lines: bool = False) -> int:
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
        if previous is not None:  # started before and died: settle it, never run it twice
            status = _settle_locked(queue, audit, path, settings, previous)
            raise UsageError(f"request {request_id} already ran; its run is now {status}")
        parsed = _admitted(queue, audit, path)
        if parsed is None:
            return exit_code("rejected")
    return _run_request(queue, path, parsed.request, settings, out)


def _admitted(queue: Queue, audit: AuditStore, path: Path) -> Parsed | None:
    """The request re-read and re-checked here (the file is the spawner's word, not ours)."""
    data: bytes | None = None
    try:
        data = read_request_bytes(path)
        parsed = parse_request(data, path.name)
        check(parsed.request)
    except RequestRefused as exc:
        reject(queue, audit, path, str(exc), data)
        return None
    ensure_request_row(audit, parsed, FileFacts.of(path.name, data), utc_now())
    return parsed


def reject(queue: Queue, audit: AuditStore, path: Path, reason: str, data: bytes | None, *,
           request: Request | None = None, run_id: str | None = None) -> Path | None:
    """Keep a refused file in rejected/ and record why; None if someone else moved it first."""
    run_id = run_id or new_run_id()
    facts = FileFacts.of(path.name, data)
    kept = queue.reject(path, reason, run_id=run_id, size=facts.size, sha256=facts.sha256)
    if kept is not None:
        record_rejection(audit, reason, facts, kept_as=str(kept), run_id=run_id, request=request,
                         request_id=facts.file.removesuffix(".json"))
    return kept


def _run_request(queue: Queue, path: Path, request: Request, settings: Settings, out: _Output) -> int:
    try:
        if request.evolve:
            run_evolve_request(goal_request(request, settings), settings)
            status, error = _recorded(settings, request.id)
        else:
            _, outcome = run_goal(goal_request(request, settings), settings, out=out.out,
                                  json_lines=out.json_lines)
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
    return exit_code(status)


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


def place(queue: Queue, audit: AuditStore, path: Path, status: str, error: str | None) -> None:
    """Put a claimed request whose run has a final status where that status says."""
    request_id = path.name.removesuffix(".json")
    if status == "interrupted":
        queue.fail(path, error or "interrupted", run_id=request_id, status=status)
    elif status == "rejected":
        reject(queue, audit, path, error or "rejected", _bytes(path), run_id=request_id)
    else:
        queue.finish(request_id)


def settle(queue: Queue, audit: AuditStore, settings: Settings, name: str, *,
           grace_s: float = CLAIM_GRACE_S, now: Callable[[], float] = time.time) -> str | None:
    """Settle one claimed file if nobody runs it; what became of it, or None if left as is."""
    path = queue.claimed / name
    request_id = name.removesuffix(".json")
    if not (name.endswith(".json") and re.fullmatch(ID_PATTERN, request_id)):
        return _junk(queue, audit, path, grace_s, now)
    lock = RunLock.try_acquire(queue.lock_path(request_id))
    if lock is None:
        return None  # its process is alive
    outcome: str | None = None
    try:
        run = audit.run(request_id) if path.exists() else None
        if run is not None:
            outcome = _settle_locked(queue, audit, path, settings, run)
        elif path.exists() and _age(path, now) >= grace_s:
            outcome = _never_started(queue, audit, path)
        return outcome
    finally:
        lock.release(remove=outcome is not None or not path.exists())


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


def _settle_locked(queue: Queue, audit: AuditStore, path: Path, settings: Settings,
                   run: dict[str, Any]) -> str:
    if run["status"] == "running":
        record_unfinished(audit, run["id"], "interrupted", GONE)
        _mark_state(settings, run["id"], "interrupted", GONE)
        place(queue, audit, path, "interrupted", GONE)
        return "interrupted"
    place(queue, audit, path, run["status"], run.get("error"))
    return run["status"]


def _never_started(queue: Queue, audit: AuditStore, path: Path) -> str:
    request_id = path.name.removesuffix(".json")
    reason = "claimed, but its agent never started (is hearth-agent@.service installed and startable?)"
    record_unfinished(audit, request_id, "failed", reason)
    queue.fail(path, reason, run_id=request_id, status="failed")
    return "failed"


def _mark_state(settings: Settings, run_id: str, state: str, detail: str) -> None:
    """The live state file says what the dead process could not."""
    path = settings.runs_state_dir / f"{run_id}.json"
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        record = {"run_id": run_id}
    record.update(state=state, detail=detail, updated_at=utc_now())
    write_atomic(path, json.dumps(record, ensure_ascii=False).encode(), durable=False)


def _bytes(path: Path) -> bytes | None:
    try:
        return read_request_bytes(path)
    except (OSError, RequestRefused):
        return None


def run_child(request_id: str, settings: Settings, log_path: str) -> None:
    """Entry of a local run's process (`hearth spawn --local`, `hearth watch`): log, run, exit."""
    os.setsid()  # a terminal's ^C reaches the spawner, which stops its runs with SIGTERM
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o640)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    try:
        code = run_claimed(request_id, settings)
    except Exception as exc:  # noqa: BLE001 - the one line goes to the run's log
        print(f"hearth agent {request_id}: {exc}", file=sys.stderr)
        code = getattr(exc, "exit_code", 70)
    sys.stdout.flush()
    sys.exit(code)
