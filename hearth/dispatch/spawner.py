"""The spawner: sweep dead runs, then claim, check and start every request waiting in the queue.

`hearth spawn` (the path unit's service; `--local` without systemd) and `hearth watch` both
drive a `Spawner`. One pass (`drain`) looks at each incoming name once, oldest first:

    temp name (".x", "x.tmp" ...)  left alone while someone writes it; rejected once abandoned
    fresh file that is not JSON     left alone for `settle_s`: a writer may still be at it
    anything else                   claimed (atomic rename), read, checked, admitted, started
                                    or rejected with its reason, never both, never twice

A claim is the only way to own a file, so two spawners over one queue start each request once.
Where a run executes is its `Launcher`'s (hearth/dispatch/launchers/): the spawner is handed one
(`launcher_for(settings)`) and never asks which.
"""

from __future__ import annotations

import json
import os
import pwd
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent.clock import utc_now
from agent.safety.display import bounded
from hearth.audit.requests import FileFacts, record_unfinished
from hearth.audit.store import AuditStore
from hearth.dispatch.launchers import Launcher, LaunchError, processes_of
from hearth.dispatch.pause import Paused, paused
from hearth.dispatch.settle import CLAIM_GRACE_S, RESUME_NOW, reject, settle, settle_dead
from hearth.errors import ConfigError, HearthError
from hearth.leash import alerts
from hearth.leash.budget import load_budget, local_now, refusal
from hearth.queue import wake
from hearth.queue.directory import PASS_NAMES, Entry, Owners, Queue, is_temp_name, read_request_bytes
from hearth.queue.intake import Parsed, RequestRefused, check, parse_request, printable
from hearth.queue.ledger import admit
from hearth.queue.request import Request
from hearth.run.profiles import agent_for_label
from hearth.settings import Settings

SETTLE_S = 2.0  # how long a file that is not yet valid JSON may still be being written
STALE_TEMP_S = 600.0  # a temp name untouched this long was abandoned by its writer
IDLE_WAIT_S = 1.0
# While paused, `hearth spawn` waits this long for a resume before it exits: the path unit fires
# again at once while a request waits, so this keeps that to once in 4 minutes (the service's
# TimeoutStartSec is 300 s).
PAUSED_WAIT_S = 240.0

Report = Callable[[str, str, str], None]  # (what, name, detail): started, rejected, settled ...


@dataclass(frozen=True)
class Pass:
    retry_in: float | None  # a settling file wants another look after this many seconds
    blocked: bool  # stopped early: every run slot is taken
    took: int = 0  # names claimed or moved out of the queue directory in this pass
    paused: bool = False  # requests wait, but hearth is paused (hearth/dispatch/pause.py)


