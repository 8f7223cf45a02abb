"""Runs one goal end to end: admit (hearth/run/admission.py), loop, record the outcome.

`hearth-loop` and `hearth agent` (the queue's per-run unit) both come through `run_goal`, so a
run from any source is recorded the same way. Bad input is recorded too (status `rejected`).
Everything the run records goes through its `RunRecorder` (hearth/run/events.py: this machine's
audit unless one is handed in); the audit it opens is for reading other runs' history.
"""

from __future__ import annotations

import hashlib
import json
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TextIO

from agent.context.compaction import Compactor, estimate_tokens
from agent.context.extractor import Extractor
from agent.context.files import SubdirectoryNotes
from agent.context.prompt import PromptPart
from agent.loop import Event, Loop, Outcome, StopRun
from agent.model import DEFAULT_NUM_CTX
from agent.model.backends import ChatClient, client_for
from agent.model.host import ChatOptions, Host
from agent.model.reply import ChatModel
from agent.safety.policy import Approver
from agent.safety.redaction import Redactor
from agent.safety.sandbox import SandboxUnavailable, detect, start_detection
from agent.safety.workspace import Workspace
from agent.tools.builtin import manifest_of
from agent.tools.gate import ToolRunner
from agent.tools.spill import OutputSpill, spill_threshold
from hearth.audit.store import AuditStore, new_run_id
from hearth.errors import HearthError, UsageError
from hearth.leash import alerts
from hearth.leash.budget import Budget, RunGuard, load_budget
from hearth.leash.rules import with_rules
from hearth.roles import runs as role_runs
from hearth.run import approvers, hosts
from hearth.run.admission import AdmittedRun, admit
from hearth.run.checkpoints import record_checkpoint
from hearth.run.delegate import children_spent, offer
from hearth.run.events import RunFinished, RunRecorder, RunUpdated, StepClosed, default_recorder
from hearth.run.exits import Delegated, Interrupted, Suspended
from hearth.run.goal import GoalRequest, RunPlan, think_value
from hearth.run.liveness import hold_run
from hearth.run.prompting import report_flags, run_system_prompt, run_values
from hearth.run.recorder import Recorder
from hearth.run.resume import UNKNOWN, ResumePoint
from hearth.run.router import linked_request
from hearth.run.services import (
    ServicesHook,
    recall_preface,
    run_services,
)
from hearth.run.state import StateFile
from hearth.run.steers import SteerBox, steers_dir
from hearth.run.suspend import CHILD_ENDED, RESUME, SUSPEND
from hearth.run.walls import Walls, raised
from hearth.settings import Settings

PROBE_S = 3.0  # how long to wait for Ollama's list of pulled models before routing without it


def run_goal(
    request: GoalRequest,
    settings: Settings,
    *,
    model: ChatModel | None = None,
    approve: Approver | None = None,
    json_lines: bool = False,
    out: TextIO = sys.stdout,
    configure_services: ServicesHook | None = None,
    recorder: RunRecorder | None = None,
    suspend: bool = False,
    resume: str | None = None,
) -> tuple[str, Outcome]:
    """Run and record one goal; returns (run id, outcome). Bad input raises UsageError, recorded.

    A run whose model is not available, or (with `escalate`) that ends iteration_limit, stuck or failed,
    is followed by a linked run on the next model of its route; the last run's id and outcome are
    returned. `configure_services` may adjust the run's services before the loop starts (tests
    inject a resolver and connector into the network guard there). `recorder` takes the run's
    record (and its linked runs'); without it, this machine's audit does. With `suspend` (a queued
    run, which its launcher starts again) a run whose approval waits ends `waiting` (hearth/run/suspend.py).
    With `resume` (why: hearth/run/suspend.py's `ready`), the request's run was begun by an earlier
    process and goes on from where that one kept it (hearth/run/resume.py); its linked runs start anew.
    """
    settings.writable_state_dir()
    start_detection(settings.sandbox)  # the sandbox probe runs while the run is admitted and starts
    pulled = hosts.pulled(settings, PROBE_S) if model is None else None
    with AuditStore(settings.audit_path) as audit:
        sink = recorder or default_recorder(audit, settings)
        while True:
            run_id = request.run_id or new_run_id()
            # held from before the run's row exists until after its final status: a `running` row whose
            # lock is free is a dead run, and the next command that looks settles it (dispatch/settle.py)
            with hold_run(settings, run_id):
                asked = replace(request, run_id=run_id)
                if resume:
                    run, going = _readmitted(asked, resume, settings, audit, pulled, json_lines, out, sink)
                else:
                    run = admit(asked, settings, audit, pulled, json_lines=json_lines, out=out, sink=sink)
                    going = Going(suspend)
                with role_runs.turn(run, settings):  # a role's runs take turns in its home
                    outcome = _attempt(run, settings, model, approve, configure_services, going)
                    role_runs.ended(run.plan, run.root, outcome.status, run.recorder)
            follow = linked_request(run.plan, run.route, outcome.status, run.id, run.root, audit)
            if follow is None:
                return run.id, outcome
            request, resume = follow, None


