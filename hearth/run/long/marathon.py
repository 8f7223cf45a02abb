"""Marathons: legs of ordinary runs in one workspace, until the goal is really done.

    run_marathon(request, plan, settings)
        the marathon's own run (kind `marathon`) holds its legs: `<id>-leg1`, `<id>-leg2` ...,
        each an ordinary run through `run_goal` (same containment, approvals, budget, record),
        linked to it (`parent_run`, link `leg`), in the marathon's workspace

Each leg's first message carries the goal, the progress note the agent keeps in the workspace
(`.hearth/progress.md`: done, next, open questions; hearth creates it and says how to keep it)
and where the last leg left off. Legs after the first reuse the first leg's placeholder values,
so every leg's system prompt is the same bytes (Ollama reuses its cache).

Between legs a judge (hearth/run/long/judge.py: no tools, `{"done", "reason", "next"}`, one repair;
unusable is not done) and, when the request names one, the deliverable check
(hearth/run/long/deliverable.py) decide; done needs both. Each decision is a `judge` step of the
marathon's run. Stops, with the marathon's status:

    done          the judge says done and the check passes
    leg_limit     max_legs legs ran and it is not done
    no_progress   two legs in a row changed nothing in the workspace
    <the leg's>   a leg ended interrupted (a stop, a signal), budget_exceeded, model_unavailable,
                  denied or rejected: the marathon ends the same way
    budget_exceeded  a daily budget is spent after a leg: the judge is not asked, no leg starts

The judge's tokens are in its `judge` step's data and count toward the same daily budgets as the
legs' (hearth/leash/budget.py); each leg's own loop checks them before every model call.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

from agent.loop import Outcome
from agent.model.reply import ChatModel
from agent.safety.workspace import PathRefused, Workspace
from hearth.audit.approvals import Approval
from hearth.audit.store import AuditStore, new_run_id
from hearth.errors import UsageError
from hearth.ids import derived_id
from hearth.leash.budget import budget_spent
from hearth.queue.longspec import Marathon
from hearth.run import hosts
from hearth.run.events import CheckpointKept, RunEvent, RunFinished, RunRecorder, StepRecorded, default_recorder
from hearth.run.exits import Interrupted
from hearth.run.goal import GoalRequest, RunPlan
from hearth.run.liveness import hold_run
from hearth.run.long.deliverable import CheckResult, check_deliverable, fingerprint, leg_changed
from hearth.run.long.followup import prompt_record
from hearth.run.long.holding import (
    Holder,
    admit_holder,
    close_if_running,
    finish_holder,
    signals_interrupt,
)
from hearth.run.long.judge import Verdict, ask_json, read_verdict
from hearth.run.runner import PROBE_S, model_client, run_goal
from hearth.run.state import StateFile
from hearth.settings import Settings

PROGRESS = ".hearth/progress.md"
PROGRESS_TEMPLATE = """\
# Progress

## Done
- (nothing yet)

## Next
- (the first steps)

