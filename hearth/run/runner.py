"""Runs one goal end to end: validate, record, prepare the workspace, loop, record the outcome.

`hearth-loop` and `hearth agent` (the queue's per-run unit) both come through `run_goal`, so a
run from any source is recorded the same way. Bad input is recorded too (status `rejected`).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import stat
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from agent.context.compaction import Compactor, estimate_tokens
from agent.context.files import SubdirectoryNotes
from agent.context.prompt import PromptPart
from agent.loop import Event, Loop, Outcome
from agent.model.ollama_client import DEFAULT_NUM_CTX, ChatModel, OllamaClient, probe
from agent.safety.policy import MODES, Approver
from agent.safety.redaction import Redactor
from agent.safety.sandbox import SandboxPolicy, SandboxUnavailable, detect, start_detection
from agent.safety.workspace import Workspace
from agent.tools.gate import ToolRunner
from agent.tools.spill import OutputSpill, spill_threshold
from hearth import __version__, alerts
from hearth.audit.store import AuditStore, RunRecord, new_run_id
from hearth.budget import Budget, RunGuard, load_budget
from hearth.credentials import check_run_credentials
from hearth.errors import HearthError, UsageError
from hearth.logs import install as install_log_redaction
from hearth.run import approvers
from hearth.run.checkpoints import Checkpoints, record_checkpoint, state_inside
from hearth.run.goal import MAX_ITERATIONS, GoalRequest
from hearth.run.lock import hold_run
from hearth.run.profiles import apply_network, apply_profile, load_profile
from hearth.run.prompting import config_parts, report_flags, run_system_prompt, run_values
from hearth.run.recorder import Recorder
from hearth.run.router import AUTO, Route, linked_request, route_request
from hearth.run.services import (
    ServicesHook,
    check_egress,
    credential_store,
    load_redactor,
    recall_preface,
    run_services,
)
from hearth.run.state import StateFile
from hearth.run.walls import WalledTools, Walls, raised
from hearth.settings import Settings, check_tool_names, probe_writable

EXIT_CODES = {
    "done": 0,
    "failed": 1,
    "usage": 2,
    "iteration_limit": 3,
    "model_unavailable": 4,
    "denied": 5,
    "tripped": 6,
    "budget_exceeded": 7,
    "rejected": 2,
    "interrupted": 130,
    "leg_limit": 3,  # a marathon that was not done after its last leg
    "no_progress": 3,  # a marathon whose legs stopped changing the workspace
    "internal": 70,
}


PROBE_S = 3.0  # how long to wait for Ollama's list of pulled models before routing without it


class Interrupted(BaseException):
    """SIGTERM or SIGINT arrived; the run is recorded as interrupted."""


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


def prepare_workspace(path: Path) -> Path:
    """The workspace directory, created if missing (its parent must exist: a mistyped path never
    makes a tree of directories); UsageError if it is a file or unwritable."""
    if path.exists() and not path.is_dir():
        raise UsageError(f"workspace {path} is not a directory")
    parent = path.absolute().parent
    if not path.exists() and not parent.is_dir():
        raise UsageError(
            f"workspace {path} cannot be made: its parent {parent} does not exist; create it first, or check the path"
        )
    try:
        path.mkdir(exist_ok=True)
        probe_writable(path)
    except OSError as exc:
        raise UsageError(f"workspace {path} is not writable: {exc.strerror or exc}") from None
    return path.resolve()


def fresh_run_dir(agents: Path, run_id: str, made_for_it: tuple[str, ...] = ()) -> Path:
    """A new directory for one run, made by this call: never one that was there before, never
    through a symlink (neither `<state>/agents` nor the run's own name may be one).

    `made_for_it` names directories systemd made for this very unit before it started (its
    $STATE_DIRECTORY): a hearth-agent@ID unit finds its workspace made, empty and its own, and
    takes it as new; any other existing directory is refused."""
    if not run_id or "/" in run_id or run_id in (".", ".."):
        raise UsageError(f"{run_id!r} cannot name a run directory")
    try:
        agents.mkdir(parents=True, exist_ok=True)
        fd = os.open(agents, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if os.path.islink(agents):
            raise UsageError(f"{agents} is a symlink; runs' directories are made only in a real directory") from None
        raise UsageError(f"cannot use {agents} for run directories: {exc.strerror or exc}") from None
    try:
        os.mkdir(run_id, dir_fd=fd)
    except FileExistsError:
        if not _made_by_systemd(fd, run_id, agents / run_id, made_for_it):
            raise UsageError(
                f"run directory {agents / run_id} already exists; a fresh run never reuses a directory"
            ) from None
    except OSError as exc:
        raise UsageError(f"cannot make the run directory {agents / run_id}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    return prepare_workspace(agents / run_id)


def _made_by_systemd(agents_fd: int, name: str, path: Path, made_for_it: tuple[str, ...]) -> bool:
    """The unit's own StateDirectory: named by systemd, a real directory (no symlink), ours, empty."""
    if str(path) not in made_for_it:
        return False
    try:
        info = os.stat(name, dir_fd=agents_fd, follow_symlinks=False)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            return False
        inside = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=agents_fd)
    except OSError:
        return False
    try:
        with os.scandir(inside) as entries:
            return next(entries, None) is None
    finally:
        os.close(inside)


