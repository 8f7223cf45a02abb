"""The plan of a research run: proposed by a model call, approved (and perhaps edited) by a person.

    propose(run)                  the plan phase, once: revision 1 of the run's plan (by `model`)
    approve(run, ...)             the plan's approval, asked as any run's approval is: a standing
                                  rule of the run's profile answers first (`hearth approve ID
                                  --always` makes one), else a person, from the run page, the
                                  CLI or an alert's link; a queued run suspends while it waits
                                  and holds nothing (hearth/run/suspend.py wakes it)
    revise(settings, run, plan)   an operator's edit while the approval waits: a new revision, by
                                  them; the run goes ahead with the last revision once approved

The approval names the tool `research_plan` and carries the question and the plan as proposed; the
run page shows the plan as it stands, with who edited it.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from agent.clock import utc_now
from agent.safety.policy import Decision
from hearth.audit import approvals, research
from hearth.audit.store import AuditStore
from hearth.errors import NotFound, UsageError
from hearth.leash import alerts
from hearth.leash.rules import with_rules
from hearth.research import shown
from hearth.research.gathering import Run, close_phase, phase_data
from hearth.research.phases import PHASES, Plan, ask
from hearth.run.approvers import HeadlessApprover
from hearth.run.long.judge import describe
from hearth.settings import Settings
from hearth.users.access import User, require

TOOL = "research_plan"  # the approval's tool name: approving it lets the research go ahead
KIND = "research"


def propose(run: Run) -> str:
    """Revision 1 of the plan, asked once; '' when there is one, else why the plan phase failed."""
    if run.record.plans:
        return ""
    refused = run.refused(True)
    if refused:
        return f"not planned: {refused}"
    opened = run.journal.open("phase", "plan", detail="plan: sub-questions and their searches")
    answer = ask(run.model, PHASES["plan"], shown.plan_question(run.question), most=run.limits.sub_questions)
    value: Plan | None = answer.value
    if value is not None:
        run.record.propose(value)
        line = f"plan: {len(value.sub_questions)} sub-questions, {sum(len(s.queries) for s in value.sub_questions)} searches"
    else:
        line = f"plan failed: {answer.answer.problem}"
    close_phase(run.journal, opened, answer, phase_data("plan", answer), line)
    return "" if value is not None else f"the plan phase failed: {answer.answer.problem}"


def approve(run: Run, settings: Settings, audit: AuditStore, profile: str, wait_s: float, suspend: bool) -> Decision:
    """The plan's approval: decided (now, or by an earlier process of the run), else Suspended
    (raised by the headless approver once a queued run has waited HEARTH_SUSPEND_AFTER_S)."""
    kept = run.journal.done("approval")
    if kept is not None:
        return Decision(bool(kept.get("granted")), by=str(kept.get("by") or ""), detail=str(kept.get("detail") or ""))
    args = {"question": run.question, "plan": json.loads(run.record.plans[0]["plan"])}
    earlier = _asked_before(audit, run.record.run_id)
    inner = HeadlessApprover(
        run.journal.recorder,
        wait_s,
        on_pending=alerts.pending_alert(settings),
        suspend_after_s=settings.suspend_after_s if suspend else None,
        resumed=earlier,
    )
    approver = with_rules(inner, run.journal.recorder, audit, profile, resumed=earlier)
    decision = approver(TOOL, args, reason(run))
    data = {"granted": decision.granted, "by": decision.by, "detail": decision.detail, "approval": decision.ref}
    line = f"the plan was {'approved' if decision.granted else 'not approved'} by {decision.by}"
    run.journal.once("decision", "approval", data, detail=line, tool=TOOL)
    return decision


def reason(run: Run) -> str:
    plan = run.record.plan()
    assert plan is not None
    searches = sum(len(s.queries) for s in plan.sub_questions)
    return (
        f"research run {run.record.run_id} asks to go ahead with its plan: {len(plan.sub_questions)} sub-questions, "
        f"{searches} searches, then reading at most {run.limits.pages} pages (see or edit it on the run's page, "
        f"or: hearth research --plan {run.record.run_id})"
    )


def _asked_before(audit: AuditStore, run_id: str) -> approvals.Approval | None:
    """The plan's approval an earlier process of the run asked for (it goes on waiting on that one)."""
    rows = [row for row in approvals.of_run(audit, run_id) if row["tool"] == TOOL]
    return approvals.from_row(rows[-1]) if rows else None


def parsed(text: str) -> Plan:
    """A plan from its JSON text; UsageError saying what is wrong with it."""
    try:
        return Plan.model_validate_json(text)
    except ValidationError as exc:
        raise UsageError(f"the plan is not valid: {describe(exc)}") from None


def revise(settings: Settings, run_id: str, plan: Plan, by: str, note: str = "", *, user: User) -> int:
    """A new revision of the run's plan by `by`, while its approval waits; its number. NotFound
    for a run that is not a research run, Forbidden when `user` may not approve in its profile
    (editing the plan is part of deciding it), UsageError when its plan no longer waits."""
    if not settings.audit_path.exists():
        raise NotFound(f"no research run {run_id!r}: nothing has run yet")
    with AuditStore(settings.audit_path) as audit, audit.transaction():
        row = audit.run(run_id)
        if row is None or row.get("kind") != KIND:
            raise NotFound(f"no research run {run_id!r}; see: hearth runs")
        require(user, "approve", str(row.get("agent_name") or "default"))
        if not any(a["tool"] == TOOL and a["status"] == "pending" for a in approvals.of_run(audit, run_id)):
            raise UsageError(
                f"run {run_id}'s plan is not waiting for approval; it can be edited only before it is decided"
            )
        return research.revise(audit, run_id, plan.model_dump_json(), by, note.strip()[:500], utc_now())


def as_text(plan: Plan) -> str:
    """The plan as an operator edits it: JSON, one sub-question an object."""
    return json.dumps(plan.model_dump(), indent=2, ensure_ascii=False)


def shown_plans(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The plan's revisions as pages and the CLI show them: who, when, the plan."""
    return [
        {"revision": r["revision"], "by": r["by"], "at": r["at"], "note": r["note"], "plan": json.loads(r["plan"])}
        for r in rows
    ]
