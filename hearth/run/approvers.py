"""Who answers when the policy says `ask`: a person at this terminal, or an operator in another shell.

`choose()` picks: the terminal approver when stdin and stdout are both a TTY, else the headless
one. Both record every decision through the run's recorder (an `ApprovalAsked` row as
`hearth.audit.approvals` keeps it, its `ApprovalDecided`, and an `approval` step in the run's
timeline: hearth/run/events.py) and both treat silence until the timeout as a deny, so a run with
nobody watching never runs a dangerous call on its own.

- TerminalApprover: asks once / always for this run / deny. "Always" covers the same tool for the
  rest of the run; for run_command it covers commands whose every program is one this command
  ran (approving `git status` always lets `git log` through, not `rm`).
- HeadlessApprover: writes a pending approval, sets the run's state to `waiting_approval`, says
  how to decide it (`hearth approve ID` / `hearth deny ID`), and polls until decided or expired.
"""

from __future__ import annotations

import json
import os
import select
import sys
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TextIO

from agent.clock import stamp
from agent.safety.policy import COMMAND_ARGUMENTS, Approver, Decision
from hearth.audit import approvals
from hearth.audit.approvals import Approval, Clock, parse_stamp, utc_clock
from hearth.run.events import ApprovalAsked, ApprovalDecided
from hearth.run.exits import Suspended
from hearth.run.recorder import Recorder
from hearth.settings import Settings

ANSWERS = {
    "o": "once",
    "once": "once",
    "y": "once",
    "yes": "once",
    "a": "always",
    "always": "always",
    "d": "deny",
    "deny": "deny",
    "n": "deny",
    "no": "deny",
}
MAX_PROMPTS = 3
OnPending = Callable[[Approval, str], None]  # (the approval now waiting, the call as one line)


def choose(
    recorder: Recorder,
    settings: Settings,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    run_timeout_s: float | None = None,
    on_pending: OnPending | None = None,
    wait_s: float | None = None,
    suspend: bool = False,
    resumed: Approval | None = None,
) -> Approver:
    """The terminal approver when a person is at this terminal, else the headless one.

    `wait_s` is how long an approval waits (the run's plan; else HEARTH_APPROVAL_WAIT). A run that
    can `suspend` (a queued one: a launcher starts it again) ends its process once an approval has
    waited HEARTH_SUSPEND_AFTER_S, and its wait does not count against its own time limit; one that
    cannot (a `hearth-loop`: its caller waits for its outcome) waits in its process, at most until
    its time limit (``run_timeout_s``). ``on_pending`` hears of each approval the headless one
    starts waiting for (the alerts); `resumed` is the approval a resumed run waited on.
    """
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    wait = wait_s or settings.approval_wait_s
    run_ends = utc_clock() + timedelta(seconds=run_timeout_s) if run_timeout_s and not suspend else None
    if _is_tty(stdin) and _is_tty(stdout) and not suspend:
        # with --json, stdout is for events: the question goes to stderr
        out = sys.stderr if recorder.json_lines else stdout
        return TerminalApprover(recorder, wait, stdin, out, run_ends=run_ends)
    return HeadlessApprover(
        recorder,
        wait,
        run_ends=run_ends,
        on_pending=on_pending,
        suspend_after_s=settings.suspend_after_s if suspend else None,
        resumed=resumed,
    )


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _show_call(name: str, args: dict[str, Any], limit: int = 300) -> str:
    text = json.dumps(args, ensure_ascii=False)
    return f"{name} {text if len(text) <= limit else text[:limit] + '...'}"


def _denial_detail(approval: Approval) -> str:
    if approval.status == "expired":
        return f"nobody approved it within {approval.timeout_s:g}s, and an unanswered approval is a deny"
    note = f": {approval.note}" if approval.note else ""
    return f"denied by {approval.decided_by}{note}"


def _record_step(recorder: Recorder, approval: Approval) -> None:
    detail = {
        "approval": approval.id,
        "status": approval.status,
        "by": approval.decided_by,
        "at": approval.decided_at,
        "requested_at": approval.requested_at,
        "timeout_s": approval.timeout_s,
        "via": approval.via,
        "call_hash": approval.call_hash,
        **({"note": approval.note} if approval.note else {}),
    }
    recorder.note(
        "approval",
        iteration=recorder.iteration,
        tool=approval.tool,
        arguments=approval.arguments,
        verdict=approval.status,
        detail=json.dumps(detail, ensure_ascii=False),
    )


def _too_big(recorder: Recorder, name: str, args: dict[str, Any], reason: str, timeout_s: float) -> Decision | None:
    """Arguments too long for a person to review are denied without asking (and recorded)."""
    size = len(approvals.canonical_arguments(args))
    if size <= approvals.REVIEW_LIMIT:
        return None
    note = f"its arguments are {size} characters, more than anyone can review ({approvals.REVIEW_LIMIT})"
    approval = approvals.on_the_spot(
        recorder.run_id, name, args, reason, granted=False, by="policy", note=note, timeout_s=timeout_s
    )
    recorder.record(ApprovalAsked.of(approval))
    _record_step(recorder, approval)
    return Decision(False, by="policy", detail=note, ref=approval.id)


