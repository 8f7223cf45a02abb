"""A research run on its run page: its plan as it stands (and the form that edits it while its
approval waits), and its report rendered from the record (hearth/research/report.py), never from
the summary's Markdown. The plan is approved or denied as any approval is, on the same page.

    GET  /api/runs/{id}/research   the plan's revisions, the approval it waits on, the report
    POST /runs/{id}/plan           the page's edit form (plan JSON, note); the run page next
    POST /api/runs/{id}/plan       {"plan": {...}, "note": "..."} -> {run, revision, by}
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, RedirectResponse, Response

from hearth.errors import NotFound, UsageError
from hearth.queue.intake import RequestRefused, load_json
from hearth.research import plan as plans
from hearth.users.access import Forbidden
from hearth.web.context import web_of
from hearth.web.research import research_data
from hearth.web.routes.runs import checked_id
from hearth.web.security import Identity, WebError, check_csrf, operator, viewer

router = APIRouter()
MAX_PLAN_CHARS = 20_000


@router.get("/api/runs/{run_id}/research", tags=["runs"])
def api_research(request: Request, run_id: str, me: Identity = Depends(viewer)) -> dict[str, Any]:
    """A research run's plan (every revision, who made it), the approval it waits on, its report."""
    run = web_of(request).reader.run(checked_id(run_id))
    found = research_data(request, run) if run else None
    if found is None:
        raise WebError(404, f"no research run with id {run_id[:80]!r}; see /runs")
    report = found["report"]
    return {**found, "report": dataclasses.asdict(report) if report else None}


def _revise(request: Request, run_id: str, text: str, note: str, me: Identity) -> dict[str, Any]:
    """The operator's revision; WebError saying why there is none."""
    if len(text) > MAX_PLAN_CHARS:
        raise WebError(413, f"the plan is {len(text):,} characters; at most {MAX_PLAN_CHARS:,}")
    try:
        settings = web_of(request).config.settings
        revision = plans.revise(settings, run_id, plans.parsed(text), me.decider, note, user=me.account)
    except Forbidden as exc:
        raise WebError(403, str(exc)) from None
    except NotFound as exc:
        raise WebError(404, str(exc)) from None
    except UsageError as exc:
        raise WebError(409 if "not waiting" in str(exc) else 422, str(exc)) from None
    return {"run": run_id, "revision": revision, "by": me.decider}


@router.post("/runs/{run_id}/plan", include_in_schema=False, dependencies=[Depends(check_csrf)])
async def plan_submit(request: Request, run_id: str, me: Identity = Depends(operator)) -> Response:
    form = await request.form()
    text, note = str(form.get("plan") or ""), str(form.get("note") or "")
    done = await run_in_threadpool(_revise, request, checked_id(run_id), text, note, me)
    return RedirectResponse(f"/runs/{run_id}?edited={done['revision']}#research-plan", status_code=303)


@router.post("/api/runs/{run_id}/plan", tags=["runs"], dependencies=[Depends(check_csrf)])
async def api_plan(request: Request, run_id: str, me: Identity = Depends(operator)) -> Response:
    """Replace a research run's plan while its approval waits: {"plan": {"sub_questions": [...]},
    "note": "why"}. 200 {run, revision, by}; 404 no such research run; 403 not yours to decide; 409 its plan no
    longer waits; 422 a plan that is not valid (the reason)."""
    try:
        body = load_json(await request.body())
    except RequestRefused as exc:
        raise WebError(400, f"malformed request body: {exc}") from None
    if not isinstance(body, dict) or not isinstance(body.get("plan"), dict):
        raise WebError(422, 'the body must be {"plan": {"sub_questions": [...]}, "note": "..."}')
    text, note = json.dumps(body["plan"]), str(body.get("note") or "")
    return JSONResponse(await run_in_threadpool(_revise, request, checked_id(run_id), text, note, me))
