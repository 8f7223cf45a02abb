"""Admission: a request becomes a recorded run, or a recorded refusal.

`admit` applies the agent's profile and routes the model, records the run's row and what it is
allowed, checks everything that can be checked before a model call (limits, tools, egress,
credentials, the workspace), and builds what the run needs: its recorder, live state, sandbox
policy and checkpoints. A run that cannot start is recorded `rejected` and raises.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from agent.context.prompt import PromptPart
from agent.safety.policy import MODES
from agent.safety.redaction import Redactor
from agent.safety.sandbox import SandboxPolicy
from hearth import __version__, alerts
from hearth.audit.store import AuditStore, RunRecord, new_run_id
from hearth.credentials import check_run_credentials
from hearth.errors import HearthError, UsageError
from hearth.limits import MAX_ITERATIONS
from hearth.logs import install as install_log_redaction
from hearth.run.checkpoints import Checkpoints, state_inside
from hearth.run.events import RunFinished, RunRecorder, RunStarted, RunUpdated, StepRecorded
from hearth.run.goal import GoalRequest
from hearth.run.history import NoHistory, Point, restore, source_of
from hearth.run.profiles import apply_network, apply_profile, load_profile
from hearth.run.prompting import config_parts
from hearth.run.recorder import Recorder
from hearth.run.router import AUTO, Route, route_request
from hearth.run.services import (
    check_egress,
    credential_store,
    load_redactor,
)
from hearth.run.state import StateFile
from hearth.run.workdir import run_root
from hearth.settings import Settings, check_tool_names


@dataclass
class AdmittedRun:
    """One admitted run: what `admit` built and recorded, and what the rest of the run uses."""

    id: str
    request: GoalRequest  # with its profile applied
    root: Path
    audit: AuditStore  # for reading other runs (a parent, a swarm, the day's spend); the run records through `recorder`
    recorder: Recorder
    state: StateFile
    redactor: Redactor
    kept_goal: str  # the goal as the audit and the checkpoints keep it: no credential value
    parts: list[PromptPart]
    sandbox: SandboxPolicy
    checkpoints: Checkpoints
    route: Route


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
    """Record the run and check it; one that cannot start is recorded `rejected` and raises."""
    run_id = request.run_id or new_run_id()
    redactor = load_redactor(settings)
    install_log_redaction(redactor)  # from here on, no log record of this process holds a value
    request, unfollowed = _continued(request, settings, audit)
    request, parts, problem, chosen, warning = _with_profile(request, settings, pulled)
    problem = unfollowed or problem
    kept_goal = redactor(request.goal)
    sink.record(RunStarted.of(_record_of(request, run_id, kept_goal, chosen)))
    sink.record(RunUpdated(run_id, _allowances(request, settings)))
    try:
        if problem:
            raise problem
        root = _checked(request, settings, run_id)
    except HearthError as exc:
        sink.record(RunFinished(run_id, "rejected", {"error": str(exc), "iterations": 0}))
        alerts.run_ended(settings, run_id, "rejected", goal=kept_goal, detail=str(exc), agent=request.agent_name)
        raise
    if request.link == "child":
        _seed_child(audit, sink, request, root, run_id, settings)
    if request.restore_from is not None:
        _restore_follow_up(sink, request.restore_from, root, run_id)
    sink.record(RunUpdated(run_id, {"workspace": str(root)}))
    state = StateFile(
        settings.runs_state_dir, run_id, agent_name=request.agent_name, model=request.model, label=request.label
    )
    recorder = Recorder(sink, state, run_id, json_lines=json_lines, out=out, redactor=redactor)
    recorder.announce()
    _warn_unsandboxed(settings, recorder)
    if warning:
        recorder.notice("warning", f"{warning}; the router's rules were not used")
    sandbox = SandboxPolicy(kind=settings.sandbox, network=bool(request.network), hide=(str(settings.state_dir),))
    exclude = state_inside(settings.state_dir, root)
    checkpoints = Checkpoints(
        root, run_id, sandbox, exclude=exclude, fresh=request.workspace is None, history=settings.checkpoints_dir
    )
    return AdmittedRun(
        run_id, request, root, audit, recorder, state, redactor, kept_goal, parts, sandbox, checkpoints, chosen
    )


def _record_of(request: GoalRequest, run_id: str, kept_goal: str, chosen: Route) -> RunRecord:
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
        model_requested=chosen.requested,
        model_reason=chosen.reason,
    )


def _seed_child(
    audit: AuditStore, sink: RunRecorder, request: GoalRequest, root: Path, run_id: str, settings: Settings
) -> None:
    """A swarm's child starts in its own new directory holding the swarm's files, restored from
    the checkpoint the swarm made of them before queuing its children (hearth/run/history.py)."""
    swarm = audit.run(request.parent_run or "")
    if swarm is None or swarm.get("kind") != "swarm":
        return  # not a swarm's child after all: an empty workspace, as any fresh run
    try:
        point = source_of(swarm["id"], audit.checkpoints(swarm["id"]), settings.checkpoints_dir)
        count = restore(point, root)
    except (NoHistory, OSError) as exc:
        sink.record(
            RunFinished(run_id, "rejected", {"error": f"cannot seed the swarm's files: {exc}", "iterations": 0})
        )
        raise UsageError(f"cannot seed the swarm's files into {root}: {exc}") from None
    where = (
        f"checkpoint {point.commit[:12]} of swarm {swarm['id']}" if point else f"swarm {swarm['id']} (it had no files)"
    )
    seeded = {"iteration": 0, "detail": f"seeded {count} files from {where}", "ok": 1}
    sink.record(StepRecorded(run_id, "restore", seeded))


def _restore_follow_up(sink: RunRecorder, source: tuple[str, str, str], root: Path, run_id: str) -> None:
    """A follow-up's fresh directory filled from the last checkpoint of the run it continues."""
    earlier, git_dir, commit = source
    point = Point(Path(git_dir), commit) if commit else None
    try:
        count = restore(point, root)
    except OSError as exc:
        sink.record(RunFinished(run_id, "rejected", {"error": str(exc), "iterations": 0}))
        raise UsageError(f"cannot restore run {earlier}'s workspace into {root}: {exc}") from None
    what = f"checkpoint {commit[:12]} ({count} files)" if point else "nothing (its workspace was empty)"
    detail = (
        f"restored run {earlier}'s workspace from {what} into {root}; run {earlier}'s own directory is left as it was"
    )
    restored = {"iteration": 0, "detail": detail, "arguments": {"run": earlier, "commit": commit, "git_dir": git_dir}}
    sink.record(StepRecorded(run_id, "restore", {**restored, "ok": 1}))