def _readmitted(
    request: GoalRequest,
    cause: str,
    settings: Settings,
    audit: AuditStore,
    pulled: list[str] | None,
    json_lines: bool,
    out: TextIO,
    sink: RunRecorder,
) -> tuple[AdmittedRun, Going]:
    """A run an earlier process of it began, made ready to go on from its point."""
    from hearth.run.admission import readmit
    from hearth.run.resume import resume_point

    row = audit.run(str(request.run_id))
    assert row is not None, f"run {request.run_id} is not in the audit"
    point = resume_point(audit, row, cause)
    run = readmit(request, row, settings, audit, pulled, json_lines=json_lines, out=out, sink=sink)
    return run, Going(True, point)


@dataclass(frozen=True)
class Going:
    """How a run goes: may it suspend (a queued run), and from where it goes on (a resumed one)."""

    suspend: bool = False
    point: ResumePoint | None = None


def _attempt(
    run: AdmittedRun,
    settings: Settings,
    model: ChatModel | None,
    approve: Approver | None,
    hook: ServicesHook | None,
    going: Going,
) -> Outcome:
    if run.route.problem:
        outcome = _unavailable(run)
    else:
        outcome = _with_model(run, settings, model, approve, hook, going)
    if outcome.status == "waiting":
        return outcome  # not ended: the alert that it waits went out when it began waiting
    detail = outcome.error or outcome.summary
    alerts.run_ended(settings, run.id, outcome.status, goal=run.kept_goal, detail=detail, agent=run.plan.agent_name)
    return outcome


def _with_model(
    run: AdmittedRun,
    settings: Settings,
    model: ChatModel | None,
    approve: Approver | None,
    hook: ServicesHook | None,
    going: Going,
) -> Outcome:
    if approve is None:
        approve = approvers.choose(
            run.recorder,
            settings,
            run_timeout_s=run.plan.timeout_s,
            on_pending=alerts.pending_alert(settings),
            wait_s=run.plan.approval_wait_s,
            suspend=going.suspend,
            resumed=going.point.approval if going.point else None,
        )
    # standing rules (hearth/leash/rules.py) answer before a person is asked; the call a resumed
    # run waited on is the person's decision, not a rule's
    resumed = going.point.approval if going.point else None
    approve = with_rules(approve, run.recorder, run.audit, run.plan.agent_name, resumed=resumed)
    own: ChatClient | None = None  # a client we open is ours to close
    if model is None:
        model = own = model_client(run.plan, settings, run.recorder, host=run.route.host)
    try:
        return _execute(run, settings, model, approve, hook, going.point, going.suspend)
    except UsageError as exc:  # found once the prompt is built (a window too small for it)
        run.recorder.record(RunFinished(run.id, "rejected", {"error": str(exc), "iterations": 0}))
        run.state.remove()
        raise
    finally:
        if own is not None:
            own.close()


def _unavailable(run: AdmittedRun) -> Outcome:
    """No model the run could use is pulled: recorded as the loop would, without a model call."""
    outcome = Outcome("model_unavailable", "", 0, error=run.route.problem)
    took = int((time.monotonic() - run.admitted) * 1000)
    totals = {"iterations": 0, "error": outcome.error, "summary": "", "duration_ms": took}
    run.recorder.record(RunFinished(run.id, outcome.status, totals))
    run.recorder(Event("run_finished", 0, {"status": outcome.status, "summary": "", "error": outcome.error}))
    return outcome


