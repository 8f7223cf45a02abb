"""`hearth eval run`: every case of a suite, for every model (and profile variant), `repeat` times,
each queued as an ordinary request (source `eval`) through the queue's front door, so the
launcher starts it (as many at once as it allows), the walls and the budgets apply, and its run
is audited as any other, linked to the eval by `requested_by = eval:EVAL_ID` and its result row.

`plan_eval` says what would run and what it would cost in the budget's terms (`--dry-run`);
`start_eval` records the eval and its items first (admission seeds each run's workspace from its
item: hearth/eval/seed.py), then queues them.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from agent.clock import utc_now
from hearth.audit.evals import REQUESTED_BY, Item, record_eval, record_score
from hearth.audit.store import AuditStore
from hearth.eval.suite import Case, Suite, case_spec
from hearth.leash.budget import day_start, load_budget, local_now, spent
from hearth.limits import MAX_ITERATIONS
from hearth.queue.request import Request
from hearth.queue.submit import Heal, SubmitRefused, submit
from hearth.settings import Settings

MAX_RUNS = 500  # one eval queues at most this many runs: a typo in --repeat never floods the queue
SLACK_ITERATIONS = 2  # a run may go this far past its case's max_iterations before its cap stops it


@dataclass(frozen=True)
class Variant:
    label: str  # what the matrix calls it: the model, or model+profile
    model: str  # "" : the profile's, the router's or the host's choice
    profile: str  # "" : the case's


@dataclass
class Plan:
    eval_id: str
    suite: Suite
    variants: list[Variant]
    repeat: int
    items: list[tuple[Item, Case, Variant]] = field(default_factory=list)

    def estimate(self, settings: Settings) -> dict[str, Any]:
        """The cost in the budget's terms: tokens the recorded runs spent, caps, what is left today."""
        settings.writable_state_dir()
        with AuditStore(settings.audit_path) as audit:
            known = [_recorded_tokens(audit, case.from_run) for _, case, _ in self.items]
            budget = load_budget(settings.config_dir, settings.daily_tokens)
            used = spent(audit, day_start(local_now())) if budget.daily is not None else 0
        caps = [case.checks.max_tokens for _, case, _ in self.items]
        return {
            "runs": len(self.items),
            "estimated_tokens": sum(t for t in known if t),
            "estimated_from": sum(1 for t in known if t),
            "capped_tokens": sum(c for c in caps if c) if all(caps) else None,
            "daily_budget": budget.daily,
            "daily_left": None if budget.daily is None else max(0, budget.daily - used),
        }


def plan_eval(suite: Suite, models: list[str], profiles: list[str], repeat: int) -> Plan:
    """The runs of one eval, not yet recorded; UsageError-free: bounds are the CLI's."""
    variants = [
        Variant(_label(model, profile, bool(profiles)), model, profile)
        for model in (models or [""])
        for profile in (profiles or [""])
    ]
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    plan = Plan(f"ev-{stamp}-{secrets.token_hex(3)}", suite, variants, repeat)
    number = 0
    for case in suite.cases:
        for variant in variants:
            for r in range(1, repeat + 1):
                number += 1
                item = Item(f"{plan.eval_id}-{number:03d}", case.name, variant.label, r, case.start, case_spec(case))
                plan.items.append((item, case, variant))
    return plan


def _label(model: str, profile: str, with_profile: bool) -> str:
    name = model or "default"
    return f"{name}+{profile}" if with_profile else name


def request_for(plan: Plan, item: Item, case: Case, variant: Variant) -> Request:
    cap = case.checks.max_iterations
    body: dict[str, Any] = {
        "id": item.run_id,
        "goal": case.goal,
        "agent_name": variant.profile or case.profile,
        "model": variant.model or None,
        "mode": case.mode,
        "max_iterations": min(MAX_ITERATIONS, cap + SLACK_ITERATIONS) if cap else None,
        "max_tokens": case.checks.max_tokens * 2 if case.checks.max_tokens else None,
        "source": "eval",
        "requested_by": f"{REQUESTED_BY}{plan.eval_id}",
        "label": f"eval {plan.suite.name}/{case.name}"[:128],
    }
    return Request.model_validate(body)


def start_eval(
    plan: Plan,
    settings: Settings,
    *,
    by: str,
    trigger: str,
    fingerprint: str = "",
    alert_drop: float | None = None,
    heal: Heal | None = None,
) -> list[str]:
    """Record the eval and queue its runs; one note per run that could not be queued (its result
    says why) and per thing the launcher did."""
    row = {
        "id": plan.eval_id,
        "suite": plan.suite.name,
        "created_at": utc_now(),
        "requested_by": by,
        "models": [v.label for v in plan.variants],
        "repeat": plan.repeat,
        "trigger": trigger,
        "fingerprint": fingerprint,
        "alert_drop": alert_drop,
    }
    settings.writable_state_dir()
    with AuditStore(settings.audit_path) as audit:
        record_eval(audit, row, [item for item, _, _ in plan.items])
    notes: list[str] = []
    for item, case, variant in plan.items:
        try:
            submit(request_for(plan, item, case, variant), settings, requested_by=by)
        except SubmitRefused as exc:
            notes.append(f"{item.run_id} ({case.name}, {variant.label}) was not queued: {exc}")
            with AuditStore(settings.audit_path) as audit:
                record_score(audit, item.run_id, False, [{"check": "queued", "passed": False, "detail": str(exc)}], {})
    if heal is not None:
        notes += heal(settings)
    return notes


def _recorded_tokens(audit: AuditStore, run_id: str) -> int:
    if not run_id:
        return 0
    run = audit.run(run_id) or {}
    return int(run.get("tokens_in") or 0) + int(run.get("tokens_out") or 0)