@dataclass
class _Run:
    """One admitted run: what `_admit` built and recorded, and what the rest of the run uses."""

    id: str
    request: GoalRequest  # with its profile applied
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


def run_goal(
    request: GoalRequest,
    settings: Settings,
    *,
    model: ChatModel | None = None,
    approve: Approver | None = None,
    json_lines: bool = False,
    out: TextIO = sys.stdout,
    configure_services: ServicesHook | None = None,
) -> tuple[str, Outcome]:
    """Run and record one goal; returns (run id, outcome). Bad input raises UsageError, recorded.

    A run whose model is not available, or (with `escalate`) that ends iteration_limit or failed,
    is followed by a linked run on the next model of its route; the last run's id and outcome are
    returned. `configure_services` may adjust the run's services before the loop starts (tests
    inject a resolver and connector into the network guard there).
    """
    settings.writable_state_dir()
    start_detection(settings.sandbox)  # the sandbox probe runs while the run is admitted and starts
    pulled = probe(settings.ollama_host, timeout_s=PROBE_S) if model is None else None
    with AuditStore(settings.audit_path) as audit:
        while True:
            request = replace(request, run_id=request.run_id or new_run_id())
            # held from before the run's row exists until after its final status: a `running` row whose
            # lock is free is a dead run, and the next command that looks settles it (dispatch/settle.py)
            with hold_run(settings, request.run_id or ""):
                run = _admit(request, settings, audit, pulled, json_lines=json_lines, out=out)
                outcome = _attempt(run, settings, model, approve, configure_services)
            follow = linked_request(run.request, run.route, outcome.status, run.id, run.root, audit)
            if follow is None:
                return run.id, outcome
            request = follow


def _attempt(
    run: _Run, settings: Settings, model: ChatModel | None, approve: Approver | None, hook: ServicesHook | None
) -> Outcome:
    if run.route.problem:
        outcome = _unavailable(run)
    else:
        outcome = _with_model(run, settings, model, approve, hook)
    detail = outcome.error or outcome.summary
    alerts.run_ended(settings, run.id, outcome.status, goal=run.kept_goal, detail=detail, agent=run.request.agent_name)
    return outcome


def _with_model(
    run: _Run, settings: Settings, model: ChatModel | None, approve: Approver | None, hook: ServicesHook | None
) -> Outcome:
    if approve is None:
        approve = approvers.choose(
            run.recorder, settings, run_timeout_s=run.request.timeout_s, on_pending=alerts.pending_alert(settings)
        )
    own: OllamaClient | None = None  # a client we open is ours to close
    if model is None:
        model = own = model_client(run.request, settings, run.recorder)
    try:
        return _execute(run, settings, model, approve, hook)
    except UsageError as exc:  # found once the prompt is built (a window too small for it)
        run.audit.finish_run(run.id, status="rejected", error=str(exc), iterations=0)
        run.state.remove()
        raise
    finally:
        if own is not None:
            own.close()


