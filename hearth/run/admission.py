"""Admission: a request becomes a resolved plan and a recorded run, or a recorded refusal.

`admit` makes the run's plan (`plan_of`, hearth/run/planning.py: the agent's profile applied, the
model routed, hearth's defaults for the rest; a frozen `RunPlan`, hearth/run/goal.py), records the
run's row and what it is allowed, checks everything that can be checked before a model call
(limits, tools, egress, credentials, the workspace), fills a fresh workspace with what it starts
from (hearth/run/seeding.py), and builds what the run needs: its recorder, live state, sandbox
policy and checkpoints. A run that cannot start is recorded `rejected` and raises. From here on
the runner, its services and its record read the plan, never the request.

`goal_request` is the one place a queue Request (hearth/queue/request.py) becomes a run's input.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from agent.context.prompt import PromptPart
from agent.safety.redaction import Redactor
from agent.safety.sandbox import SandboxPolicy
from hearth import __version__
from hearth.audit.store import AuditStore, RunRecord, new_run_id
from hearth.credentials import check_run_credentials
from hearth.errors import HearthError, UsageError
from hearth.leash import alerts
from hearth.limits import parse_duration
from hearth.logs import install as install_log_redaction
from hearth.roles.admit import role_home
from hearth.run.checkpoints import Checkpoints, made_by_hearth, state_inside
from hearth.run.events import RunFinished, RunRecorder, RunStarted, RunUpdated, StepRecorded
from hearth.run.goal import GoalRequest, RunPlan
from hearth.run.planning import plan_of, validate
from hearth.run.planning import resolved as resolved  # still importable from here
from hearth.run.planning import routed as routed  # still importable from here
from hearth.run.profiles import agent_for_label
from hearth.run.recorder import Recorder
from hearth.run.router import AUTO, Route
from hearth.run.seeding import restore_follow_up, seed_eval_case, seed_swarm_child, take_attachments
from hearth.run.services import (
    check_egress,
    credential_store,
    load_redactor,
)
from hearth.run.state import StateFile
from hearth.run.workdir import run_root
from hearth.settings import Settings
from hearth.skills.offer import exposed, offer_skills

if TYPE_CHECKING:  # the queue's model needs pydantic; a run from hearth-loop never loads it
    from hearth.queue.request import Request


def goal_request(request: Request, settings: Settings, *, workspace: Path | None = None) -> GoalRequest:
    """A queue request as a run's input, field by field (tests/hearth/run/test_plan.py holds every field to it).

    The fields that choose how it runs (`evolve`, `marathon`, `swarm`) are hearth/dispatch/claimed.py's;
    `version` and `created_at` stay in the request's row. `workspace` is for a caller that is not
    the queue (the self-test): a queued request always gets a fresh directory, made by admission."""
    return GoalRequest(
        goal=request.goal,
        model=request.model,
        agent_name=agent_for_label(settings.config_dir, request.agent_name, request.label),
        label=request.label,
        max_tokens=request.max_tokens,
        mode=request.mode,
        max_iters=request.max_iterations,
        workspace=workspace,
        run_id=request.id,
        source=request.source,
        requested_by=request.requested_by,
        allowed_tools=request.allowed_tools,
        timeout_s=float(request.timeout_s),
        approval_wait_s=parse_duration(request.approval_wait) if request.approval_wait else None,
        credentials=request.credentials or [],
        egress=request.egress or [],
        continues=request.continues,
        parent_run=request.child_of,
        link="child" if request.child_of else None,
        network=request.network,
        think=request.think,
        web_extract=request.web_extract,
        queued=True,
        heartbeat=request.heartbeat or "",
    )


@dataclass
class AdmittedRun:
    """One admitted run: what `admit` built and recorded, and what the rest of the run uses."""

    id: str
    plan: RunPlan
    root: Path
    audit: AuditStore
    recorder: Recorder
    state: StateFile
    redactor: Redactor
    kept_goal: str  # the goal as the audit and the checkpoints keep it: no credential value
    parts: list[PromptPart]
    sandbox: SandboxPolicy
    checkpoints: Checkpoints
    route: Route
    admitted: float = field(default_factory=time.monotonic)  # when: a run that ends before its loop is timed from here


def admit(
    request: GoalRequest,
    settings: Settings,
    audit: AuditStore,
    pulled: list[str] | None,
    *,
    json_lines: bool,
    out: TextIO,
    sink: RunRecorder,
) -> AdmittedRun:
    """Plan, record (through `sink`) and check the run; one that cannot start is recorded `rejected`
    and raises."""
    run_id = request.run_id or new_run_id()
    redactor = load_redactor(settings)
    install_log_redaction(redactor)  # from here on, no log record of this process holds a value
    request, unfollowed = _continued(request, settings, audit)
    kept_goal = redactor(request.goal)
    plan, chosen, parts, warning = _recorded_plan(request, settings, sink, pulled, run_id, kept_goal, unfollowed)
    try:
        if unfollowed:
            raise unfollowed
        made = role_home(plan, settings)
        root = _checked(plan, settings)
    except HearthError as exc:
        _refuse(sink, settings, run_id, kept_goal, plan.agent_name, exc)
    if made:
        line = f"made {', '.join(made)} in role {plan.role}'s home from their templates"
        sink.record(StepRecorded(run_id, "home", {"iteration": 0, "detail": line, "ok": 1}))
    if plan.link == "child":
        seed_swarm_child(audit, sink, plan, root, run_id, settings)
    if plan.restore_from:
        restore_follow_up(sink, plan.restore_from, root, run_id)
    if request.source == "eval":
        seed_eval_case(audit, sink, run_id, root, settings)
    if request.source.startswith("channel:"):
        take_attachments(sink, settings, run_id, root)
    sink.record(RunUpdated(run_id, {"workspace": str(root)}))
    skills = offer_skills(settings, audit, plan)  # copied now, listed once: hearth/skills/offer.py
    parts = [*parts, *skills.parts]
    run = _ready(plan, root, audit, sink, settings, redactor, kept_goal, parts, chosen, json_lines=json_lines, out=out)
    for problem in skills.problems:
        run.recorder.notice("skill_invalid", f"{problem}; that skill is not offered")
    _warn_unsandboxed(settings, run.recorder)
    if warning:
        run.recorder.notice("warning", f"{warning}; the router's rules were not used")
    return run


def _ready(
    plan: RunPlan,
    root: Path,
    audit: AuditStore,
    sink: RunRecorder,
    settings: Settings,
    redactor: Redactor,
    kept_goal: str,
    parts: list[PromptPart],
    route: Route,
    *,
    json_lines: bool,
    out: TextIO,
) -> AdmittedRun:
    """What a planned run works with: its live state, its recorder (its id shown first), the
    sandbox of its commands and its checkpoints; for a run admitted now or one going on."""
    run_id = plan.run_id
    state = StateFile(
        settings.runs_state_dir, run_id, agent_name=plan.agent_name, model=plan.model, label=plan.label or None
    )
    recorder = Recorder(sink, state, run_id, json_lines=json_lines, out=out, redactor=redactor)
    recorder.announce()
    hide, skills = (str(settings.state_dir),), exposed(settings, run_id)  # its skills' copy, read-only
    sandbox = SandboxPolicy(kind=settings.sandbox, network=plan.network, hide=hide, expose=skills)
    exclude = state_inside(settings.state_dir, root)
    made = made_by_hearth(root, settings.agents_dir)
    checkpoints = Checkpoints(
        root, run_id, sandbox, exclude=exclude, fresh=plan.fresh, made=made, history=settings.checkpoints_dir
    )
    return AdmittedRun(
        run_id, plan, root, audit, recorder, state, redactor, kept_goal, parts, sandbox, checkpoints, route
    )


def readmit(
    request: GoalRequest,
    row: dict[str, Any],
    settings: Settings,
    audit: AuditStore,
    pulled: list[str] | None,
    *,
    json_lines: bool,
    out: TextIO,
    sink: RunRecorder,
) -> AdmittedRun:
    """A run admitted before, made ready to go on in a new process (hearth/run/resume.py): the
    plan resolved again from its request on the model it was routed to, its row left as it is
    (nothing is recorded twice), its workspace the one it worked in."""
    run_id = str(row["id"])
    redactor = load_redactor(settings)
    install_log_redaction(redactor)
    kept_goal = str(row.get("goal") or redactor(request.goal))
    asked = replace(request, run_id=run_id, model=row.get("model") or request.model, continues=None)
    plan, route, parts, _ = plan_of(asked, settings, pulled, run_id)
    root = Path(row["workspace"]) if row.get("workspace") else _checked(plan, settings)
    plan = replace(plan, workspace=root)
    return _ready(plan, root, audit, sink, settings, redactor, kept_goal, parts, route, json_lines=json_lines, out=out)


def _recorded_plan(
    request: GoalRequest,
    settings: Settings,
    sink: RunRecorder,
    pulled: list[str] | None,
    run_id: str,
    kept_goal: str,
    unfollowed: HearthError | None,
) -> tuple[RunPlan, Route, list[PromptPart], str]:
    """`plan_of`, with the run's row and allowances recorded; a request no profile can be applied
    to is recorded as it was asked, rejected, and raises (a follow-up's own problem first)."""
    try:
        planned = plan_of(request, settings, pulled, run_id)
    except HearthError as exc:
        sink.record(RunStarted.of(_asked_record(request, run_id, kept_goal)))
        sink.record(RunUpdated(run_id, _asked_allowances(request, settings)))
        _refuse(sink, settings, run_id, kept_goal, request.agent_name, unfollowed or exc)
    sink.record(RunStarted.of(_record_of(planned[0], kept_goal, planned[1])))
    sink.record(RunUpdated(run_id, _allowances(planned[0], settings)))
    return planned


def _refuse(
    sink: RunRecorder, settings: Settings, run_id: str, kept_goal: str, agent: str, exc: HearthError
) -> NoReturn:
    """The run recorded `rejected` for `exc`, the operator alerted, and `exc` raised."""
    sink.record(RunFinished(run_id, "rejected", {"error": str(exc), "iterations": 0}))
    alerts.run_ended(settings, run_id, "rejected", goal=kept_goal, detail=str(exc), agent=agent)
    raise exc


def _record_of(plan: RunPlan, kept_goal: str, chosen: Route) -> RunRecord:
    return RunRecord(
        id=plan.run_id,
        agent_name=plan.agent_name,
        model=plan.model,
        goal=kept_goal,
        mode=plan.mode,
        source=plan.source,
        requested_by=plan.requested_by,
        parent_run=plan.parent_run or None,  # the audit keeps NULL for "none"
        link=plan.link or None,
        kind=plan.kind or None,
        label=plan.label or None,
        model_requested=chosen.requested,
        model_reason=chosen.reason,
    )


def _asked_record(request: GoalRequest, run_id: str, kept_goal: str) -> RunRecord:
    """The row of a run refused before it had a plan (its profile could not be applied)."""
    return RunRecord(
        id=run_id,
        agent_name=request.agent_name,
        model=request.model or "",
        goal=kept_goal,
        mode=request.mode or "",
        source=request.source,
        requested_by=request.requested_by,
        parent_run=request.parent_run,
        link=request.link,
        kind=request.kind,
        label=request.label,
        model_requested=request.model or AUTO,
        model_reason="request",
    )


def _continued(request: GoalRequest, settings: Settings, audit: AuditStore) -> tuple[GoalRequest, HearthError | None]:
    """A follow-up made whole from the run it continues (only a follow-up loads that code)."""
    if not request.continues:
        return request, None
    from hearth.run.long.followup import continued

    try:
        return continued(request, settings, audit), None
    except HearthError as exc:
        return replace(request, parent_run=request.continues, link="follow-up"), exc


def _checked(plan: RunPlan, settings: Settings) -> Path:
    problem = validate(plan)
    if problem:
        raise UsageError(problem)
    check_egress(plan.egress)
    check_run_credentials(plan.credentials, credential_store(settings))
    return run_dir(plan, settings)


def run_dir(plan: RunPlan, settings: Settings) -> Path:
    """The directory the plan's run works in, made or checked now: its own workspace, else a fresh one."""
    return run_root(None if plan.fresh else plan.workspace, settings.agents_dir, plan.run_id, settings.unit_state_dirs)


def _allowances(plan: RunPlan, settings: Settings) -> dict[str, Any]:
    """What the run is allowed, for its row: network, egress, credentials with their hosts, tools,
    limits (iterations, seconds, context tokens) and the hearth that runs it."""
    row = _allowance_row(
        settings,
        network=plan.network,
        egress=plan.egress,
        credentials=plan.credentials,
        tools=plan.manifest,
        max_iterations=plan.max_iters,
        timeout_s=plan.timeout_s or None,  # NULL: no time limit
        num_ctx=plan.num_ctx,
    )
    return {**row, "think": plan.think or None, "web_extract": int(plan.web_extract)}


def _asked_allowances(request: GoalRequest, settings: Settings) -> dict[str, Any]:
    """The same for a run refused before it had a plan: what it asked for."""
    return _allowance_row(
        settings,
        network=bool(request.network),
        egress=request.egress,
        credentials=request.credentials,
        tools=request.allowed_tools,
        max_iterations=request.max_iters,
        timeout_s=request.timeout_s,
        num_ctx=request.num_ctx,
    )


def _allowance_row(
    settings: Settings,
    *,
    network: bool,
    egress: Sequence[str],
    credentials: Sequence[str],
    tools: list[str] | None,
    max_iterations: int | None,
    timeout_s: float | None,
    num_ctx: int,
) -> dict[str, Any]:
    try:
        bound = credential_store(settings).load()
    except HearthError:
        bound = {}  # an unusable store rejects the run below; the names are still worth keeping
    return {
        "network": int(network),
        "egress": json.dumps(list(egress)),
        "credentials": json.dumps({name: bound.get(name, {}).get("hosts", []) for name in credentials}),
        "allowed_tools": json.dumps(tools) if tools is not None else None,
        "max_iterations": max_iterations,
        "timeout_s": timeout_s,
        "num_ctx": num_ctx,
        "hearth_version": __version__,
    }


def _warn_unsandboxed(settings: Settings, recorder: Recorder) -> None:
    """sandbox = none is the operator's explicit, unsafe choice: say so on every run, and record it."""
    if settings.sandbox != "none":
        return
    text = (
        "HEARTH_SANDBOX=none: run_command runs with no OS sandbox (only rlimits, a timeout and a "
        "scrubbed environment); this is unsafe and recorded on the run"
    )
    print(f"hearth: warning: {text}", file=sys.stderr, flush=True)
    recorder.note("warning", detail=text)