def _execute(
    run: AdmittedRun,
    settings: Settings,
    model: ChatModel,
    approve: Approver,
    configure_services: ServicesHook | None,
    point: ResumePoint | None = None,
    suspend: bool = False,
) -> Outcome:
    """Checkpoint, loop, checkpoint: the run itself, recorded as it goes (a resumed run goes on
    from its point: its first checkpoint was made by its first process). A run that may suspend
    may delegate (hearth/run/delegate.py)."""
    plan, trailers = run.plan, {"agent_name": run.plan.agent_name, "model": run.plan.model}
    points = run.checkpoints
    if point is None:
        record_checkpoint(run.recorder, run.root, points.before(goal=run.kept_goal, **trailers), points.history_dir)
    with (
        raised(run.id, settings, run.sandbox, run.recorder, run.root) as walls,
        run_services(plan, run.id, settings, walls.policy, run.redactor, run.recorder.decision) as services,
        Workspace(run.root, services=services) as ws,
    ):
        if configure_services:
            configure_services(services)
        walls.connect(services)
        # only a run that can suspend while its child works may delegate (hearth/run/delegate.py)
        delegation = offer(run.plan, settings, run.audit, run.recorder, point) if suspend else None
        services.delegate = delegation
        # recorded as soon as the walls stand, not at the end: a live run's page shows it, and a run
        # that suspends for a person (it returns early below) has it too
        run.recorder.record(RunUpdated(run.id, {"sandbox": _sandbox_label(settings.sandbox)}))
        if point is None:
            values = dict(plan.prompt_values) or run_values(
                ws.root, run.id, git=run.checkpoints.git_state(), **trailers
            )
            heard = role_runs.carried(run.audit, plan, run.recorder)  # a heartbeat's conversation, to go on with
            kept = str(heard[0]["content"]) if heard else None  # its system prompt: the same bytes, never rebuilt
            loop, tools = _build_loop(
                plan, ws, model, approve, run.recorder, run.parts, values, walls, reask=settings.reask, prompt=kept
            )
            prompt = _prompt_record(run, loop.messages[0]["content"], values)
            recalled = recall_preface(services, plan.goal, settings, run.recorder)
            context = "\n\n".join(part for part in (plan.preface, recalled) if part)
            start: Callable[[], Outcome] = lambda: loop.carry_on(heard or [], run.kept_goal, context)  # noqa: E731
        else:
            loop, tools = _build_loop(
                plan,
                ws,
                model,
                approve,
                run.recorder,
                run.parts,
                {},
                walls,
                prompt=point.system_prompt,
                worked_s=point.worked_ms / 1000,
                reask=settings.reask,
            )
            prompt = _prompt_record(run, point.system_prompt, {})
            _went_on(run.recorder, point)
            start = lambda: loop.resume(point.resumed)  # noqa: E731
        spent = point.resumed.tokens_in + point.resumed.tokens_out if point else 0  # in the audit already
        loop.guard = _guard(plan, settings, run.audit, spent)
        if delegation is not None:
            delegation.bind(loop)
        loop.steering = SteerBox(steers_dir(settings, run.id))
        outcome = _drive(loop, start, run.recorder, run.state, run.redactor, prompt)
    if outcome.status == "waiting":
        return outcome
    after = run.checkpoints.after(
        outcome=outcome.status, summary=outcome.summary, goal=run.kept_goal, changed=tools.touched, **trailers
    )
    record_checkpoint(run.recorder, run.root, after, points.history_dir)
    return outcome


def _went_on(recorder: Recorder, point: ResumePoint) -> None:
    """The new process takes over from the earlier one: its working time, its steps' keys, the
    step it completes; a call of unknown outcome closed as such; and a `resume` step saying all that."""
    recorder.resuming(
        point.worked_ms, point.tool_steps, point.open_key, point.open_tool, iteration=point.resumed.iteration
    )
    if point.unknown_key:
        closed = {"verdict": "unknown", "ok": 0, "output": UNKNOWN}
        recorder.record(StepClosed(recorder.run_id, point.unknown_key, closed))
    cause = "restart" if point.cause == "restart" else "child" if point.cause == CHILD_ENDED else "approval"
    data: dict[str, Any] = {"cause": cause, "why": point.cause}
    data |= {"iteration": point.resumed.iteration, "messages": len(point.resumed.messages)}
    data |= {"worked_ms": point.worked_ms, "approval": point.approval.id if point.approval else None}
    recorder.note(RESUME, iteration=point.resumed.iteration, detail=point.line(), data=json.dumps(data))
    recorder.record(RunUpdated(recorder.run_id, {"status": "running"}))