class _Bounded:
    """An approval waits at most the configured time, and never past the end of its run."""

    limit_s: float
    run_ends: datetime | None
    now: Clock

    def wait_s(self) -> float:
        if self.run_ends is None:
            return self.limit_s
        return max(0.0, min(self.limit_s, round((self.run_ends - self.now()).total_seconds(), 3)))


class HeadlessApprover(_Bounded):
    """Asks through the audit store and waits; a decision comes from `hearth approve|deny ID`."""

    def __init__(
        self,
        recorder: Recorder,
        timeout_s: float,
        *,
        poll_s: float = 0.2,
        now: Clock = utc_clock,
        sleep: Callable[[float], None] = time.sleep,
        run_ends: datetime | None = None,
        on_pending: OnPending | None = None,
        suspend_after_s: float | None = None,
        resumed: Approval | None = None,
    ) -> None:
        self.recorder, self.limit_s, self.poll_s, self.now, self.sleep = recorder, timeout_s, poll_s, now, sleep
        self.run_ends = run_ends
        self.on_pending = on_pending
        self.suspend_after_s = suspend_after_s  # None: wait in this process until decided or expired
        self.resumed = resumed  # the approval an earlier process of the run suspended on

    def __call__(self, name: str, args: dict[str, Any], reason: str) -> Decision:
        resumed, self.resumed = self.resumed, None
        if resumed is not None and resumed.call_hash == approvals.call_hash(name, args):
            return self._decided(name, args, self._wait(resumed))  # decided or expired (else it suspends again)
        timeout_s = self.wait_s()
        refused = _too_big(self.recorder, name, args, reason, timeout_s)
        if refused:
            return refused
        approval = approvals.pending(self.recorder.run_id, name, args, reason, timeout_s=timeout_s, now=self.now)
        self.recorder.record(ApprovalAsked.of(approval))
        self._announce(approval, name, args)
        if self.on_pending is not None:
            self.on_pending(approval, _show_call(name, args))
        try:
            final = self._wait(approval)
        except Suspended:
            raise  # the question stays open: a new process of the run hears the answer
        except BaseException as exc:  # SIGTERM, Ctrl-C: the run stops; the question must not stay open
            note = f"the run stopped while waiting ({type(exc).__name__})"
            self.recorder.record(ApprovalDecided(approval.id, "cancelled", stamp(utc_clock()), "run", note))
            raise
        return self._decided(name, args, final)

    def _decided(self, name: str, args: dict[str, Any], final: Approval) -> Decision:
        # what the run saw decided, into its own stream: a recorder that did not see the decision
        # being written (a replay, another machine's) has it too; where it was written, a no-op
        self.recorder.record(ApprovalDecided.of(final))
        _record_step(self.recorder, final)
        self.recorder.state.update("tool", f"{final.status}: {name}", self.recorder.iteration, name)
        if final.call_hash != approvals.call_hash(name, args) or final.tool != name:
            return Decision(False, by="policy", detail="the approval on record does not match this call", ref=final.id)
        if final.status == "approved":
            return Decision(True, by=final.decided_by or "operator", ref=final.id)
        return Decision(False, by=final.decided_by or "timeout", detail=_denial_detail(final), ref=final.id)

    def _wait(self, approval: Approval) -> Approval:
        """Poll until someone decides it or it expires (closed as expired by the run); the final row.
        A run that may suspend raises Suspended once it has waited `suspend_after_s`."""
        deadline = parse_stamp(approval.expires_at)
        suspend_at = time.monotonic() + self.suspend_after_s if self.suspend_after_s is not None else None
        while True:
            current = self.recorder.sink.approval(approval.id)
            assert current is not None, f"approval {approval.id} is not where the run recorded it"
            if current.status != "pending":
                return current
            left = (deadline - self.now()).total_seconds()
            if left <= 0:
                note = approvals.timeout_note(approval)
                self.recorder.record(ApprovalDecided(approval.id, "expired", approval.expires_at, "timeout", note))
                final = self.recorder.sink.approval(approval.id)
                assert final is not None
                return final
            if suspend_at is not None and time.monotonic() >= suspend_at:
                raise Suspended(approval.id)
            self.sleep(min(self.poll_s, left))

    def _announce(self, approval: Approval, name: str, args: dict[str, Any]) -> None:
        rec = self.recorder
        rec.state.update(
            "waiting_approval", f"approval {approval.id}: {_show_call(name, args, 200)}", rec.iteration, name
        )
        if rec.json_lines:
            event = {
                "event": "approval_pending",
                "run_id": rec.run_id,
                "iteration": rec.iteration,
                "approval": approval.id,
                "tool": name,
                "arguments": args,
                "expires_at": approval.expires_at,
            }
            print(json.dumps(event, ensure_ascii=False, default=str), file=rec.out, flush=True)
            return
        print(
            f"[{rec.iteration}] waiting for approval {approval.id}: {_show_call(name, args)}\n"
            f"    decide with: hearth approve {approval.id}   or: hearth deny {approval.id} "
            f"(no answer in {approval.timeout_s:g}s is a deny)",
            file=rec.out,
            flush=True,
        )


