"""A research run end to end: `run_research(request, spec, settings)`, the claimed request's process.

    1. the run (kind `research`) is admitted as a marathon's or a swarm's is: an ordinary row,
       its plan checked, a fresh workspace (where report.md is written at the end)
    2. plan: a model call (hearth/research/plan.py), recorded as revision 1 of its plan
    3. approval: the plan waits for a person (a queued run suspends and holds nothing meanwhile);
       denied or expired ends the run `denied`, nothing searched
    4. gathering (hearth/research/gathering.py) with the plan in force, until the gate stops it
    5. synthesis (hearth/research/synthesis.py): claims, their citations checked by the run
    6. the report (hearth/research/report.py), rendered from the record: the run's summary (what
       a /v1 caller reads) and report.md in its workspace

Each step outside is recorded before it runs (hearth/research/journal.py): a new process of the
run (after its approval, or after a restart) reads the record back and goes on from it, doing
nothing twice. Its statuses: `done`; `waiting` (the plan waits for a person; its process ended);
`denied`; `failed` (the plan or the synthesis had no usable answer: the reason is the error);
`budget_exceeded` (a daily budget or the run's own cap left no room for the synthesis: the
report lists the evidence kept); `model_unavailable`; `interrupted` (a stop, a signal).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

from agent.loop import Outcome
from agent.model.reply import ChatModel
from agent.net.guard import NetGuard
from agent.safety.redaction import SecretFinder
from agent.safety.workspace import Workspace
from agent.services import RunServices
from hearth import __version__
from hearth.audit import research
from hearth.audit.store import AuditStore, new_run_id
from hearth.leash.budget import budget_spent
from hearth.queue.longspec import Research
from hearth.research import gather, plan, report
from hearth.research.gate import Limits
from hearth.research.gathering import Gathering, Run, gather_all
from hearth.research.journal import Journal
from hearth.research.record import Record
from hearth.research.synthesis import synthesise
from hearth.run import hosts
from hearth.run.admission import routed
from hearth.run.events import RunRecorder, RunUpdated, default_recorder
from hearth.run.exits import Interrupted, Suspended
from hearth.run.goal import GoalRequest, RunPlan
from hearth.run.liveness import hold_run
from hearth.run.long.holding import Holder, admit_holder, finish_holder, signals_interrupt
from hearth.run.recorder import Recorder
from hearth.run.runner import PROBE_S, model_client
from hearth.run.services import ServicesHook, credential_store, load_redactor, search_endpoint
from hearth.run.state import StateFile
from hearth.run.suspend import RESUME, SUSPEND
from hearth.settings import Settings


@dataclass(frozen=True)
class How:
    """How the run goes: a model to use (tests), where its lines and record go, a hook on its
    services (tests inject a resolver), whether it may suspend (a queued run) and why it goes on."""

    model: ChatModel | None = None
    out: TextIO = sys.stdout
    json_lines: bool = False
    recorder: RunRecorder | None = None
    configure_services: ServicesHook | None = None
    suspend: bool = False
    resume: str | None = None


def run_research(request: GoalRequest, spec: Research, settings: Settings, how: How = How()) -> tuple[str, Outcome]:
    """Research the request's goal; (its run id, its outcome). UsageError if it cannot start."""
    settings.writable_state_dir()
    run_id = request.run_id or new_run_id()
    pulled = hosts.pulled(settings, PROBE_S) if how.model is None else None
    with hold_run(settings, run_id), AuditStore(settings.audit_path) as audit:
        sink = how.recorder or default_recorder(audit, settings)
        planned, root, holder = _admitted(sink, request, settings, run_id, pulled, audit, how.resume)
        state = StateFile(settings.runs_state_dir, run_id, agent_name=planned.agent_name, model=planned.model)
        recorder = Recorder(
            sink, state, run_id, json_lines=how.json_lines, out=how.out, redactor=load_redactor(settings)
        )
        own = model_client(planned, settings) if how.model is None else None
        try:
            with signals_interrupt():
                outcome = _research(planned, spec, settings, audit, recorder, root, holder, how.model or own, how)  # type: ignore[arg-type]
        except Suspended as suspended:
            outcome = _suspended(recorder, suspended)
        except (Interrupted, KeyboardInterrupt):
            recorder.note("stop", detail="the research run was interrupted; it searches and reads nothing more")
            outcome = Outcome("interrupted", "", 0, error="interrupted by a signal")
        finally:
            state.remove()
            if own is not None:
                own.close()
        if outcome.status != "waiting":
            holder.tokens_in, holder.tokens_out = Journal.read(audit, recorder).tokens()
            finish_holder(sink, holder, outcome, settings, planned)
    print(f"== research {run_id} {outcome.status}: {_said(outcome)}", file=how.out, flush=True)
    return run_id, outcome


def _said(outcome: Outcome) -> str:
    if outcome.error:
        return outcome.error
    return outcome.summary.splitlines()[2] if outcome.summary.count("\n") > 2 else outcome.summary


def _admitted(
    sink: RunRecorder,
    request: GoalRequest,
    settings: Settings,
    run_id: str,
    pulled: list[str] | None,
    audit: AuditStore,
    resume: str | None,
) -> tuple[RunPlan, Path, Holder]:
    """The run as admitted now, or (going on) as it was: its plan resolved again, its row as it is."""
    if resume is None:
        planned, root, holder = admit_holder(sink, request, settings, run_id, "research", pulled)
        sink.record(RunUpdated(run_id, _allowances(planned)))
        return replace(planned, workspace=root, fresh=False), root, holder
    row = audit.run(run_id)
    assert row is not None, f"run {run_id} is not in the audit"
    planned, route = routed(replace(request, model=row.get("model") or request.model), settings, run_id, pulled)
    root = Path(row["workspace"])
    holder = Holder(run_id, time.monotonic())
    holder.unavailable = route.problem
    return replace(planned, workspace=root, fresh=False), root, holder