def _prompt_record(run: AdmittedRun, text: str, values: dict[str, str]) -> str:
    """What the audit keeps of the system prompt (its values and digest); a follow-up says if its is the same."""
    digest = hashlib.sha256(text.encode()).hexdigest()
    if run.plan.prompt_sha256:
        same = digest == run.plan.prompt_sha256
        detail = (
            f"system prompt: the same bytes as run {run.plan.parent_run}'s (Ollama can reuse its cache)"
            if same
            else f"system prompt: differs from run {run.plan.parent_run}'s (the profile, tools or workspace notes changed)"
        )
        run.recorder.note("prompt", detail=detail)
    return json.dumps({"values": values, "sha256": digest}, ensure_ascii=False)


def _guard(plan: RunPlan, settings: Settings, audit: AuditStore, own_so_far: int = 0) -> RunGuard | None:
    """The run's token budgets, checked before each model call; a broken budget file is doctor's to report."""
    try:
        budget = load_budget(settings.config_dir, settings.daily_tokens)
    except HearthError:
        budget = Budget()
    # a run's children spend from its own cap (hearth/run/delegate.py)
    cap = max(0, plan.max_tokens - children_spent(audit, plan.run_id)[0]) if plan.max_tokens else None
    guard = RunGuard(budget, audit, plan.agent_name, cap, own_so_far=own_so_far)
    return guard if guard.active else None


def _sandbox_label(kind: str) -> str:
    try:
        return detect(kind)
    except SandboxUnavailable as exc:
        return f"unavailable: {exc}"


def model_client(plan: RunPlan, settings: Settings, recorder: Recorder | None = None, *, host: str = "") -> ChatClient:
    """The run's model: one host's client (of the host's kind), or a pool over several
    (hearth/run/hosts.py), whose choice of host and any switch are `host` steps. `host` is a label a
    router rule pinned."""
    options = ChatOptions(
        num_ctx=plan.num_ctx,
        reply_tokens=plan.reply_tokens,
        timeout_s=settings.model_timeout_s,
        backoff_s=settings.model_backoff_s,
        think=think_value(plan.think),
        on_retry=recorder.retrying if recorder else None,
        on_tokens=recorder.progress if recorder else None,
        on_no_thinking=(
            (
                lambda said: recorder.notice(
                    "model", f"{plan.model} does not support thinking; it runs without think={plan.think} ({said})"
                )
            )
            if recorder
            else None
        ),
    )

    def client(where: Host, retries: int = 3) -> ChatClient:
        return client_for(where, plan.model, replace(options, retries=retries))

    note = (lambda line: recorder.note("host", detail=line)) if recorder else None
    # with another host to turn to, one retry on a failing host is enough before moving on
    pooled = hosts.pool(plan.model, settings, lambda where: client(where, retries=1), host, note)
    return pooled if pooled is not None else client(hosts.single(settings))


def check_window(num_ctx: int, prompt: str, schemas: list[dict[str, Any]]) -> None:
    """UsageError when the context window cannot hold the system prompt and the tools, naming both."""
    need = estimate_tokens([{"role": "system", "content": prompt}], schemas)
    if num_ctx <= need:
        raise UsageError(
            f"--num-ctx {num_ctx} is too small: the system prompt and tools alone take ~{need:,} tokens; "
            f"give more than that (the default is {DEFAULT_NUM_CTX:,})"
        )