## Open questions
- (none yet)
"""
NOTE_CHARS = 4_000
GOES_ON_AFTER = ("done", "iteration_limit", "stuck", "failed")  # a leg that ended so is judged; others end it
QUIET_LEGS = 2  # this many legs in a row that change nothing: no progress
JUDGE_SYSTEM = """\
You judge whether an agent has finished its goal. You are shown the goal, the progress note the
agent keeps, and how its last work session ended. Be strict: done means the goal is fully
reached, not that good progress was made. Answer with only this JSON object:
{"done": true or false, "reason": "why, in one or two sentences", "next": "what the agent should do next (empty when done)"}"""


@dataclass
class Leg:
    number: int
    run_id: str
    outcome: Outcome
    changed: bool = True
    verdict: Verdict | None = None
    problem: str = ""  # why the judge's answer was unusable
    replies: list[str] = field(default_factory=list)  # what the judge said, as it said it
    check: CheckResult | None = None
    tokens: tuple[int, int] = (0, 0)  # what the judge's calls cost (counted toward the daily budgets)

    @property
    def done(self) -> bool:
        return bool(self.verdict and self.verdict.done) and (self.check is None or self.check.ok)


class _Heard:
    """The marathon's recorder, noting on the way what it needs of its legs' record: the prompt
    each leg kept, and how its after-checkpoint ended (read back from no audit: the record may be
    going to another machine's)."""

    def __init__(self, sink: RunRecorder) -> None:
        self.sink = sink
        self.prompts: dict[str, str] = {}
        self.after: dict[str, str] = {}

    def record(self, event: RunEvent) -> None:
        self.sink.record(event)
        if isinstance(event, RunFinished) and event.columns.get("prompt"):
            self.prompts[event.run_id] = event.columns["prompt"]
        elif isinstance(event, CheckpointKept) and event.phase == "after":
            self.after[event.run_id] = event.status

    def approval(self, approval_id: str) -> Approval | None:
        return self.sink.approval(approval_id)


@dataclass(frozen=True)
class _Io:
    """How legs run: a model to use (tests), where their events go, where the record goes."""

    model: ChatModel | None
    out: TextIO
    json_lines: bool
    sink: _Heard


@dataclass
class _Marathon:
    holder: Holder
    planned: RunPlan  # the marathon's request as admission resolved it, in the marathon's directory
    plan: Marathon
    root: Path
    legs: list[Leg] = field(default_factory=list)
    values: dict[str, str] | None = None  # the first leg's placeholder values, reused by the rest


def run_marathon(
    request: GoalRequest,
    plan: Marathon,
    settings: Settings,
    *,
    model: ChatModel | None = None,
    out: TextIO = sys.stdout,
    json_lines: bool = False,
    recorder: RunRecorder | None = None,
) -> tuple[str, Outcome]:
    """Run legs until done or stopped; (the marathon's run id, its outcome). UsageError if it cannot start.

    `recorder` takes the marathon's record and its legs'; without it, this machine's audit does."""
    settings.writable_state_dir()
    marathon_id = request.run_id or new_run_id()
    pulled = hosts.pulled(settings, PROBE_S) if model is None else None  # as a run's: the judge's name too
    # held for the marathon's life, as a run holds its own: its row is not a dead run's (dispatch/settle.py)
    with hold_run(settings, marathon_id), AuditStore(settings.audit_path) as audit:
        sink = recorder or default_recorder(audit, settings)
        run = _admit(sink, request, plan, settings, marathon_id, pulled)
        state = StateFile(
            settings.runs_state_dir, marathon_id, agent_name=run.planned.agent_name, model=run.planned.model
        )
        own = model_client(run.planned, settings) if model is None else None
        try:
            with signals_interrupt():
                io = _Io(model, out, json_lines, _Heard(sink))
                outcome = _legs(run, settings, model or own, state, io, audit)  # type: ignore[arg-type]
        except (Interrupted, KeyboardInterrupt):
            outcome = _interrupted(run, sink)
        finally:
            state.remove()
            if own is not None:
                own.close()
        finish_holder(sink, run.holder, outcome, settings, run.planned)
    _show(out, json_lines, marathon_id, outcome)
    return marathon_id, outcome


def _admit(
    sink: RunRecorder, request: GoalRequest, plan: Marathon, settings: Settings, run_id: str, pulled: list[str] | None
) -> _Marathon:
    """The marathon's run, recorded; one that cannot start is recorded `rejected` and raises."""
    planned, root, holder = admit_holder(sink, request, settings, run_id, "marathon", pulled)
    with Workspace(root) as ws:  # the workspace's own containment: `.hearth` may be a planted link
        if ws.stat(PROGRESS) is None:
            ws.write_bytes(PROGRESS, PROGRESS_TEMPLATE.encode())
    return _Marathon(holder, replace(planned, workspace=root, fresh=False), plan, root)


def _legs(
    run: _Marathon, settings: Settings, judge: ChatModel, state: StateFile, io: _Io, audit: AuditStore
) -> Outcome:
    if run.holder.unavailable:
        return _ended(run, "model_unavailable", run.holder.unavailable)
    quiet = 0
    for number in range(1, run.plan.max_legs + 1):
        state.update("marathon", f"leg {number} of at most {run.plan.max_legs}", number)
        leg = _run_leg(run, settings, number, io)
        if leg.outcome.status not in GOES_ON_AFTER:
            return _ended(run, leg.outcome.status, f"leg {number} ended {leg.outcome.status}: {leg.outcome.error}")
        spent = budget_spent(settings, audit, run.planned.agent_name)
        if spent:
            stopped = f"leg {number} ended {leg.outcome.status}; not judged and no further legs: {spent}"
            io.sink.record(StepRecorded(run.holder.id, "stop", {"detail": stopped}))
            return _ended(run, "budget_exceeded", stopped)
        _decide(run, leg, judge, settings)
        _record(io.sink, run, leg)
        if leg.done:
            return _ended(run, "done", "", summary=leg.outcome.summary)
        quiet = 0 if leg.changed else quiet + 1
        if quiet >= QUIET_LEGS:
            return _ended(
                run, "no_progress", f"no progress: {QUIET_LEGS} legs in a row changed nothing in the workspace"
            )
    reason = run.legs[-1].verdict.reason if run.legs and run.legs[-1].verdict else "the judge gave no usable answer"
    return _ended(run, "leg_limit", f"not done after {run.plan.max_legs} legs: {reason}")


def _run_leg(run: _Marathon, settings: Settings, number: int, io: _Io) -> Leg:
    leg_id = derived_id(run.holder.id, f"leg{number}")
    request = replace(
        run.planned.as_request(),
        run_id=leg_id,
        parent_run=run.holder.id,
        link="leg",
        kind=None,
        preface=leg_preface(run, number),
        prompt_values=run.values,
    )
    before = fingerprint(run.root)
    try:
        _, outcome = run_goal(request, settings, model=io.model, out=io.out, json_lines=io.json_lines, recorder=io.sink)
    except UsageError as exc:  # recorded by the runner as a rejected leg
        outcome = Outcome("rejected", "", 0, error=str(exc))
    except (Interrupted, KeyboardInterrupt):
        close_if_running(io.sink, leg_id, "interrupted", "interrupted by a signal")
        raise
    leg = Leg(number, leg_id, outcome)
    if run.values is None:
        run.values = prompt_record({"prompt": io.sink.prompts.get(leg_id)}).get("values")
    leg.changed = leg_changed(io.sink.after.get(leg_id), before, run.root)
    run.legs.append(leg)
    return leg


def _decide(run: _Marathon, leg: Leg, judge: ChatModel, settings: Settings) -> None:
    if run.plan.check is not None:
        leg.check = check_deliverable(run.plan.check, run.root, settings)
    answer = ask_json(judge, JUDGE_SYSTEM, judge_question(run, leg), read_verdict)
    run.holder.spent(answer.tokens_in, answer.tokens_out)
    leg.verdict, leg.problem, leg.replies = answer.value, answer.problem, answer.replies
    leg.tokens = (answer.tokens_in, answer.tokens_out)


def _record(sink: RunRecorder, run: _Marathon, leg: Leg) -> None:
    """The decision as a `judge` step of the marathon's run: what `hearth show` lists per leg."""
    verdict = leg.verdict
    data = {
        "leg": leg.number,
        "run": leg.run_id,
        "status": leg.outcome.status,
        "changed": leg.changed,
        "done": leg.done,
        "judge": verdict.model_dump() if verdict else None,
        "unusable": leg.problem or None,
        "check": {"ok": leg.check.ok, "detail": leg.check.detail} if leg.check else None,
        "tokens_in": leg.tokens[0],
        "tokens_out": leg.tokens[1],
    }
    said = verdict.reason if verdict else f"the judge's answer was unusable ({leg.problem}): not done"
    check = f"; check: {leg.check.detail}" if leg.check else ""
    judged = "done" if leg.done else "not done"
    detail = f"leg {leg.number} ({leg.run_id}) ended {leg.outcome.status}; judged {judged}: {said}{check}"
    replies = "\n---\n".join(leg.replies)
    columns = {"iteration": leg.number, "detail": detail, "output": replies, "ok": int(leg.done)}
    sink.record(StepRecorded(run.holder.id, "judge", {**columns, "data": json.dumps(data)}))


def _ended(run: _Marathon, status: str, error: str, *, summary: str = "") -> Outcome:
    last = run.legs[-1].outcome.summary if run.legs else ""
    return Outcome(status, summary or last, len(run.legs), error=error)


def _interrupted(run: _Marathon, sink: RunRecorder) -> Outcome:
    sink.record(StepRecorded(run.holder.id, "stop", {"detail": "the marathon was interrupted; no further legs"}))
    return _ended(run, "interrupted", "interrupted by a signal")


def leg_preface(run: _Marathon, number: int) -> str:
    """What a leg is told before the goal: its place, the progress note and how to keep it, the last leg."""
    parts = [
        f"## Marathon {run.holder.id}: leg {number} of at most {run.plan.max_legs}\n"
        "This goal is worked on in legs; the workspace holds the work of the legs before this one. "
        f"Before you finish this leg, update the progress note {PROGRESS} with write_file: keep its three "
        "headings (Done, Next, Open questions) and one line per item, so the next leg can carry on."
    ]
    if run.legs:
        parts.append(_last_leg(run.legs[-1]))
    parts.append(f"### The progress note ({PROGRESS}) now\n{_note(run.root)}")
    return "\n\n".join(parts)


def _last_leg(leg: Leg) -> str:
    said = leg.verdict.reason if leg.verdict else "(the judge gave no usable answer)"
    lines = [
        f"### Where the last leg left off\nLeg {leg.number} ended {leg.outcome.status}. Its summary:",
        leg.outcome.summary or "(none)",
        f"The judge: not done yet: {said}",
    ]
    if leg.verdict and leg.verdict.next:
        lines.append(f"Next, the judge suggests: {leg.verdict.next}")
    if leg.check and not leg.check.ok:
        lines.append(f"The deliverable check failed: {leg.check.detail}")
    return "\n".join(lines)


def judge_question(run: _Marathon, leg: Leg) -> str:
    check = f"\nThe deliverable check: {leg.check.detail}" if leg.check else ""
    return (
        f"## Goal\n{run.planned.goal}\n\n## Progress note\n{_note(run.root)}\n\n"
        f"## The last work session (leg {leg.number})\nIt ended {leg.outcome.status}. Its summary:\n"
        f"{leg.outcome.summary or '(none)'}\nIt {'changed' if leg.changed else 'did not change'} the workspace.{check}"
    )


def _note(root: Path) -> str:
    """The progress note, read through the workspace's containment (never through a link out)."""
    try:
        with Workspace(root) as ws:
            text, cut = ws.read_text(PROGRESS, limit=NOTE_CHARS)
    except (OSError, ValueError, PathRefused):
        return "(the note is missing or unreadable; create it)"
    return text + ("\n[... cut]" if cut else "")


def _show(out: TextIO, json_lines: bool, run_id: str, outcome: Outcome) -> None:
    if json_lines:
        record = {"event": "marathon_finished", "run_id": run_id, "status": outcome.status, "legs": outcome.iterations}
        print(json.dumps({**record, "summary": outcome.summary, "error": outcome.error}), file=out, flush=True)
    else:
        print(f"== marathon {outcome.status}: {outcome.summary or outcome.error}", file=out, flush=True)