def _continued(request: GoalRequest, settings: Settings, audit: AuditStore) -> tuple[GoalRequest, HearthError | None]:
    """A follow-up made whole from the run it continues (only a follow-up loads that code)."""
    if not request.continues:
        return request, None
    from hearth.run.followup import continued

    try:
        return continued(request, settings, audit), None
    except HearthError as exc:
        return replace(request, parent_run=request.continues, link="follow-up"), exc


def _with_profile(
    request: GoalRequest, settings: Settings, pulled: list[str] | None
) -> tuple[GoalRequest, list[PromptPart], HearthError | None, Route, str]:
    """The request with its profile applied and its model routed, the operator's prompt parts, and
    the reason it cannot run (or None); a broken router file is a warning, never a refusal."""
    unrouted = Route(request.model or AUTO, request.model or "", "request")
    try:
        profile = load_profile(settings.config_dir, request.agent_name)
        parts = config_parts(settings.config_dir, profile)
        resolved = apply_profile(
            profile,
            model=request.model,
            mode=request.mode,
            max_iters=request.max_iters,
            allowed_tools=request.allowed_tools,
            defaults=settings,
        )
    except HearthError as exc:
        return request, [], exc, unrouted, ""
    resolved |= apply_network(profile, network=request.network, egress=request.egress)
    chosen, warning = route_request(request, profile, resolved, settings, pulled)
    resolved["model"] = chosen.model
    max_tokens = request.max_tokens or profile.max_tokens
    return replace(request, **resolved, max_tokens=max_tokens), parts, None, chosen, warning


def resolved(request: GoalRequest, settings: Settings) -> GoalRequest:
    """The request with its profile applied and checked as a run's would be; the error if it cannot run."""
    request, _, problem, _, _ = _with_profile(request, settings, None)
    if problem:
        raise problem
    reason = validate(request)
    if reason:
        raise UsageError(reason)
    return request


def validate(request: GoalRequest) -> str | None:
    """The one-line reason a request (with its profile applied) cannot run, or None."""
    if not request.goal.strip():
        return "the goal is empty; say what the agent should do"
    if request.mode not in MODES:
        return f"unknown mode {request.mode!r}; use one of {', '.join(MODES)}"
    if request.max_iters is None or not 1 <= request.max_iters <= MAX_ITERATIONS:
        return f"max iterations must be between 1 and {MAX_ITERATIONS}, got {request.max_iters}"
    if not (request.model or "").strip():
        return "no model given; pass --model NAME"
    if request.allowed_tools:  # [] is a run with no tools (queue-spec's no-tools); a flag refuses it
        try:
            check_tool_names(request.allowed_tools)
        except UsageError as exc:
            return str(exc)
    return None


def _checked(request: GoalRequest, settings: Settings, run_id: str) -> Path:
    problem = validate(request)
    if problem:
        raise UsageError(problem)
    check_egress(request.egress)
    check_run_credentials(request.credentials, credential_store(settings))
    return run_root(request.workspace, settings.agents_dir, run_id, settings.unit_state_dirs)


def _allowances(request: GoalRequest, settings: Settings) -> dict[str, Any]:
    """What the run is allowed, for its row: network, egress, credentials with their hosts, tools,
    limits (iterations, seconds, context tokens) and the hearth that runs it."""
    try:
        bound = credential_store(settings).load()
    except HearthError:
        bound = {}  # an unusable store rejects the run below; the names are still worth keeping
    return {
        "network": int(bool(request.network)),
        "egress": json.dumps(list(request.egress)),
        "credentials": json.dumps({name: bound.get(name, {}).get("hosts", []) for name in request.credentials}),
        "allowed_tools": json.dumps(request.allowed_tools) if request.allowed_tools is not None else None,
        "max_iterations": request.max_iters,
        "timeout_s": request.timeout_s,
        "num_ctx": request.num_ctx,
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
