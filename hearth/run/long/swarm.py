"""Swarms: split a goal, run the parts side by side through the queue, merge them in one synthesis.

    run_swarm(request, goal, settings, submit=...)   the claimed request's process (`hearth agent ID`)
        1. the swarm's own run (kind `swarm`) is recorded; a planner call with no tools
           (hearth/run/long/judge.py) answers a JSON list of sub-goals, validated: at most max_workers,
           each non-empty and bounded; one repair; otherwise the swarm fails with the reason and
           nothing is queued
        2. each sub-goal becomes a child request `<id>-w<n>` through the ordinary queue (the
           `submit` it is handed: hearth/dispatch/claimed.py hands it the queue's front door),
           a copy of the swarm's request (profile, mode, allowed tools, egress, credentials,
           limits: never wider) with `child_of` set, in its own workspace seeded with the
           swarm's files (committed as the swarm's `seed` checkpoint first, restored by each
           child's admission); the launcher runs them as concurrently as it allows (systemd
           units, or the local launcher's limit, where the waiting swarm holds no slot)
        3. once every child has ended, the synthesis `<id>-synthesis` runs in the swarm's
           workspace with each child's goal, status, summary and changed files (the diffs under
           `.hearth/swarm/<child>/`, hearth/run/long/swarm_results.py) and merges what should be merged

The planner's tokens are in its `plan` step's data and count toward the same daily budgets as the
children's and the synthesis's (hearth/leash/budget.py): with one spent the planner is not asked
(the swarm ends `budget_exceeded`, nothing queued), a child is refused at the spawner's intake, and
the synthesis's loop stops before its first model call. A failed child is reported to the
synthesis, not fatal. Stopping the swarm stops its children
(hearth/dispatch/stop.py finds them by their `child` steps and their `parent_run`).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, Protocol, TextIO

from pydantic import Field, StringConstraints, TypeAdapter

from agent.loop import Outcome
from agent.model.reply import ChatModel
from hearth.audit.store import AuditStore
from hearth.errors import UsageError
from hearth.ids import derived_id
from hearth.leash.budget import budget_spent
from hearth.queue.request import Request
from hearth.run import hosts
from hearth.run.events import RunRecorder, StepRecorded, default_recorder
from hearth.run.exits import Interrupted
from hearth.run.goal import GoalRequest, RunPlan
from hearth.run.long.holding import (
    Holder,
    admit_holder,
    finish_holder,
    signals_interrupt,
)
from hearth.run.long.judge import ask_json
from hearth.run.long.swarm_results import Child, checkpoint_seed, collect, listing, synthesis_preface, wait_for_children
from hearth.run.runner import PROBE_S, model_client, run_goal
from hearth.run.state import StateFile
from hearth.settings import Settings

MAX_SUBGOAL_CHARS = 4_000
PLANNER_SYSTEM = """\
You split a goal into independent sub-goals that separate agents will work on at the same time,
each in its own copy of the workspace; afterwards one agent merges their work. Each sub-goal must
make sense on its own: say which files it is about and what done means. Answer with only a JSON
array of at most {n} strings, one sub-goal each, like ["...", "..."]. If the goal cannot be split,
answer with an array of one string."""


class Submit(Protocol):
    """The queue's front door (hearth/queue/submit.py's `submit`); UsageError when it refuses."""

    def __call__(self, request: Request, settings: Settings, *, requested_by: str) -> object: ...


def plan_reader(max_workers: int) -> TypeAdapter[list[str]]:
    sub_goal = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_SUBGOAL_CHARS)]
    return TypeAdapter(Annotated[list[sub_goal], Field(min_length=1, max_length=max_workers)])


def run_swarm(
    request: Request,
    goal: GoalRequest,
    settings: Settings,
    *,
    submit: Submit,
    out: TextIO = sys.stdout,
    recorder: RunRecorder | None = None,
) -> Outcome:
    """The whole swarm, its children queued through `submit`; its outcome is the synthesis's (or why
    there was none). UsageError if it cannot start.

    `recorder` takes the swarm's record and its synthesis's (each child records its own, through the
    queue); without it, this machine's audit does."""
    assert request.swarm is not None
    with AuditStore(settings.audit_path) as audit:
        sink = recorder or default_recorder(audit, settings)
        plan, root, holder = _admit(sink, goal, settings, request.id, hosts.pulled(settings, PROBE_S))
        state = StateFile(settings.runs_state_dir, request.id, agent_name=plan.agent_name, model=plan.model)
        own = model_client(plan, settings)
        try:
            with signals_interrupt():
                outcome = _swarm(request, plan, root, holder, _Record(audit, sink), settings, own, state, out, submit)
        except (Interrupted, KeyboardInterrupt):
            stopped = "the swarm was interrupted; its children are stopped with it"
            sink.record(StepRecorded(holder.id, "stop", {"detail": stopped}))
            outcome = Outcome("interrupted", "", 0, error="interrupted by a signal")
        finally:
            state.remove()
            own.close()
        finish_holder(sink, holder, outcome, settings, plan)
    print(f"== swarm {outcome.status}: {outcome.summary or outcome.error}", file=out, flush=True)
    return outcome


@dataclass(frozen=True)
class _Record:
    """The audit the swarm reads (its children's rows and checkpoints), and where its own record goes."""

    audit: AuditStore
    sink: RunRecorder


