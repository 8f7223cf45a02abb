"""What a marathon and a swarm share: the run that holds the others, derived ids, signals.

The holding run (kind `marathon` or `swarm`) is an ordinary row in `runs`, recorded here (through
its recorder, hearth/run/events.py) rather than by the runner because it has no loop of its own:
its legs, children and synthesis are the runs, each through `run_goal` or the queue, each linked
to it by `parent_run`. Its own model calls (a judge, a planner) count toward the same daily budgets
as its runs' (hearth/leash/budget.py) and are not made once one is spent (its `budget_spent`). Its status is the whole effort's (`done`, `leg_limit`, `no_progress`,
`failed`, `interrupted`, a leg's own ending).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.loop import Outcome
from hearth.audit.store import RunRecord
from hearth.errors import HearthError, UsageError
from hearth.leash import alerts
from hearth.run.admission import routed, run_dir
from hearth.run.events import RunFinished, RunRecorder, RunStarted
from hearth.run.exits import Interrupted
from hearth.run.goal import GoalRequest, RunPlan
from hearth.run.router import Route
from hearth.run.services import load_redactor
from hearth.settings import Settings


@dataclass
class Holder:
    """The holding run while it goes: its id, when it started, and what it spent itself (model calls)."""

    id: str
    started: float
    tokens_in: int = 0
    tokens_out: int = 0
    unavailable: str = ""  # why no model it could use is pulled: it ends model_unavailable, asking nothing

    def spent(self, tokens_in: int, tokens_out: int) -> None:
        self.tokens_in += tokens_in
        self.tokens_out += tokens_out


def start_holder(
    sink: RunRecorder, run: RunPlan | GoalRequest, run_id: str, kind: str, root: Path | None, route: Route | None = None
) -> Holder:
    """The holding run's row, from its plan and route (or, refused before it had one, from the request)."""
    record = RunRecord(
        id=run_id,
        agent_name=run.agent_name,
        model=run.model or "",  # a request refused before its plan may name none
        goal=run.goal,
        mode=run.mode or "",
        source=run.source,
        requested_by=run.requested_by,
        workspace=str(root or ""),
        parent_run=run.parent_run or None,
        link=run.link or None,
        kind=kind,
        model_requested=route.requested if route else None,
        model_reason=route.reason if route else None,
    )
    sink.record(RunStarted.of(record))
    return Holder(run_id, time.monotonic())


def admit_holder(
    sink: RunRecorder, request: GoalRequest, settings: Settings, run_id: str, kind: str, pulled: list[str] | None
) -> tuple[RunPlan, Path, Holder]:
    """The request's plan, checked as a run's would be, its model resolved against `pulled` as a
    run's is (its judge, planner and runs ask for that name), its directory, and the holding run
    recorded; one that cannot start is recorded `rejected` and raises UsageError."""
    asked: RunPlan | GoalRequest = request
    try:
        plan, route = routed(request, settings, run_id, pulled)
        asked = plan
        root = run_dir(plan, settings)
    except HearthError as exc:
        holder = start_holder(sink, asked, run_id, kind, None)
        sink.record(RunFinished(holder.id, "rejected", {"error": str(exc), "iterations": 0}))
        goal = load_redactor(settings)(asked.goal)
        alerts.run_ended(settings, run_id, "rejected", goal=goal, detail=str(exc), agent=asked.agent_name)
        raise UsageError(str(exc)) from None
    holder = start_holder(sink, plan, run_id, kind, root, route)
    holder.unavailable = route.problem
    return plan, root, holder


def finish_holder(sink: RunRecorder, holder: Holder, outcome: Outcome, settings: Settings, plan: RunPlan) -> None:
    """The holding run's final status and totals, recorded, and alerted as a run's end is (its legs,
    children and synthesis alert their own)."""
    totals = {
        "iterations": outcome.iterations,
        "tokens_in": holder.tokens_in,
        "tokens_out": holder.tokens_out,
        "duration_ms": int((time.monotonic() - holder.started) * 1000),
        "error": outcome.error or None,
        "summary": outcome.summary,
    }
    sink.record(RunFinished(holder.id, outcome.status, totals))
    redact = load_redactor(settings)  # an alert leaves the box: no credential value in it, as a run's
    detail, goal = redact(outcome.error or outcome.summary), redact(plan.goal)
    alerts.run_ended(settings, holder.id, outcome.status, goal=goal, detail=detail, agent=plan.agent_name)


def close_if_running(sink: RunRecorder, run_id: str, status: str, reason: str) -> None:
    """A run cut off outside its loop (a signal during its checkpoint) still gets its final status."""
    sink.record(RunFinished(run_id, status, {"error": reason}, if_running=True))


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """SIGTERM raises Interrupted anywhere in the holding run, not only inside a leg's loop."""

    def interrupted(signum: int, frame: Any) -> None:
        raise Interrupted()

    try:
        previous = signal.signal(signal.SIGTERM, interrupted)
    except ValueError:  # not the main thread: the caller owns signals
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