class TerminalApprover(_Bounded):
    """Asks the person at this terminal: once, always for this run, or deny."""

    def __init__(
        self, recorder: Recorder, timeout_s: float, stdin: TextIO, out: TextIO, *, run_ends: datetime | None = None
    ) -> None:
        self.recorder, self.limit_s, self.stdin, self.out = recorder, timeout_s, stdin, out
        self.run_ends, self.now = run_ends, utc_clock
        self.timeout_s = timeout_s  # this call's wait, set as each call starts
        self.always_tools: set[str] = set()
        self.always_heads: set[str] = set()
        self.who = f"terminal:{approvals.operator_name()}"
        self._typed = b""  # read but not yet used: answers typed ahead

    def __call__(self, name: str, args: dict[str, Any], reason: str) -> Decision:
        self.timeout_s = self.wait_s()
        refused = _too_big(self.recorder, name, args, reason, self.timeout_s)
        if refused:
            return refused
        asked = utc_clock()
        if self._remembered(name, args):
            return self._decided(name, args, reason, asked, True, f"{self.who} (always for this run)", "")
        scope = self._always_scope(name, args)
        answer = self._ask(name, args, reason, scope)
        if answer == "always" and scope:
            self._remember(name, args)
        if answer in ("once", "always"):
            note = "always for this run" if answer == "always" else ""
            return self._decided(name, args, reason, asked, True, self.who, note)
        note = f"no answer within {self.timeout_s:g}s" if answer == "timeout" else ""
        return self._decided(name, args, reason, asked, False, "timeout" if answer == "timeout" else self.who, note)

    def _heads(self, name: str, args: dict[str, Any]) -> list[str] | None:
        from agent.safety import command_approval  # the shell reader: only once a command is asked about

        key = COMMAND_ARGUMENTS.get(name)
        return command_approval.heads(args.get(key, "")) if key else None

    def _always_scope(self, name: str, args: dict[str, Any]) -> str:
        """What "always" would cover, or '' when it cannot be offered (programs not knowable)."""
        if name not in COMMAND_ARGUMENTS:
            return f"{name} for the rest of this run"
        heads = self._heads(name, args)
        return f"{name} for the rest of this run when it runs only: {', '.join(sorted(set(heads)))}" if heads else ""

    def _remember(self, name: str, args: dict[str, Any]) -> None:
        if name in COMMAND_ARGUMENTS:
            self.always_heads.update(self._heads(name, args) or [])
        else:
            self.always_tools.add(name)

    def _remembered(self, name: str, args: dict[str, Any]) -> bool:
        from agent.safety import command_approval

        if name not in COMMAND_ARGUMENTS:
            return name in self.always_tools
        return bool(self.always_heads) and command_approval.auto_approved(
            args.get(COMMAND_ARGUMENTS[name], ""), self.always_heads
        )

    def _ask(self, name: str, args: dict[str, Any], reason: str, scope: str) -> str:
        choices = "[o]nce" + (f" / [a]lways ({scope})" if scope else "") + " / [d]eny"
        print(f"\napproval needed: {reason}\n  {_show_call(name, args, 2000)}", file=self.out, flush=True)
        deadline = time.monotonic() + self.timeout_s
        for _ in range(MAX_PROMPTS):
            print(f"  {choices}? (no answer in {self.timeout_s:g}s is a deny) ", end="", file=self.out, flush=True)
            line = self._read_line(deadline)
            if line is None:
                print("\n  no answer: denied", file=self.out, flush=True)
                return "timeout"
            answer = ANSWERS.get(line.strip().lower(), "" if line else "deny")
            if answer == "always" and not scope:
                answer = ""
            if answer:
                return answer
        return "deny"

    def _read_line(self, deadline: float) -> str | None:
        """One line from stdin; '' at end of input; None when the deadline passes first.

        Reads the file descriptor itself: a buffered readline would swallow typed-ahead answers
        where select() can no longer see them.
        """
        fd = self.stdin.fileno()
        while b"\n" not in self._typed:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 1024)
            if not chunk:
                line, self._typed = self._typed, b""
                return line.decode(errors="replace")
            self._typed += chunk
        line, _, self._typed = self._typed.partition(b"\n")
        return line.decode(errors="replace") + "\n"

    def _decided(
        self, name: str, args: dict[str, Any], reason: str, asked: datetime, granted: bool, by: str, note: str
    ) -> Decision:
        approval = approvals.on_the_spot(
            self.recorder.run_id,
            name,
            args,
            reason,
            granted=granted,
            by=by,
            note=note,
            timeout_s=self.timeout_s,
            asked_at=asked,
        )
        self.recorder.record(ApprovalAsked.of(approval))
        _record_step(self.recorder, approval)
        detail = (
            ""
            if granted
            else (f"no answer at the terminal within {self.timeout_s:g}s" if by == "timeout" else f"denied by {by}")
        )
        return Decision(granted, by=by, detail=detail, ref=approval.id)