def _unavailable(run: _Run) -> Outcome:
    """No model the run could use is pulled: recorded as the loop would, without a model call."""
    outcome = Outcome("model_unavailable", "", 0, error=run.route.problem)
    run.audit.finish_run(run.id, status=outcome.status, iterations=0, error=outcome.error, summary="")
    run.recorder(Event("run_finished", 0, {"status": outcome.status, "summary": "", "error": outcome.error}))
    return outcome


def _admit(
    request: GoalRequest,
    settings: Settings,
    audit: AuditStore,
    pulled: list[str] | None,
    *,
    json_lines: bool,
    out: TextIO,
) -> _Run:
    """Record the run and check it; one that cannot start is recorded `rejected` and raises."""
    run_id = request.run_id or new_run_id()
    redactor = load_redactor(settings)
    install_log_redaction(redactor)  # from here on, no log record of this process holds a value
    request, unfollowed = _continued(request, settings, audit)
    request, parts, problem, chosen, warning = _with_profile(request, settings, pulled)
    problem = unfollowed or problem
    kept_goal = redactor(request.goal)
    audit.start_run(_record_of(request, run_id, kept_goal, chosen))
    audit.update_run(run_id, **_allowances(request, settings))
    try:
        if problem:
            raise problem
        root = _checked(request, settings, run_id)
    except HearthError as exc:
        audit.finish_run(run_id, status="rejected", error=str(exc), iterations=0)
        alerts.run_ended(settings, run_id, "rejected", goal=kept_goal, detail=str(exc), agent=request.agent_name)
        raise
    if request.link == "child":
        _seed_child(audit, request, root, run_id)
    audit.update_run(run_id, workspace=str(root))
    state = StateFile(
        settings.runs_state_dir, run_id, agent_name=request.agent_name, model=request.model, label=request.label
    )
    recorder = Recorder(audit, state, run_id, json_lines=json_lines, out=out, redactor=redactor)
    _warn_unsandboxed(settings, recorder)
    if warning:
        recorder.notice("warning", f"{warning}; the router's rules were not used")
    sandbox = SandboxPolicy(kind=settings.sandbox, network=bool(request.network), hide=(str(settings.state_dir),))
    exclude = state_inside(settings.state_dir, root)
    checkpoints = Checkpoints(
        root, run_id, sandbox, exclude=exclude, fresh=request.workspace is None, history=settings.checkpoints_dir
    )
    return _Run(run_id, request, root, audit, recorder, state, redactor, kept_goal, parts, sandbox, checkpoints, chosen)


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


def _execute(
    run: _Run, settings: Settings, model: ChatModel, approve: Approver, configure_services: ServicesHook | None
) -> Outcome:
    """Checkpoint, loop, checkpoint: the run itself, recorded as it goes."""
    request, trailers = run.request, {"agent_name": run.request.agent_name, "model": run.request.model or ""}
    points = run.checkpoints
    record_checkpoint(
        run.audit, run.recorder, run.root, points.before(goal=run.kept_goal, **trailers), points.history_dir
    )
    with (
        raised(run.id, settings, run.sandbox, run.recorder, run.root) as walls,
        run_services(request, run.id, settings, walls.policy, run.redactor, run.recorder.decision) as services,
        Workspace(run.root, services=services) as ws,
    ):
        if configure_services:
            configure_services(services)
        walls.connect(services)
        values = request.prompt_values or run_values(ws.root, run.id, git=run.checkpoints.git_state(), **trailers)
        loop, tools = _build_loop(request, ws, model, approve, run.recorder, run.parts, values, walls)
        loop.guard = _guard(request, settings, run.audit)
        prompt = _prompt_record(run, loop.messages[0]["content"], values)
        recalled = recall_preface(services, request.goal, settings, run.recorder)
        context = "\n\n".join(part for part in (request.preface, recalled) if part)
        kept = replace(request, goal=run.kept_goal)  # the model reads the goal as the audit keeps it
        outcome = _drive(loop, kept, run.audit, run.id, run.state, context, run.redactor, prompt)
    run.audit.update_run(run.id, sandbox=_sandbox_label(settings.sandbox))  # its probe has long finished
    after = run.checkpoints.after(
        outcome=outcome.status, summary=outcome.summary, goal=run.kept_goal, changed=tools.touched, **trailers
    )
    record_checkpoint(run.audit, run.recorder, run.root, after, points.history_dir)
    return outcome