class Spawner:
    def __init__(
        self,
        settings: Settings,
        launcher: Launcher,
        *,
        report: Report = lambda *a: None,
        settle_s: float = SETTLE_S,
        stale_s: float = STALE_TEMP_S,
        grace_s: float = CLAIM_GRACE_S,
        clock: Callable[[], float] = time.time,
        paused_wait_s: float = PAUSED_WAIT_S,
    ) -> None:
        settings.writable_state_dir()
        try:
            self.queue = Queue(settings.queue_dir).ensure()
        except OSError as exc:
            raise ConfigError(
                f"cannot use the queue directory {settings.queue_dir}: {exc.strerror or exc}; "
                "set HEARTH_QUEUE_DIR to a directory hearth can write"
            ) from None
        unsafe = self.queue.open_to_all()
        if unsafe:
            raise ConfigError(unsafe)
        self.owners = Owners.of_group(settings.submitters_group) if settings.submitters_group else None
        self.settings = settings
        self.launcher = launcher
        self.processes = processes_of(launcher)  # its runs that are our children, and its pace
        self.report = report
        self.settle_s, self.stale_s, self.grace_s, self.clock = settle_s, stale_s, grace_s, clock
        self.audit = AuditStore(settings.audit_path)
        self.counts: Counter[str] = Counter()
        self.paused_wait_s = paused_wait_s
        self._held: set[str] = set()  # waiting names already reported as held by a pause
        self._held_count = 0

    def close(self) -> None:
        self.audit.close()

    def __enter__(self) -> Spawner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the whole job of `hearth spawn` --------------------------------------------------------
    def run(self) -> int:
        """Sweep, then start everything waiting and wait for local runs; 1 if a launch failed."""
        self.sweep()
        held_until = self.clock() + self.paused_wait_s
        while True:
            self.reap()
            step = self.drain()
            busy = bool(self.processes.running()) or step.retry_in is not None or step.blocked
            if not busy and not (step.paused and self.clock() < held_until):
                break
            self.processes.wait([], step.retry_in if step.retry_in is not None else IDLE_WAIT_S)
        return 1 if self.counts["launch_failed"] else 0

    # -- dead runs ------------------------------------------------------------------------------
    def sweep(self) -> None:
        """Settle every claimed request whose process is gone (not our own live children), then
        every other run whose process is gone (a `hearth-loop` killed, say); start again the runs
        that go on; alert again the approvals whose reminder is due."""
        mine = {f"{rid}.json" for rid in self.processes.running()}
        for name in sorted(os.listdir(self.queue.claimed)):
            if name not in mine:
                settled = settle(
                    self.queue, self.audit, self.settings, name, self.launcher, grace_s=self.grace_s, now=self.clock
                )
                self._settled(name, settled)
        for run_id in settle_dead(self.audit, self.settings, self.launcher):
            self._settled(run_id, "interrupted")
        # approvals still waiting are alerted again when due (hearth/leash/alerts.py): a suspended
        # run has no process to do it, so the sweeps (the spawner's timer, `hearth watch`) do
        for sent in alerts.remind_due(self.settings, self.audit):
            self.report("reminded", sent, "")

    def reap(self) -> None:
        """Local runs that ended: a run that died without placing its request is settled now."""
        for request_id, code in self.processes.reap():
            self.report("ended", request_id, f"exit {code}")
            name = f"{request_id}.json"
            self._settled(name, settle(self.queue, self.audit, self.settings, name, self.launcher, grace_s=0.0))

    def _settled(self, name: str, outcome: str | None) -> None:
        if outcome == RESUME_NOW:
            self._resume(name.removesuffix(".json"))
        elif outcome == "waiting":
            self.report("waiting", printable(name), "suspended until its approval is decided or its child run ends")
        elif outcome is not None:
            self.counts[outcome] += 1
            self.report("settled", printable(name), outcome)

    def _resume(self, run_id: str) -> None:
        """Start again a run that goes on (its approval decided, or hearth came back): held while
        paused, as a queued request is (the next pass after the resume starts it)."""
        held = paused(self.settings)
        if held is not None:
            self.report("paused", run_id, f"goes on once hearth is resumed: hearth is {held.line()}")
            return
        try:
            self.launcher.start(run_id)
        except LaunchError as exc:
            self.report("launch_failed", run_id, str(exc))
            self.counts["launch_failed"] += 1
            return
        self.counts["resumed"] += 1
        self.report("resumed", run_id, "")

    def _woken(self, entry: Entry, run_id: str) -> None:
        """A `<run>.resume` name (hearth/queue/wake.py): removed, and the run started again if the
        audit says it goes on now; anything else about it is believed from the audit, not the name."""
        try:
            entry.path.unlink()
        except FileNotFoundError:
            return  # another spawner took it
        except OSError:
            return
        name = f"{run_id}.json"
        if (self.queue.claimed / name).exists() and run_id not in self.processes.running():
            self._settled(name, settle(self.queue, self.audit, self.settings, name, self.launcher, now=self.clock))

    # -- arrivals -------------------------------------------------------------------------------
    def drain(self) -> Pass:
        """One look at every incoming name, while a run slot is free and hearth is not paused."""
        held = paused(self.settings)
        if held is not None:
            return self._hold(held)
        self._held.clear()
        self._held_count = 0
        retry: float | None = None
        took = 0
        # a flood is taken a batch a pass (queue/directory.py); fresh temp names, left alone, fill none
        batch = self.queue.incoming(limit=PASS_NAMES, temp_before=self.clock() - self.stale_s)
        if len(batch) == PASS_NAMES:
            retry = 0.0  # more may wait behind this batch: the next pass goes on at once
        for entry in batch:
            if not is_temp_name(entry.name) and paused(self.settings) is not None:
                return Pass(retry, blocked=False, took=took, paused=True)  # paused mid-pass: the rest waits
            slots = self.processes.free_slots()
            if slots is not None and slots <= 0:
                return Pass(retry, blocked=True, took=took)
            wait = self._handle(entry)
            if wait is not None:
                retry = wait if retry is None else min(retry, wait)
            elif not is_temp_name(entry.name):
                took += 1
        return Pass(retry, blocked=False, took=took)

    def _hold(self, held: Paused) -> Pass:
        """Paused: claim nothing; say once per request that it waits, and why."""
        count, names = self.queue.waiting(PASS_NAMES)  # a flood is counted, and only a batch is named
        waiting = set(names)
        for name in sorted(waiting - self._held):
            self.report("paused", printable(name), f"waits: hearth is {held.line()}")
        if count > len(names) and count != self._held_count:
            self.report("paused", f"{count - len(names)} more", f"wait: hearth is {held.line()}")
        self._held, self._held_count = waiting, count
        return Pass(None, blocked=False, paused=bool(count))

    def _handle(self, entry: Entry) -> float | None:
        woken = wake.woken(entry.name)
        if woken is not None and entry.kind == "file":
            self._woken(entry, woken)
            return None
        age = self.clock() - entry.mtime
        if is_temp_name(entry.name):
            if age >= self.stale_s:
                reason = f"an abandoned temporary file (not renamed into place for {int(age)} s)"
                self._take(entry, refused=reason)
            return None
        if entry.kind == "file" and age < self.settle_s and _still_being_written(entry.path):
            return self.settle_s - age
        self._take(entry)
        return None

    def _take(self, entry: Entry, refused: str | None = None) -> None:
        try:
            path = self.queue.claim(entry.name)
        except FileExistsError:
            stem = printable(entry.name).removesuffix(".json")
            reason = f"duplicate id: request {stem} is already claimed and running"
            self._reject(entry.path, reason, _peek(entry.path), None)
            return
        if path is None:
            return  # another spawner claimed it first
        data: bytes | None = None
        parsed: Parsed | None = None
        try:
            if refused:
                data = _peek(path)
                raise RequestRefused(refused)
            data = read_request_bytes(path, self.owners)
            parsed = as_its_owner(parse_request(data, entry.name), path)
            check(parsed.request)
            spent = self._budget_spent(parsed.request)
            if spent:
                self._reject(path, spent, data, parsed, event="budget_exceeded")
                return
            admit(self.audit, parsed, FileFacts.of(entry.name, data), utc_now())
        except RequestRefused as exc:
            self._reject(path, str(exc), data, parsed)
            return
        except Exception as exc:  # a hostile file found a gap in the checks: refused, and the pass goes on
            self._reject(path, f"could not be checked ({type(exc).__name__}: {str(exc)[:200]})", data, parsed)
            return
        self._launch(parsed.request.id, path)

    def _budget_spent(self, request: Request) -> str | None:
        """Why the budget this request would run under refuses it, or None (a broken file: a warning)."""
        try:
            budget = load_budget(self.settings.config_dir, self.settings.daily_tokens)
        except HearthError as exc:
            self.report("warning", "budget", f"{exc}; requests run without a budget")
            return None
        if not budget.configured:
            return None
        agent = agent_for_label(self.settings.config_dir, request.agent_name, request.label)
        reason = refusal(budget, self.audit, agent, local_now())
        return f"not started: {reason}" if reason else None

    def _reject(
        self, path: Path, reason: str, data: bytes | None, parsed: Parsed | None, *, event: str = "rejected"
    ) -> None:
        """Refused and recorded `rejected`; alerted as `event` (a spent budget's is `budget_exceeded`)."""
        reason = bounded(reason)
        request = parsed.request if parsed else None
        if reject(self.queue, self.audit, path, reason, data, request=request) is None:
            return  # someone else moved it first, and recorded it
        self.counts["rejected"] += 1
        self.report("rejected", printable(path.name), reason)
        goal = request.goal if request else ""
        agent = request.agent_name if request else "-"
        named = request.id if request else printable(path.name)  # a file that never parsed names no run
        alerts.run_ended(self.settings, named, event, goal=goal, detail=reason, agent=agent)

    def _launch(self, request_id: str, path: Path) -> None:
        try:
            self.launcher.start(request_id)
        except LaunchError as exc:
            record_unfinished(self.audit, request_id, "failed", str(exc))
            self.queue.fail(path, str(exc), run_id=request_id, status="failed")
            self.counts["launch_failed"] += 1
            self.report("launch_failed", request_id, str(exc))
            return
        self.counts["started"] += 1
        self.report("started", request_id, "")


