"""Approvals: every pending call with its exact tool and arguments; Approve and Deny.

A decision goes through hearth/leash/decisions.py, the call `hearth approve` makes: it is bound
to the approval's call hash, recorded with who decided (`web:NAME`) and when, wakes the run, and a
decision on an approval already decided or expired is refused with the store's own words.

"Approve and always allow in PROFILE" is `hearth approve ID --always` (hearth/leash/rules.py):
offered only for a call a standing rule may cover; the page lists the standing rules, and an
operator can remove one.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import HTMLResponse, RedirectResponse, Response

from agent.clock import utc_now
from hearth.audit import approvals, runs
from hearth.audit.approvals import Approval, ApprovalClosed
from hearth.audit.store import AuditStore, Rows
from hearth.errors import NotFound
from hearth.leash import decisions, rules
from hearth.users.access import Forbidden
from hearth.web.context import error_response, web_of
from hearth.web.security import Identity, WebError, check_csrf, operator, owner, viewer

router = APIRouter()


class Decision(BaseModel):
    model_config = ConfigDict(extra="forbid")

    decision: str = Field(pattern="^(approve|deny)$", description="approve or deny")
    reason: str = Field("", max_length=2000, description="told to the model on a deny, and recorded")


def approvals_data(request: Request) -> dict[str, Any]:
    reader = web_of(request).reader
    pending = [{**row, "arguments_pretty": _pretty(row["arguments"])} for row in reader.pending_approvals(utc_now())]
    return {"pending": _with_always(reader, pending), "decided": reader.recent_decisions(30), "rules": _rules(reader)}


def _pretty(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
    except ValueError:
        return arguments


def decide(request: Request, approval_id: str, verdict: str, reason: str, me: Identity) -> Approval:
    """The one decision call (hearth/leash/decisions.py), as this person; WebError 404 / 409 in its words."""
    settings = web_of(request).config.settings
    if not settings.audit_path.exists():
        raise WebError(404, f"no approval with id {approval_id!r}: nothing has run yet")
    try:
        return decisions.decide(settings, approval_id, verdict, me, user=me.account, note=reason).approval
    except NotFound as exc:
        raise WebError(404, str(exc).replace("; see: hearth approvals", "")) from None
    except (ApprovalClosed, rules.RuleRefused) as exc:
        raise WebError(409, str(exc)) from None
    except Forbidden as exc:
        raise WebError(403, str(exc)) from None


@router.get("/approvals", response_class=HTMLResponse, include_in_schema=False)
def approvals_page(request: Request, decided: str = "", me: Identity = Depends(viewer)) -> HTMLResponse:
    return web_of(request).pages.render(request, "approvals.html", **approvals_data(request), just=decided)


@router.get("/fragments/approvals", response_class=HTMLResponse, include_in_schema=False)
def approvals_fragment(request: Request, me: Identity = Depends(viewer)) -> HTMLResponse:
    return web_of(request).pages.render(request, "_approvals.html", **approvals_data(request), just="")


@router.post("/approvals/{approval_id}/decide", include_in_schema=False, dependencies=[Depends(check_csrf)])
async def decide_page(request: Request, approval_id: str, me: Identity = Depends(operator)) -> Response:
    form = await request.form()
    verdict = "approve" if form.get("decision") == "approve" else "deny"
    reason = str(form.get("reason") or "")
    try:
        done = await run_in_threadpool(decide, request, approval_id, verdict, reason, me)
    except WebError as exc:
        return error_response(request, exc.status, exc.reason)
    return RedirectResponse(_back(str(form.get("back") or ""), done), status_code=303)


def _back(where: str, done: Approval) -> str:
    """Where a decision returns to: the page it was made on (a run's, the overview's map), else the
    approvals page; always one of these three paths, never a URL from the form."""
    if where == "run":
        return f"/runs/{quote(done.run_id, safe='')}?decided={quote(done.id, safe='')}"
    if where == "overview":
        return f"/?decided={quote(done.id, safe='')}"
    return f"/approvals?decided={done.id}"


def decided_line(reader: Rows, approval_id: str) -> str:
    """The confirmation a page shows after a decision: what was decided, by whom, and what follows."""
    a = approvals.row_of(reader, approval_id[:100]) if approval_id else None
    if a is None:
        return ""
    note = f" ({a['note']})" if a.get("note") else ""
    follows = (
        "the call runs and the run goes on" if a["status"] == "approved" else "the model is told, and the run goes on"
    )
    if a["status"] not in ("approved", "denied"):
        return f"Approval {a['id']} of {a['tool']} is {a['status']}."
    return f"{a['status'].capitalize()} {a['tool']} in run {a['run_id']} as {a['decided_by']}{note}: {follows}."


@router.get("/api/approvals", tags=["approvals"])
def api_approvals(request: Request, all: bool = False, me: Identity = Depends(viewer)) -> list[dict[str, Any]]:
    """Pending approvals (as `hearth approvals --json`), or with all=true the latest of any status."""
    data = approvals_data(request)
    rows = data["pending"] + (data["decided"] if all else [])
    return [{**_row(r), "arguments": json.loads(r["arguments"] or "{}")} for r in rows]


def _row(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in ("arguments_pretty", "goal")}


@router.post("/api/approvals/{approval_id}", tags=["approvals"], dependencies=[Depends(check_csrf)])
async def api_decide(
    request: Request, approval_id: str, body: Decision, me: Identity = Depends(operator)
) -> dict[str, Any]:
    """Approve or deny one pending approval: 404 unknown, 409 already decided or expired."""
    done = await run_in_threadpool(decide, request, approval_id, body.decision, body.reason, me)
    return {**asdict(done), "arguments": json.loads(done.arguments)}


# -- standing rules ---------------------------------------------------------------------------------
def _with_always(reader: Rows, pending: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each pending approval with its run's profile, and whether a standing rule may cover its call
    (`always`) or why not (`always_refused`)."""
    profiles = runs.agent_names(reader, [row["run_id"] for row in pending])
    shown = []
    for row in pending:
        try:
            covered, refused = rules.scope(row["tool"], json.loads(row["arguments"] or "{}")).shown(), ""
        except (rules.RuleRefused, ValueError) as exc:
            covered, refused = "", str(exc)
        profile = profiles.get(row["run_id"]) or "default"
        shown.append({**row, "profile": profile, "always": covered, "always_refused": refused})
    return shown