def _seed_child(audit: AuditStore, request: GoalRequest, root: Path, run_id: str) -> None:
    """A swarm's child starts in its own new directory holding a copy of the swarm's files."""
    from hearth.run.swarm_results import seed

    swarm = audit.run(request.parent_run or "")
    if swarm is None or swarm.get("kind") != "swarm" or not swarm.get("workspace"):
        return  # not a swarm's child after all: an empty workspace, as any fresh run
    try:
        seed(Path(swarm["workspace"]), root)
    except OSError as exc:
        audit.finish_run(run_id, status="rejected", error=f"cannot copy the swarm's files: {exc}", iterations=0)
        raise UsageError(f"cannot copy the swarm's files into {root}: {exc.strerror or exc}") from None


def _continued(request: GoalRequest, settings: Settings, audit: AuditStore) -> tuple[GoalRequest, HearthError | None]:
    """A follow-up made whole from the run it continues (only a follow-up loads that code)."""
    if not request.continues:
        return request, None
    from hearth.run.followup import continued

    try:
        return continued(request, settings, audit), None
    except HearthError as exc:
        return replace(request, parent_run=request.continues, link="follow-up"), exc


def _prompt_record(run: _Run, text: str, values: dict[str, str]) -> str:
    """What the audit keeps of the system prompt (its values and digest); a follow-up says if its is the same."""
    digest = hashlib.sha256(text.encode()).hexdigest()
    if run.request.prompt_sha256:
        same = digest == run.request.prompt_sha256
        detail = (
            f"system prompt: the same bytes as run {run.request.parent_run}'s (Ollama can reuse its cache)"
            if same
            else f"system prompt: differs from run {run.request.parent_run}'s (the profile, tools or workspace notes changed)"
        )
        run.recorder.note("prompt", detail=detail)
    return json.dumps({"values": values, "sha256": digest}, ensure_ascii=False)


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


def _guard(request: GoalRequest, settings: Settings, audit: AuditStore) -> RunGuard | None:
    """The run's token budgets, checked before each model call; a broken budget file is doctor's to report."""
    try:
        budget = load_budget(settings.config_dir, settings.daily_tokens)
    except HearthError:
        budget = Budget()
    guard = RunGuard(budget, audit, request.agent_name, request.max_tokens)
    return guard if guard.active else None


def resolved(request: GoalRequest, settings: Settings) -> GoalRequest:
    """The request with its profile applied and checked as a run's would be; the error if it cannot run."""
    request, _, problem, _, _ = _with_profile(request, settings, None)
    if problem:
        raise problem
    reason = validate(request)
    if reason:
        raise UsageError(reason)
    return request


def _checked(request: GoalRequest, settings: Settings, run_id: str) -> Path:
    problem = validate(request)
    if problem:
        raise UsageError(problem)
    check_egress(request.egress)
    check_run_credentials(request.credentials, credential_store(settings))
    if request.workspace is not None:
        return prepare_workspace(request.workspace)
    return fresh_run_dir(settings.agents_dir, run_id, settings.unit_state_dirs)


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


def _sandbox_label(kind: str) -> str:
    try:
        return detect(kind)
    except SandboxUnavailable as exc:
        return f"unavailable: {exc}"


