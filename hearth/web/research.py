"""What the run page shows of a research run: its plan's revisions, the approval the plan waits
on (with the plan as JSON for the edit form), and its report built from the record once the
synthesis kept claims. Read through the command center's read-only connection."""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request

from hearth.audit import approvals, research
from hearth.research import plan as plans
from hearth.research.report import build
from hearth.web.context import web_of


def research_data(request: Request, run: dict[str, Any]) -> dict[str, Any] | None:
    """What the run page shows of a research run (None for any other run)."""
    if run.get("kind") != "research":
        return None
    reader = web_of(request).reader
    revisions = plans.shown_plans(research.plans(reader, run["id"]))
    asked = [a for a in approvals.of_run(reader, run["id"]) if a["tool"] == plans.TOOL]
    pending = next((a for a in asked if a["status"] == "pending"), None)
    ended = bool(run.get("ended_at")) and run.get("status") != "waiting"
    report = build(reader, run["id"]) if ended or research.claims(reader, run["id"]) else None
    plan_text = json.dumps(revisions[-1]["plan"], indent=2, ensure_ascii=False) if revisions else ""
    return {"revisions": revisions, "pending": pending, "report": report, "plan_text": plan_text}