def as_its_owner(parsed: Parsed, path: Path) -> Parsed:
    """A follow-up from someone other than hearth or root says who asked as its file's owner does:
    who may continue a run is decided by `requested_by` and `source` (hearth/run/long/followup.py),
    which a submitter could otherwise write as "root" or "command-center"."""
    request = parsed.request
    if not request.continues:
        return parsed
    try:
        uid = path.lstat().st_uid
    except OSError:
        return parsed  # gone: the claim path says so
    if uid in (0, os.getuid()):
        return parsed  # root, or hearth itself (the command center, `hearth enqueue` as hearth)
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = f"uid {uid}"
    if request.requested_by == name and request.source != "command-center":
        return parsed
    return Parsed(request.model_copy(update={"requested_by": name, "source": "cli"}), parsed.shape)


def _still_being_written(path: Path) -> bool:
    """True when a fresh file does not parse yet: a writer that does not rename may be at it."""
    try:
        json.loads(read_request_bytes(path))
    except ValueError:  # JSONDecodeError and UnicodeDecodeError both are
        return True
    except (OSError, RecursionError, RequestRefused):
        return False  # no writer makes these better: the claim path says why
    return False


def _peek(path: Path) -> bytes | None:
    try:
        return read_request_bytes(path)
    except (OSError, RequestRefused):
        return None