def model_client(request: GoalRequest, settings: Settings, recorder: Recorder | None = None) -> OllamaClient:
    return OllamaClient(
        request.model or "",
        settings.ollama_host,
        num_ctx=request.num_ctx,
        timeout_s=settings.ollama_timeout_s,
        backoff_s=settings.ollama_backoff_s,
        on_retry=recorder.retrying if recorder else None,
        on_tokens=recorder.progress if recorder else None,
    )


def check_window(num_ctx: int, prompt: str, schemas: list[dict[str, Any]]) -> None:
    """UsageError when the context window cannot hold the system prompt and the tools, naming both."""
    need = estimate_tokens([{"role": "system", "content": prompt}], schemas)
    if num_ctx <= need:
        raise UsageError(
            f"--num-ctx {num_ctx} is too small: the system prompt and tools alone take ~{need:,} tokens; "
            f"give more than that (the default is {DEFAULT_NUM_CTX:,})"
        )


def _build_loop(
    request: GoalRequest,
    ws: Workspace,
    model: ChatModel,
    approve: Approver | None,
    recorder: Recorder,
    parts: list[PromptPart],
    values: dict[str, str],
    walls: Walls,
) -> tuple[Loop, ToolRunner]:
    tools = WalledTools(
        ws,
        walls=walls,
        mode=request.mode or "auto",
        allowed=request.allowed_tools,
        approve=approve,
        spill=OutputSpill(ws, recorder.run_id, spill_threshold(request.num_ctx)),
        notes=SubdirectoryNotes(ws, on_found=lambda found: report_flags(recorder, found)),
    )
    prompt = run_system_prompt(
        ws, tools.schemas, parts, recorder, values, num_ctx=request.num_ctx, look_above=request.workspace is not None
    )
    check_window(request.num_ctx, prompt, tools.schemas)
    deadline = time.monotonic() + request.timeout_s if request.timeout_s else None
    ws.services.deadline = deadline  # a command's timeout is cut to what is left of it
    loop = Loop(
        model,
        tools,
        system_prompt=prompt,
        max_iters=request.max_iters or 12,
        on_event=recorder,
        deadline=deadline,
        compactor=Compactor(request.num_ctx, model),
    )
    return loop, tools


def _drive(
    loop: Loop,
    request: GoalRequest,
    audit: AuditStore,
    run_id: str,
    state: StateFile,
    context: str = "",
    redactor: Redactor | None = None,
    prompt: str | None = None,
) -> Outcome:
    started = time.monotonic()
    previous = _trap_signals()
    try:
        outcome = loop.run(request.goal, context=context)
    except (Interrupted, KeyboardInterrupt):
        outcome = loop.outcome
        outcome.status, outcome.error, outcome.iterations = "interrupted", "interrupted by a signal", loop.iteration
        state.remove()
    finally:
        _restore_signals(previous)
    if redactor:
        outcome.summary, outcome.error = redactor(outcome.summary), redactor(outcome.error)
    audit.finish_run(
        run_id,
        status=outcome.status,
        iterations=outcome.iterations,
        tokens_in=outcome.tokens_in,
        tokens_out=outcome.tokens_out,
        latency_ms=int(outcome.model_seconds * 1000),
        duration_ms=int((time.monotonic() - started) * 1000),
        error=outcome.error or None,
        summary=outcome.summary,
        prompt=prompt,
    )
    return outcome


def _trap_signals() -> Any:
    def interrupted(signum: int, frame: Any) -> None:
        raise Interrupted()

    try:
        return signal.signal(signal.SIGTERM, interrupted)
    except ValueError:  # not the main thread: the caller owns signals
        return None


def _restore_signals(previous: Any) -> None:
    if previous is not None:
        signal.signal(signal.SIGTERM, previous)


def exit_code(status: str) -> int:
    return EXIT_CODES.get(status, EXIT_CODES["internal"])