def _rules(reader: Rows) -> list[dict[str, Any]]:
    return [{**asdict(rule), "covers": rule.covers} for rule in rules.listing(reader)]


def remove_rule(request: Request, rule_id: str, me: Identity) -> rules.Rule:
    path = web_of(request).config.settings.audit_path
    if not path.exists():
        raise WebError(404, f"no standing rule with id {rule_id!r}: nothing has run yet")
    try:
        with AuditStore(path) as audit:
            return rules.remove(audit, rule_id, by=me.decider)
    except NotFound as exc:
        raise WebError(404, str(exc).replace("; see: hearth approvals rules", "")) from None
    except rules.RuleRefused as exc:
        raise WebError(409, str(exc)) from None


@router.post("/approvals/{approval_id}/always", include_in_schema=False, dependencies=[Depends(check_csrf)])
async def always_page(request: Request, approval_id: str, me: Identity = Depends(operator)) -> Response:
    try:
        done = await run_in_threadpool(decide, request, approval_id, "always", "", me)
    except WebError as exc:
        return error_response(request, exc.status, exc.reason)
    return RedirectResponse(f"/approvals?decided={done.id}", status_code=303)


@router.post("/approvals/rules/{rule_id}/remove", include_in_schema=False, dependencies=[Depends(check_csrf)])
async def remove_rule_page(request: Request, rule_id: str, me: Identity = Depends(owner)) -> Response:
    try:
        await run_in_threadpool(remove_rule, request, rule_id, me)
    except WebError as exc:
        return error_response(request, exc.status, exc.reason)
    return RedirectResponse("/approvals", status_code=303)


@router.get("/api/rules", tags=["approvals"])
def api_rules(request: Request, me: Identity = Depends(viewer)) -> list[dict[str, Any]]:
    """The standing rules in force (as `hearth approvals rules --json`)."""
    return [
        {**r, "arguments": json.loads(r["arguments"]) if r["arguments"] else None}
        for r in _rules(web_of(request).reader)
    ]


@router.post("/api/approvals/{approval_id}/always", tags=["approvals"], dependencies=[Depends(check_csrf)])
async def api_always(request: Request, approval_id: str, me: Identity = Depends(operator)) -> dict[str, Any]:
    """Approve one pending approval and make the standing rule for its run's profile from that call:
    404 unknown, 409 already decided, expired, or a call no rule may cover."""
    done = await run_in_threadpool(decide, request, approval_id, "always", "", me)
    return {**asdict(done), "arguments": json.loads(done.arguments)}


@router.post("/api/rules/{rule_id}/remove", tags=["approvals"], dependencies=[Depends(check_csrf)])
async def api_remove_rule(request: Request, rule_id: str, me: Identity = Depends(owner)) -> dict[str, Any]:
    """Remove a standing rule (its record stays): 404 unknown, 409 removed already."""
    rule = await run_in_threadpool(remove_rule, request, rule_id, me)
    return {**asdict(rule), "covers": rule.covers}
