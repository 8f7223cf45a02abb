"""What the audit says of a run that stopped before its end and may go on: the reads a sweep needs.

Two ways a run goes on in a new process (hearth/run/resume.py does it):

    waiting  a queued run suspended while an approval waited for a person (its process ended,
             its request stays in claimed/): it goes on once the approval is decided or expires;
             or while a child run it delegated to works (hearth/run/delegate.py): it goes on once
             the child has ended, however it ended;
    restart  a run recorded `running` whose process is gone (hearth, its unit or the machine
             stopped): it goes on once, from its last kept message; if it dies that way again it
             is settled `interrupted`, saying so.

A run goes on only if its conversation was kept (every run of hearth-loop's engine keeps it;
a marathon's or a swarm's holding run does not, and is settled as before), or it is a research
run, whose every step is recorded before it runs (hearth/research/journal.py): it goes on from its
record. This module only reads the audit: the spawner's sweep imports it without the engine.
"""

from __future__ import annotations

import json
from typing import Any

from agent.clock import utc_now
from hearth.audit import approvals, steps
from hearth.audit.approvals import Approval
from hearth.audit.store import AuditStore

SUSPEND = "suspend"  # the step a run records as it suspends (its detail: the approval, the time worked)
RESUME = "resume"  # the step a resumed run records first (its detail: why and from where)
CHILD_ENDED = "child ended"  # why a run that delegated goes on (hearth/run/delegate.py)
AGAIN = (
    "the run's process was gone again after it had been resumed once from a restart; "
    "it is not resumed a second time (see its `resume` step)"
)


def restarts(audit: AuditStore, run_id: str) -> int:
    """How many times the run has been resumed after its process was gone."""
    return sum(1 for row in steps.data_of(audit, run_id, RESUME) if step_data(row).get("cause") == "restart")


def suspended_on(audit: AuditStore, run_id: str) -> Approval | None:
    """The approval a `waiting` run suspended on (its last suspend step's), as it stands now."""
    rows = steps.data_of(audit, run_id, SUSPEND, latest=True)
    if not rows:
        return None
    found = approvals.row_of(audit, str(step_data(rows[0]).get("approval", "")))
    return approvals.from_row(found) if found else None


def waits_on_child(audit: AuditStore, run_id: str) -> str:
    """The child run a `waiting` run suspended on (its last suspend step's), or "" (an approval)."""
    rows = steps.data_of(audit, run_id, SUSPEND, latest=True)
    return str(step_data(rows[0]).get("child") or "") if rows else ""


def resumable(audit: AuditStore, run: dict[str, Any]) -> bool:
    """Whether a new process of the run can go on from what it recorded."""
    return run.get("kind") == "research" or steps.kept_conversation(audit, run["id"])


def ready(audit: AuditStore, run: dict[str, Any], now: str | None = None) -> str | None:
    """Why this run should be started again now ("approval decided", "approval expired",
    "child ended", "restart"), or None: it must wait (a pending approval), or it cannot go on."""
    if not resumable(audit, run):
        return None
    if run["status"] == "waiting" and (child := waits_on_child(audit, run["id"])):
        ended = audit.run(child)
        return CHILD_ENDED if ended is not None and ended["status"] not in ("running", "waiting") else None
    if run["status"] == "waiting":
        approval = suspended_on(audit, run["id"])
        if approval is None:
            return "approval lost"  # resumed, its call is asked again
        status = approval.status_at(now or utc_now())
        return None if status == "pending" else f"approval {status}"
    if run["status"] == "running" and restarts(audit, run["id"]) == 0:
        return "restart"
    return None


def step_data(row: dict[str, Any] | None) -> dict[str, Any]:
    """A step row's `data` JSON as a dict ({} for no row, no data, or data that is not an object)."""
    if not row:
        return {}
    try:
        data = json.loads(row.get("data") or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
