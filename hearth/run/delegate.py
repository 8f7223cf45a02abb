"""Delegation: a run hands part of its goal to a child run, and waits for it holding nothing.

The model calls `delegate(goal, profile?, directory?)` (agent/tools/delegate.py); the call reaches
a `Delegation`, which the runner gives only to a queued run (one that can suspend) below the depth
cap (HEARTH_DELEGATE_DEPTH: a run at it is not shown the tool, and a child at it is not given it):

    refused      as the call's result, which the model reads: past the fan-out cap (at most
                 HEARTH_DELEGATE_CHILDREN children per run, one after another), with nothing left of
                 the run's token cap, time or daily budget, or for a profile that cannot be loaded
    the child    a queue request `<run>-d<n>` with `child_of` the caller, through the queue's front
                 door: its walls the intersection of the caller's and the named profile's
                 (hearth/run/narrowing.py), its token cap and time what is left of the caller's,
                 its workspace empty or a copy of one directory of the caller's (a `seed` checkpoint
                 of the caller's files, which the child's admission restores that directory of);
                 recorded first as the caller's `child` step (what was narrowed in its data), so a
                 stop of the caller finds it and stops it too
    the wait     the caller raises Delegated: recorded `waiting` (hearth/run/suspend.py), its process
                 ends, no slot held; the child's end wakes it (hearth/queue/wake.py), a sweep too
    the answer   the new process runs the same call again (hearth/run/resume.py reopens it), and this
                 module answers it with the ended child's status and summary, or its failure, which
                 the gate puts in the data envelope (the child's words are data, not orders)
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from agent.tools.registry import ToolFailed
from hearth.audit import steps
from hearth.audit.store import AuditStore
from hearth.errors import HearthError
from hearth.ids import derived_id
from hearth.leash.budget import budget_spent
from hearth.limits import MAX_RUN_TOKENS
from hearth.queue.wake import wake
from hearth.run.checkpoints import Checkpoints, keep_checkpoint, made_by_hearth, state_inside
from hearth.run.exits import Delegated
from hearth.run.goal import RunPlan
from hearth.run.narrowing import Ceiling, narrowed, of_plan, of_profile
from hearth.run.profiles import load_profile
from hearth.run.recorder import Recorder
from hearth.run.suspend import step_data
from hearth.settings import Settings

if TYPE_CHECKING:
    from agent.loop import Loop
    from hearth.run.resume import ResumePoint

CHILD = "child"  # the caller's step naming a child (hearth/dispatch/stop.py stops what it names)
LINK = "child"  # the child's link to its caller (hearth/run/admission.py's goal_request)
MIN_LEFT_S = 5.0  # a child given less time than this could not make one model call
MAX_TIMEOUT_S = 86_400  # the queue's own ceiling of a request's timeout_s
# sources whose runs hearth treats specially (an eval's case is scored, a self-test checked): a
# child of such a run is only work the run asked for, so it comes as from the CLI
NOT_A_CHILD_SOURCE = ("eval", "self-test")


def depth_of(audit: AuditStore, run: dict[str, Any] | None) -> int:
    """How many callers stand above this run (0: it was started by a person or a timer)."""
    depth, seen = 0, set()
    while run and run.get("link") == LINK and run.get("parent_run") and run["id"] not in seen:
        seen.add(run["id"])
        depth += 1
        run = audit.run(str(run["parent_run"]))
    return depth


def children_spent(audit: AuditStore, run_id: str) -> tuple[int, int]:
    """The tokens and milliseconds this run's children have spent (they count against its limits)."""
    rows = [r for r in audit.linked(run_id) if r.get("link") == LINK]
    tokens = sum(int(r.get("tokens_in") or 0) + int(r.get("tokens_out") or 0) for r in rows)
    return tokens, sum(int(r.get("duration_ms") or 0) for r in rows)


def child_record(audit: AuditStore, parent: str, child: str) -> dict[str, Any]:
    """What the caller's `child` step keeps of one child: its profile, narrowings and seed ({} if none)."""
    for row in steps.data_of(audit, parent, CHILD):
        data = step_data(row)
        if data.get("child") == child:
            return data
    return {}