def _admit(
    sink: RunRecorder, goal: GoalRequest, settings: Settings, run_id: str, pulled: list[str] | None
) -> tuple[RunPlan, Path, Holder]:
    plan, root, holder = admit_holder(sink, goal, settings, run_id, "swarm", pulled)
    return replace(plan, workspace=root, fresh=False), root, holder


def _swarm(
    request: Request,
    goal: RunPlan,
    root: Path,
    holder: Holder,
    record: _Record,
    settings: Settings,
    model: ChatModel,
    state: StateFile,
    out: TextIO,
    submit: Submit,
) -> Outcome:
    audit = record.audit
    if holder.unavailable:
        return Outcome("model_unavailable", "", 0, error=f"{holder.unavailable}; nothing was queued")
    spent = budget_spent(settings, audit, goal.agent_name)
    if spent:
        stopped = f"not planned: {spent}; nothing was queued"
        record.sink.record(StepRecorded(holder.id, "stop", {"detail": stopped}))
        return Outcome("budget_exceeded", "", 0, error=stopped)
    sub_goals = _plan(request, goal, root, holder, record.sink, model)
    if isinstance(sub_goals, str):
        return Outcome("failed", "", 0, error=sub_goals)
    unseeded = checkpoint_seed(root, holder.id, settings, record.sink, goal)
    if unseeded:
        return Outcome("failed", "", 0, error=f"{unseeded}; nothing was queued")
    children = [_enqueue(request, goal, settings, record.sink, submit, n, text) for n, text in enumerate(sub_goals, 1)]
    state.update("waiting", f"waiting for {len(children)} children")  # the local launcher frees its slot
    wait_for_children(children, settings, audit, limit_s=(goal.timeout_s or 3600.0) * len(children))
    state.update("synthesis", "merging the children's work")
    collect(children, settings, audit, root)
    return _synthesized(children, goal, holder, record, settings, out)


def _synthesized(
    children: list[Child], goal: RunPlan, holder: Holder, record: _Record, settings: Settings, out: TextIO
) -> Outcome:
    """The synthesis run over the children's merged work, and the swarm's outcome: its, with the
    children that did not end done named."""
    synthesis = replace(
        goal.as_request(),
        run_id=derived_id(holder.id, "synthesis"),
        parent_run=holder.id,
        link="synthesis",
        kind=None,
        preface=synthesis_preface(holder.id, children),
    )
    try:
        _, outcome = run_goal(synthesis, settings, out=out, recorder=record.sink)
    except UsageError as exc:
        return Outcome("rejected", "", len(children), error=f"the synthesis was refused: {exc}")
    failed = [f"{c.id} {c.status}" for c in children if c.status != "done"]
    note = f" ({len(failed)} of {len(children)} children did not end done: {', '.join(failed)})" if failed else ""
    return Outcome(outcome.status, outcome.summary + note, len(children), error=outcome.error)


def _plan(
    request: Request, goal: RunPlan, root: Path, holder: Holder, sink: RunRecorder, model: ChatModel
) -> list[str] | str:
    """The sub-goals, recorded as the swarm's `plan` step; or why there are none (recorded too)."""
    assert request.swarm is not None
    n = request.swarm.max_workers
    question = f"## Goal\n{goal.goal}\n\n## Files in the workspace\n{listing(root)}"
    answer = ask_json(model, PLANNER_SYSTEM.format(n=n), question, plan_reader(n).validate_python)
    holder.spent(answer.tokens_in, answer.tokens_out)
    # the planner's tokens, in the step's data: the daily budgets count them (hearth/leash/budget.py)
    cost = {"data": json.dumps({"tokens_in": answer.tokens_in, "tokens_out": answer.tokens_out})}
    if answer.value is None:
        detail = f"the planner's answer was unusable: {answer.problem}; nothing was queued"
        unusable = {"detail": detail, "output": "\n---\n".join(answer.replies), "ok": 0, **cost}
        sink.record(StepRecorded(holder.id, "plan", unusable))
        return detail
    shown = "; ".join(f"{i}. {text[:120]}" for i, text in enumerate(answer.value, 1))
    planned = {"detail": f"{len(answer.value)} sub-goals: {shown}", "ok": 1, **cost}
    sink.record(StepRecorded(holder.id, "plan", planned))
    return answer.value


def _enqueue(
    request: Request, goal: RunPlan, settings: Settings, sink: RunRecorder, submit: Submit, n: int, text: str
) -> Child:
    """One sub-goal as a child request: recorded as a `child` step first (a stop finds it), then queued."""
    child = Child(derived_id(request.id, f"w{n}"), text)
    sink.record(StepRecorded(request.id, "child", {"iteration": n, "detail": child.id, "output": text}))
    try:
        submit(_child_request(request, goal, child), settings, requested_by=request.requested_by or "hearth")
    except (OSError, UsageError) as exc:  # the door's refusal (SubmitRefused) is a UsageError
        child.status, child.error = "failed", f"not queued: {exc}"
    return child


def _child_request(request: Request, goal: RunPlan, child: Child) -> Request:
    """The swarm's request for one sub-goal: every limit the same, the profile's values pinned."""
    update: dict[str, Any] = {
        "id": child.id,
        "goal": child.goal,
        "swarm": None,
        "child_of": request.id,
        "created_at": None,
        "model": goal.model,
        "mode": goal.mode,
        "max_iterations": goal.max_iters,
        "allowed_tools": goal.manifest,
    }
    return request.model_copy(update=update)
