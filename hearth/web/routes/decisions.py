"""A proposal reviewed and decided: its check's output, its diff, and accept or reject.

hearth never applies a proposal (hearth/evolve.py: only a branch is added to the config
checkout); accepting records that a person approved it and shows the commands that apply it, to run
by hand, and rejecting records that it should not be. A skill proposal (hearth/skills/learn.py) is
the exception: accepting it lands its SKILL.md in skills/, offered once its check passes. A proposal whose check did not pass cannot
be accepted; one that widens hearth's security needs the reviewer to say they read why. Each
proposal is decided once (the audit's `proposal_decisions`); the attempt, allowed or refused, is
also an `operator_actions` row.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field
from starlette.responses import HTMLResponse, RedirectResponse, Response

from agent.clock import utc_now
from hearth.audit import proposals as proposal_rows
from hearth.audit.store import AuditStore
from hearth.errors import HearthError
from hearth.evolve import Proposal, find_proposal
from hearth.run.diffs import diff_lines
from hearth.settings import Settings
from hearth.skills.learn import BRANCH, is_skill, land
from hearth.web.context import web_of
from hearth.web.routes.operate import record_action
from hearth.web.security import Identity, WebError, check_csrf, owner, viewer

router = APIRouter()
DECISIONS = ("accept", "reject")


class Decision(BaseModel):
    decision: str = Field(description="accept or reject")
    reason: str = Field("", max_length=2000, description="why, for the audit")
    security_read: bool = Field(False, description="for a proposal that widens security: its reasons were read")


def _proposal(settings: Settings, proposal_id: str) -> Proposal:
    found = find_proposal(settings, proposal_id) if settings.audit_path.exists() else None
    if found is None:
        raise WebError(404, f"no proposal {proposal_id[:80]!r} (or the prefix matches several); see /proposals")
    return found


def decision_of(settings: Settings, proposal_id: str) -> dict[str, Any] | None:
    with AuditStore(settings.audit_path) as audit:
        return proposal_rows.decision(audit, proposal_id)


def proposal_data(settings: Settings, proposal_id: str) -> dict[str, Any]:
    """The proposal (diff, check log, security reasons), its decision if any, and how to apply it."""
    proposal = _proposal(settings, proposal_id)
    return {
        "proposal": asdict(proposal),
        "decision": decision_of(settings, proposal.id),
        "apply": apply_commands(proposal),
    }


def apply_commands(proposal: Proposal) -> list[str]:
    """What a person runs to apply an accepted proposal (hearth runs none of it); a skill lands
    when accepted, and what follows is its check."""
    if is_skill(asdict(proposal)):
        return [f"hearth skills check {proposal.branch.removeprefix(BRANCH)}"]
    return [
        f"git -C {proposal.repo} diff {proposal.base_commit[:12]}..{proposal.branch}",
        f"git -C {proposal.repo} merge --ff-only {proposal.branch}",
        "sudo nixos-rebuild switch --flake .#  (from the config checkout, as you apply any change)",
    ]


def refusal(proposal: Proposal, decided: dict[str, Any] | None, choice: Decision) -> str | None:
    """Why this decision cannot be made, or None."""
    if choice.decision not in DECISIONS:
        return f"decision {choice.decision[:40]!r} is not accept or reject"
    if decided is not None:
        return f"proposal {proposal.id} was {decided['decision']} already, by {decided['decided_by']} at {decided['decided_at']}"
    if choice.decision == "accept" and not proposal.succeeded:
        return f"proposal {proposal.id} cannot be accepted: it is {proposal.status.replace('_', ' ')} (its check must pass)"
    if choice.decision == "accept" and proposal.security_flag and not choice.security_read:
        return "this proposal widens hearth's security: read its reasons and tick that you did, then accept"
    return None


def decide(settings: Settings, me: Identity, proposal_id: str, choice: Decision) -> dict[str, Any]:
    proposal = _proposal(settings, proposal_id)
    problem = refusal(proposal, decision_of(settings, proposal.id), choice)
    if problem:
        record_action(settings, me, "proposals", choice.decision[:40], proposal.id, ok=False, detail=problem)
        raise WebError(409, problem)
    if choice.decision == "accept" and is_skill(asdict(proposal)):
        try:
            land(settings, asdict(proposal))  # into skills/, before the decision: a failure decides nothing
        except HearthError as exc:
            record_action(settings, me, "proposals", "accept", proposal.id, ok=False, detail=str(exc))
            raise WebError(409, str(exc)) from None
    row = {
        "proposal_id": proposal.id,
        "decision": "accepted" if choice.decision == "accept" else "rejected",
        "decided_by": me.decider,
        "decided_at": utc_now(),
        "reason": choice.reason.strip(),
    }
    with AuditStore(settings.audit_path) as audit:
        proposal_rows.decide(audit, row)
    record_action(settings, me, "proposals", choice.decision, proposal.id, ok=True, detail=row["reason"])
    return {**row, "apply": apply_commands(proposal) if choice.decision == "accept" else []}


@router.get("/proposals/{proposal_id}", response_class=HTMLResponse, include_in_schema=False)
async def proposal_page(
    request: Request, proposal_id: str, error: str = "", me: Identity = Depends(viewer)
) -> HTMLResponse:
    data = await run_in_threadpool(proposal_data, web_of(request).config.settings, proposal_id)
    lines = diff_lines(data["proposal"]["diff"] or "")
    return web_of(request).pages.render(request, "proposal.html", **data, lines=lines, error=error[:500])


@router.post("/proposals/{proposal_id}/decide", include_in_schema=False, dependencies=[Depends(check_csrf)])
async def decide_page(request: Request, proposal_id: str, me: Identity = Depends(owner)) -> Response:
    form = await request.form()
    choice = Decision(
        decision=str(form.get("decision") or ""),
        reason=str(form.get("reason") or "")[:2000],
        security_read=form.get("security_read") == "yes",
    )
    settings = web_of(request).config.settings
    try:
        await run_in_threadpool(decide, settings, me, proposal_id, choice)
    except WebError as exc:
        if exc.status != 409:
            raise
        data = await run_in_threadpool(proposal_data, settings, proposal_id)
        lines = diff_lines(data["proposal"]["diff"] or "")
        return web_of(request).pages.render(
            request, "proposal.html", 409, **data, lines=lines, error=exc.reason, reason=choice.reason
        )
    return RedirectResponse(f"/proposals/{proposal_id}", status_code=303)


@router.get("/api/proposals/{proposal_id}", tags=["proposals"])
async def api_proposal(request: Request, proposal_id: str, me: Identity = Depends(viewer)) -> dict[str, Any]:
    """One proposal (as `hearth proposals ID --json`: diff and check log included), its decision
    if one was made, and the commands that apply it by hand."""
    return await run_in_threadpool(proposal_data, web_of(request).config.settings, proposal_id)


@router.post("/api/proposals/{proposal_id}/decision", tags=["proposals"], dependencies=[Depends(check_csrf)])
async def api_decide(
    request: Request, proposal_id: str, choice: Decision, me: Identity = Depends(owner)
) -> dict[str, Any]:
    """Accept or reject a proposal, once. 409 with the reason when it was decided already, when
    its check did not pass (accept), or when it widens security and `security_read` is not true."""
    return await run_in_threadpool(decide, web_of(request).config.settings, me, proposal_id, choice)