def offer(
    plan: RunPlan, settings: Settings, audit: AuditStore, recorder: Recorder, point: ResumePoint | None
) -> Delegation | None:
    """The delegation a queued run is given (a resumed one owes its open call the child's end), or
    None at the depth cap: it is not shown the tool."""
    depth = depth_of(audit, audit.run(plan.run_id))
    if depth >= settings.delegate_depth:
        return None
    return Delegation(plan, settings, audit, recorder, depth, point.child if point else "")


@dataclass
class Delegation:
    """The runner's side of the delegate tool for one run (`RunServices.delegate`)."""

    plan: RunPlan
    settings: Settings
    audit: AuditStore
    recorder: Recorder
    depth: int
    owed: str = ""  # the child whose end this process answers (its run resumed on that child)
    spent: Callable[[], int] = lambda: 0  # the run's own tokens so far (its loop's outcome)
    deadline: Callable[[], float | None] = lambda: None  # time.monotonic() its time limit ends at
    iteration: Callable[[], int] = lambda: 0

    def bind(self, loop: Loop) -> None:
        """What the run's loop knows: its tokens so far, its deadline, its iteration."""
        self.spent = lambda: loop.outcome.tokens_in + loop.outcome.tokens_out
        self.deadline = lambda: loop.deadline
        self.iteration = lambda: loop.iteration

    def __call__(self, goal: str, profile: str, directory: str) -> str:
        if self.owed:
            child, self.owed = self.owed, ""
            return self._answer(child)
        n = len(steps.children(self.audit, self.plan.run_id)) + 1
        if n > self.settings.delegate_children:
            raise ToolFailed(
                f"this run has started {n - 1} child runs, the most it may (HEARTH_DELEGATE_CHILDREN="
                f"{self.settings.delegate_children}); do the rest yourself"
            )
        child_id = derived_id(self.plan.run_id, f"d{n}")
        ceiling, notes = self._walls(profile or self.plan.agent_name)
        request = self._request(child_id, goal, profile or self.plan.agent_name, ceiling)
        data = {"child": child_id, "profile": request.agent_name, "narrowed": notes, "directory": directory}
        if directory:
            data["seed"] = self._seed()
        self.recorder.note(
            CHILD, iteration=self.iteration(), detail=child_id, output=goal, data=json.dumps(data, ensure_ascii=False)
        )
        self._submit(request)
        raise Delegated(child_id)

    def _walls(self, profile: str) -> tuple[Ceiling, list[str]]:
        """The child's walls under `profile`, narrowed to this run's; ToolFailed for a profile that
        cannot be loaded."""
        try:
            named = of_profile(load_profile(self.settings.config_dir, profile), self.settings)
        except HearthError as exc:
            raise ToolFailed(f"profile {profile!r} cannot be used: {exc}") from None
        may = self.depth + 1 < self.settings.delegate_depth
        return narrowed(of_plan(self.plan), named, profile, may_delegate=may)

    def _request(self, child_id: str, goal: str, profile: str, ceiling: Ceiling) -> Any:
        """The child's queue request: its walls pinned, its budget what is left of this run's."""
        from hearth.queue.request import Request

        fields: dict[str, Any] = {
            "id": child_id,
            "goal": goal,
            "agent_name": profile,
            "mode": ceiling.mode,
            "allowed_tools": list(ceiling.tools or ()),
            "max_iterations": ceiling.max_iters,
            "network": ceiling.network,
            "egress": list(ceiling.egress) or None,
            "credentials": list(ceiling.credentials) or None,
            "child_of": self.plan.run_id,
            "source": self.plan.source if self.plan.source not in NOT_A_CHILD_SOURCE else "cli",
            "requested_by": self.plan.requested_by,
            "max_tokens": self._tokens_left(),
            "timeout_s": self._time_left(),
        }
        if profile == self.plan.agent_name:
            fields["model"] = self.plan.model  # the caller's own profile: its routed model too
        try:
            return Request(**{k: v for k, v in fields.items() if v is not None})
        except ValueError as exc:
            raise ToolFailed(f"the child run could not be asked for: {exc}") from None

    def _tokens_left(self) -> int | None:
        """What is left of this run's token cap (None: no cap); ToolFailed when nothing is, or a
        daily budget of the agent is spent."""
        daily = budget_spent(self.settings, self.audit, self.plan.agent_name)
        if daily:
            raise ToolFailed(f"no child run can start: {daily}")
        if not self.plan.max_tokens:
            return None
        tokens, _ = children_spent(self.audit, self.plan.run_id)
        left = self.plan.max_tokens - self.spent() - tokens
        if left <= 0:
            raise ToolFailed(f"nothing is left of this run's token cap of {self.plan.max_tokens:,} to give a child")
        return min(left, MAX_RUN_TOKENS)

    def _time_left(self) -> int | None:
        """What is left of this run's time (None: no limit); ToolFailed when too little is."""
        deadline = self.deadline()
        if deadline is None:
            return None
        left = deadline - time.monotonic()
        if left < MIN_LEFT_S:
            raise ToolFailed(f"only {max(left, 0):.0f} s are left of this run's time; too little for a child run")
        return min(int(left), MAX_TIMEOUT_S)

    def _seed(self) -> dict[str, str]:
        """This run's files committed for the child to copy its directory from (a `seed` checkpoint)."""
        from agent.safety.sandbox import SandboxPolicy

        settings, root = self.settings, self.plan.workspace
        sandbox = SandboxPolicy(kind=settings.sandbox, hide=(str(settings.state_dir),))
        points = Checkpoints(
            root,
            self.plan.run_id,
            sandbox,
            exclude=state_inside(settings.state_dir, root),
            made=made_by_hearth(root, settings.agents_dir),
            history=settings.checkpoints_dir,
        )
        point = points.before(agent_name=self.plan.agent_name, model=self.plan.model, goal=self.plan.goal)
        keep_checkpoint(self.recorder.sink, self.plan.run_id, root, replace(point, phase="seed"), points.history_dir)
        if point.status not in ("committed", "unchanged") or not points.history_dir:
            raise ToolFailed(f"your files could not be copied for the child: {point.status} {point.detail}".strip())
        return {"git_dir": points.history_dir, "commit": point.commit or ""}

    def _submit(self, request: Any) -> None:
        from hearth.queue.submit import submit

        try:
            submit(request, self.settings, requested_by=self.plan.requested_by or "hearth")
        except (OSError, HearthError) as exc:
            raise ToolFailed(f"the child run could not be queued: {exc}") from None

    def _answer(self, child: str) -> str:
        """The result owed for a child this run waited on: its end, or another wait while it goes."""
        row = self.audit.run(child)
        if row is None or row["status"] in ("running", "waiting"):
            raise Delegated(child)  # not ended yet (a run that went on after a restart): wait again
        return answer_of(row, child_record(self.audit, self.plan.run_id, child))


def answer_of(row: dict[str, Any], record: dict[str, Any]) -> str:
    """The caller's result: how the child ended, its summary or failure, and what was narrowed."""
    status, child = row["status"], row["id"]
    said = (row.get("summary") or "") if status == "done" else (row.get("error") or row.get("summary") or "")
    head = f"child run {child} (profile {row.get('agent_name') or 'default'}) ended {status}"
    lines = [f"{head}: {said.strip()}" if said.strip() else f"{head}, saying nothing"]
    if status != "done":
        lines.append("It did not finish: decide whether to do that part yourself or delegate it again.")
    narrowings = [str(n) for n in record.get("narrowed") or []]
    if narrowings:
        lines.append("Its walls were narrowed to yours: " + "; ".join(narrowings))
    return "\n".join(lines)


def caller_goes_on(settings: Settings, parent: str) -> None:
    """A child ended (done, failed or stopped): the run that delegated to it goes on. Not a decision
    (nobody approved or denied anything), so not hearth/leash/decisions.py's: the one other place
    that wakes a run."""
    wake(settings, parent)
