"""The overview: the live map of active runs, the queue, pending approvals, today's totals."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse

from agent.clock import utc_now
from hearth.dispatch.pause import pause, resume
from hearth.web.context import web_of
from hearth.web.live import snapshot
from hearth.web.routes.approvals import decided_line
from hearth.web.security import Identity, acting, check_csrf, operator, viewer

router = APIRouter()


def overview_data(request: Request) -> dict[str, Any]:
    web = web_of(request)
    state = snapshot(web.config, web.reader)
    by_run: dict[str, list[dict[str, Any]]] = {}
    for approval in web.reader.pending_approvals(utc_now()):  # decided on the run's card
        by_run.setdefault(approval["run_id"], []).append(approval)
    return {**state, "recent": with_live(web.reader.recent(10), state["active"]), "asking": by_run}


def with_live(recent: list[dict[str, Any]], active: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The recent runs with what the live map knows of those going now: a row says `running`, with
    no numbers, until its run ends, while its card beside it waits for a person at iteration 3."""
    live = {run["id"]: run for run in active}
    out = []
    for row in recent:
        run = live.get(row["id"])
        numbers = (run or {}).get("numbers") or {}
        if run is not None:
            row = {**row, "status": run.get("state") or row["status"]}
            row |= {key: numbers[key] for key in ("tokens_in", "tokens_out") if key in numbers}
            row["iterations"] = numbers.get("iteration", row.get("iterations"))
        out.append(row)
    return out


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def overview_page(request: Request, decided: str = "", me: Identity = Depends(viewer)) -> HTMLResponse:
    line = decided_line(web_of(request).reader, decided)
    return web_of(request).pages.render(request, "overview.html", **overview_data(request), decided=line)


@router.get("/fragments/overview", response_class=HTMLResponse, include_in_schema=False)
def overview_fragment(request: Request, me: Identity = Depends(viewer)) -> HTMLResponse:
    return web_of(request).pages.render(request, "_overview.html", **overview_data(request))


@router.get("/api/state", tags=["runs"])
def api_state(request: Request, me: Identity = Depends(viewer)) -> dict[str, Any]:
    """What runs now (as `hearth state --json`), plus pending approvals and today's runs and tokens."""
    web = web_of(request)
    return snapshot(web.config, web.reader)


@router.get("/api/queue", tags=["runs"])
def api_queue(request: Request, me: Identity = Depends(viewer)) -> dict[str, Any]:
    """Requests waiting at the top of the queue (how many, and the first of their names: at most
    100 however full it is), and the claimed ones (starting or running)."""
    state = snapshot(web_of(request).config, web_of(request).reader)
    claimed = [run["id"] for run in state["active"] if run.get("queued")]
    return {"queued": state["queued"], "queued_count": state["queued_count"], "claimed": claimed}


@router.get("/api/events", tags=["runs"], response_class=StreamingResponse)
async def api_events(request: Request, me: Identity = Depends(viewer)) -> StreamingResponse:
    """Server-sent events: `state` (the /api/state shape, with a version) now and at every change."""
    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return StreamingResponse(web_of(request).live.stream(), media_type="text/event-stream", headers=headers)


def pauser(request: Request) -> Identity:
    """Pausing holds every profile's runs: `pause` in every profile (hearth/users/access.py)."""
    me = operator(request)
    acting(me, "pause", "*")
    return me


@router.post("/pause", include_in_schema=False, dependencies=[Depends(check_csrf)])
async def pause_page(request: Request, me: Identity = Depends(pauser)) -> Response:
    await run_in_threadpool(pause, web_of(request).config.settings, by=me.decider)
    return RedirectResponse("/", status_code=303)


@router.post("/resume", include_in_schema=False, dependencies=[Depends(check_csrf)])
async def resume_page(request: Request, me: Identity = Depends(pauser)) -> Response:
    await run_in_threadpool(resume, web_of(request).config.settings)
    return RedirectResponse("/", status_code=303)


@router.post("/api/pause", tags=["runs"], dependencies=[Depends(check_csrf)])
async def api_pause(request: Request, me: Identity = Depends(pauser)) -> dict[str, Any]:
    """Pause hearth (as `hearth pause`): nothing new starts, requests wait in the queue. The pause in force."""
    held = await run_in_threadpool(pause, web_of(request).config.settings, by=me.decider)
    return {"paused": {**vars(held), "line": held.line()}}


@router.post("/api/resume", tags=["runs"], dependencies=[Depends(check_csrf)])
async def api_resume(request: Request, me: Identity = Depends(pauser)) -> dict[str, Any]:
    """Resume (as `hearth resume`): waiting requests start. The pause that was in force, or null."""
    was = await run_in_threadpool(resume, web_of(request).config.settings)
    return {"was": {**vars(was), "line": was.line()} if was else None}