def _build_loop(
    plan: RunPlan,
    ws: Workspace,
    model: ChatModel,
    approve: Approver | None,
    recorder: Recorder,
    parts: list[PromptPart],
    values: dict[str, str],
    walls: Walls,
    *,
    prompt: str | None = None,
    worked_s: float = 0.0,
    reask: bool = True,
) -> tuple[Loop, ToolRunner]:
    """The run's tools and loop; a resumed run passes the system prompt it kept (never rendered
    again: the same bytes) and the time it has worked (its time limit counts only that)."""
    tools = ToolRunner(
        ws,
        mode=plan.mode,
        allowed=manifest_of(plan.manifest, plan.tool_set, (t.name for t in ws.services.tools)),
        approve=approve,
        spill=OutputSpill(ws, recorder.run_id, spill_threshold(plan.num_ctx)),
        notes=SubdirectoryNotes(ws, on_found=lambda found: report_flags(recorder, found)),
        before=[walls.prepare_for, walls.scan_arguments],
        after=[walls.record_connections, walls.check_after],
    )
    if prompt is None:
        prompt = run_system_prompt(
            ws, tools.schemas, parts, recorder, values, num_ctx=plan.num_ctx, look_above=not plan.fresh
        )
        check_window(plan.num_ctx, prompt, tools.schemas)
    deadline = time.monotonic() + max(0.0, plan.timeout_s - worked_s) if plan.timeout_s else None
    ws.services.deadline = deadline  # a command's timeout is cut to what is left of it
    loop = Loop(
        model,
        tools,
        system_prompt=prompt,
        max_iters=plan.max_iters,
        on_event=recorder,
        deadline=deadline,
        compactor=Compactor(plan.num_ctx, model),
        reask=reask,
    )
    if plan.web_extract:
        ws.services.extract = extractor_of(loop, model, ws, recorder)
    return loop, tools


def extractor_of(loop: Loop, model: ChatModel, ws: Workspace, recorder: Recorder) -> Extractor:
    """The run's web extractor: its steps recorded as `extract`, its tokens the run's own (the budget counts them)."""

    def spend(tokens_in: int, tokens_out: int) -> None:
        loop.outcome.tokens_in += tokens_in
        loop.outcome.tokens_out += tokens_out

    def record(step: dict[str, Any]) -> None:
        data = step.pop("data", None)
        recorder.note("extract", iteration=loop.iteration, **step, data=json.dumps(data, ensure_ascii=False))

    def spent() -> str:
        """The run's budgets, checked before the extractor's call as before the agent's."""
        try:
            if loop.guard is not None:
                loop.guard(loop.outcome)
        except StopRun as exc:
            return str(exc)
        return ""

    return Extractor(model, ws.services.envelope, record, spend, spent)


def _drive(
    loop: Loop,
    start: Callable[[], Outcome],
    recorder: Recorder,
    state: StateFile,
    redactor: Redactor | None = None,
    prompt: str | None = None,
) -> Outcome:
    started = time.monotonic()
    previous = _trap_signals()
    try:
        outcome = start()
    except Suspended as suspended:
        _restore_signals(previous)
        return _suspended(loop, recorder, state, suspended)
    except (Interrupted, KeyboardInterrupt):
        outcome = loop.outcome
        outcome.status, outcome.error, outcome.iterations = "interrupted", "interrupted by a signal", loop.iteration
        state.remove()
    finally:
        _restore_signals(previous)
    if redactor:
        outcome.summary, outcome.error = redactor(outcome.summary), redactor(outcome.error)
    totals = {
        "iterations": outcome.iterations,
        "tokens_in": outcome.tokens_in,
        "tokens_out": outcome.tokens_out,
        "latency_ms": int(outcome.model_seconds * 1000),
        "duration_ms": int((time.monotonic() - started) * 1000),
        "error": outcome.error or None,
        "summary": outcome.summary,
        "prompt": prompt,
    }
    recorder.record(RunFinished(recorder.run_id, outcome.status, totals))
    return outcome


def _suspended(loop: Loop, recorder: Recorder, state: StateFile, suspended: Suspended) -> Outcome:
    """The run waited long enough for a person: recorded `waiting` with what it needs to go on
    (the conversation is kept already), and its process ends. Nothing of it is held meanwhile."""
    outcome = loop.outcome
    outcome.status, outcome.iterations = "waiting", loop.iteration
    worked = recorder.worked_ms()
    data = {"approval": suspended.approval_id, "worked_ms": worked, "malformed": loop.owed_malformed}
    line = f"suspended while approval {suspended.approval_id} waits for a person; it goes on once decided"
    if isinstance(suspended, Delegated):
        data = {"child": suspended.child_id, "worked_ms": worked, "malformed": loop.owed_malformed}
        line = f"suspended while child run {suspended.child_id} works; it goes on once the child ends"
    recorder.note(SUSPEND, iteration=loop.iteration, tool=recorder.tool or None, detail=line, data=json.dumps(data))
    totals = {"iterations": loop.iteration, "tokens_in": outcome.tokens_in, "tokens_out": outcome.tokens_out}
    recorder.record(RunUpdated(recorder.run_id, {"status": "waiting", **totals}))
    state.remove()
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