def _allowances(planned: RunPlan) -> dict[str, object]:
    """What the run may do, on its row: the web through its guard (its egress list), no commands, no tools."""
    return {
        "network": 0,
        "egress": json.dumps(list(planned.egress)),
        "credentials": "{}",
        "allowed_tools": "[]",
        "timeout_s": planned.timeout_s or None,
        "hearth_version": __version__,
        "sandbox": "none needed: a research run runs no commands",
    }


def _research(
    planned: RunPlan,
    spec: Research,
    settings: Settings,
    audit: AuditStore,
    recorder: Recorder,
    root: Path,
    holder: Holder,
    model: ChatModel,
    how: How,
) -> Outcome:
    if holder.unavailable:
        return Outcome("model_unavailable", "", 0, error=holder.unavailable)
    services, heard = _services(planned, settings, recorder)
    if how.configure_services:
        how.configure_services(services)
    with Workspace(root, services=services) as ws:
        run = _run(planned, spec, settings, audit, recorder, ws, heard, model)
        if how.resume:
            _went_on(recorder, how.resume)
        problem = plan.propose(run)
        if problem:
            return Outcome("failed", "", 0, error=problem)
        decision = plan.approve(run, settings, audit, planned.agent_name, planned.approval_wait_s, how.suspend)
        if not decision.granted:
            return Outcome("denied", "", 0, error=f"the plan was not approved: {decision.detail or decision.by}")
        return _gathered(run, audit, ws)


def _run(
    planned: RunPlan,
    spec: Research,
    settings: Settings,
    audit: AuditStore,
    recorder: Recorder,
    ws: Workspace,
    heard: gather.Heard,
    model: ChatModel,
) -> Run:
    journal = Journal.read(audit, recorder)
    recorder.resuming(journal.worked_ms(), 0, None)
    record = Record.load(audit, recorder)
    daily = lambda: budget_spent(settings, audit, planned.agent_name) or ""  # noqa: E731
    return Run(planned.goal, Limits.of(spec, planned), record, journal, ws, model, audit, daily, recorder.state, heard)


def _services(planned: RunPlan, settings: Settings, recorder: Recorder) -> tuple[RunServices, gather.Heard]:
    """What the run's searches and reads go through: a guard with the run's egress list (and the
    operator's LAN hosts), whose decisions the run's thread records; no credential is offered."""
    heard = gather.Heard(recorder.decision)
    guard = NetGuard(
        egress=planned.egress,
        private_hosts=frozenset(settings.net_private_hosts),
        secrets=SecretFinder(credential_store(settings).bindings()),
        record=heard,
    )
    services = RunServices(
        net=guard,
        redact=recorder.redactor,
        search_backend=search_endpoint(settings, guard),
        agent_name=planned.agent_name,
        run_id=planned.run_id,
    )
    return services, heard


def _gathered(run: Run, audit: AuditStore, ws: Workspace) -> Outcome:
    """Gathering with the plan in force, then the synthesis and the report."""
    run.record.plans = research.plans(audit, run.record.run_id)  # the operator's edits, made while it waited
    current = run.record.plan()
    assert current is not None
    going = Gathering(**vars(run), plan=current)
    if run.limits.seconds:
        left = run.limits.gathering_seconds() - run.journal.recorder.worked_ms() / 1000
        ws.services.deadline = time.monotonic() + max(0.0, left)
    stopped = gather_all(going)
    used = going.used()
    facts = {"stopped": stopped, "searches": used.searches, "pages": used.pages, "tokens": used.tokens}
    run.journal.once("gate", "stopped", facts, detail=f"gathering stopped: {stopped}")
    refused = run.refused(False)
    problem = synthesise(going) if not refused else ""
    status, error = (
        ("budget_exceeded", f"no synthesis: {refused}") if refused else ("failed" if problem else "done", problem)
    )
    built = report.build(audit, run.record.run_id, status=status, error=error)
    assert built is not None, "a research run's report builds from its own record"
    text = report.markdown(built)
    ws.write_bytes("report.md", text.encode())
    rounds = sum(1 for key in run.journal.closed if key.startswith("gate:")) - 1
    return Outcome(status, text, max(0, rounds), error=error)


def _went_on(recorder: Recorder, cause: str) -> None:
    """A new process of the run takes over: a `resume` step saying why, and the run running again."""
    data = {"cause": "restart" if cause == "restart" else "approval", "why": cause, "worked_ms": recorder.worked_ms()}
    recorder.note(RESUME, detail=f"the research goes on ({cause})", data=json.dumps(data))
    recorder.record(RunUpdated(recorder.run_id, {"status": "running"}))


def _suspended(recorder: Recorder, suspended: Suspended) -> Outcome:
    """The plan waited long enough for a person: `waiting`, and the process ends holding nothing."""
    data = {"approval": suspended.approval_id, "worked_ms": recorder.worked_ms()}
    line = f"suspended while approval {suspended.approval_id} of the plan waits for a person; it goes on once decided"
    recorder.note(SUSPEND, detail=line, data=json.dumps(data))
    recorder.record(RunUpdated(recorder.run_id, {"status": "waiting"}))
    return Outcome("waiting", "", 0)
