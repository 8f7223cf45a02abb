"""Runs: the list (filters, goal search, pages of 50), one run step by step, Stop, and a steer
(hearth/dispatch/steer.py, the CLI's one function: a working run's page has the form for whoever
may approve its calls, and the text is recorded as from `web:USER`)."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, RedirectResponse, Response

from agent.model.backends import probe
from agent.steer import Steer
from hearth.dispatch.pause import paused
from hearth.dispatch.steer import SteerRefused, give_as
from hearth.dispatch.stop import NotRunning, StopFailed, Stopped, run_profile, stop_all_as, stop_as
from hearth.errors import NotFound, UsageError
from hearth.ids import ID_PATTERN
from hearth.queue.directory import Queue
from hearth.render import network_words
from hearth.report import parse_since
from hearth.run.diffs import checkpoint_range, diff_lines, history_of, workspace_diff
from hearth.run.steers import SteerBox, steers_dir
from hearth.users.access import Forbidden
from hearth.web.context import web_of
from hearth.web.live import budget_of
from hearth.web.numbers import live_numbers
from hearth.web.reader import COUNT_CAP, PAGE_SIZE, RunFilter
from hearth.web.research import research_data
from hearth.web.routes.approvals import decided_line
from hearth.web.security import Identity, WebError, check_csrf, operator, viewer
from hearth.web.steps import LIVE_STATUSES, shown_steps

router = APIRouter()
STEP_CHARS = 20_000  # of each step's arguments, output and detail on a page; /api has them whole


def checked_id(run_id: str) -> str:
    """A run id as the queue allows them; anything else names no run (and never a path)."""
    if not re.fullmatch(ID_PATTERN, run_id) and not re.fullmatch(r"[0-9T]{15}-[0-9a-f]{6}", run_id):
        raise WebError(404, f"no run with id {run_id[:80]!r}; see /runs")
    return run_id


def run_filter(
    status: str = "", agent: str = "", model: str = "", source: str = "", since: str = "", q: str = ""
) -> RunFilter:
    try:
        moment = parse_since(since) if since else None
    except UsageError as exc:
        raise WebError(400, str(exc).replace("--since", "since")) from None
    return RunFilter(status=status, agent_name=agent, model=model, source=source, since=moment, q=q[:200])


def runs_data(request: Request, where: RunFilter, page: int) -> dict[str, Any]:
    rows, total = web_of(request).reader.runs_page(where, page)
    more = total > COUNT_CAP  # counted no further: `total` and `pages` are then lower bounds
    shown = COUNT_CAP if more else total
    return {
        "runs": rows,
        "total": shown,
        "total_is_lower_bound": more,
        "page": page,
        "pages": max(page + 1 if more and len(rows) == PAGE_SIZE else 1, math.ceil(shown / PAGE_SIZE)),
        "per_page": PAGE_SIZE,
    }


@router.get("/runs", response_class=HTMLResponse, include_in_schema=False)
def runs_page(
    request: Request, page: int = 1, where: RunFilter = Depends(run_filter), me: Identity = Depends(viewer)
) -> HTMLResponse:
    data = runs_data(request, where, max(1, page))
    query = {k: v for k, v in request.query_params.items() if k != "page" and v}
    choices = web_of(request).reader.choices()
    return web_of(request).pages.render(request, "runs.html", **data, query=query, choices=choices)


@router.get("/api/runs", tags=["runs"])
def api_runs(
    request: Request, page: int = 1, where: RunFilter = Depends(run_filter), me: Identity = Depends(viewer)
) -> dict[str, Any]:
    """Runs newest first, 50 a page: filter by status, agent, model, source, since (7d, a date); q searches goals.
    Matches are counted up to 10,000: past it `total` is 10,000 and `total_is_lower_bound` is true."""
    return runs_data(request, where, max(1, page))


def run_data(request: Request, run_id: str, step_cap: int | None = None) -> dict[str, Any]:
    """One run as `hearth show --json` prints it, plus its approvals and links; or where its request waits.
    A page passes `step_cap`: each step's text cut to that many characters (the whole is a link away)."""
    reader = web_of(request).reader
    run = reader.run(checked_id(run_id))
    if run is None:
        return _waiting(request, run_id)
    checkpoints = reader.checkpoints(run_id)
    return {
        "run": run,
        "steps": reader.steps(run_id, step_cap),
        "checkpoints": checkpoints,
        "approvals": reader.approvals_of(run_id),
        "links": reader.links(run),
        "compare": checkpoint_range(checkpoints),
    }


def _waiting(request: Request, run_id: str) -> dict[str, Any]:
    queue = Queue(web_of(request).config.settings.queue_dir)
    where = "queued" if (queue.root / f"{run_id}.json").exists() else queue.known(run_id)
    if where not in ("queued", "claimed"):
        raise WebError(404, f"no run with id {run_id!r}; see /runs")
    run = {"id": run_id, "status": "queued" if where == "queued" else "starting", "goal": _queued_goal(queue, run_id)}
    return {"run": run, "steps": [], "checkpoints": [], "approvals": [], "links": {}, "compare": None}


def _queued_goal(queue: Queue, run_id: str) -> str:
    """The goal of a request still in the queue (or claimed, not yet started): what a person launched."""
    for path in (queue.root / f"{run_id}.json", queue.claimed / f"{run_id}.json"):
        try:
            goal = json.loads(path.read_text()).get("goal")
        except (OSError, ValueError, AttributeError):
            continue
        return goal if isinstance(goal, str) else ""
    return ""


@router.get("/runs/{run_id}", response_class=HTMLResponse, include_in_schema=False)
def run_page(
    request: Request,
    run_id: str,
    decided: str = "",
    edited: int = 0,
    steered: int = 0,
    me: Identity = Depends(viewer),
) -> HTMLResponse:
    data = _steering(request, _with_diff(request, run_data(request, run_id, STEP_CHARS)), me)
    line = decided_line(web_of(request).reader, decided)
    return web_of(request).pages.render(
        request, "run.html", **data, step_cap=STEP_CHARS, decided=line, edited=max(0, edited), steered=steered
    )


@router.get("/fragments/runs/{run_id}", response_class=HTMLResponse, include_in_schema=False)
def run_fragment(request: Request, run_id: str, me: Identity = Depends(viewer)) -> HTMLResponse:
    data = _steering(request, _with_diff(request, run_data(request, run_id, STEP_CHARS)), me)
    return web_of(request).pages.render(request, "_run.html", **data, step_cap=STEP_CHARS)


def _steering(request: Request, data: dict[str, Any], me: Identity) -> dict[str, Any]:
    """Whether this person gets the steer form (a working run, `approve` in its profile), and the
    steers its model has not read yet."""
    if not data["live"]:
        return {**data, "steer_form": False, "steers_waiting": []}
    settings = web_of(request).config.settings
    run_id = data["run"]["id"]
    allowed = me.account.may("approve", data["run"].get("agent_name") or run_profile(settings, run_id))
    return {**data, "steer_form": allowed, "steers_waiting": SteerBox(steers_dir(settings, run_id)).pending()}


def _with_diff(request: Request, data: dict[str, Any]) -> dict[str, Any]:
    """What a page adds to a run's data: its steps as a person reads them (hearth.web.steps), its
    numbers so far while it is live (its row has them only once it ends), and the diff once it ended."""
    run, compare = data["run"], data["compare"]
    live = run["status"] in LIVE_STATUSES
    web = web_of(request)
    page = {
        **data,
        "steps": shown_steps(data["steps"], data["approvals"], live),
        "live": live,
        "numbers": None,
        "live_state": None,
        "paused": None,
        "network": _network(run),
        "follow_up": follow_up_refused(web.config.settings.model_host, run) if not live else None,
        "research": research_data(request, run),
    }
    if live:
        # the row says `running` all run long; the live map knows it thinks, runs a tool or waits
        active = {r.get("id"): r for r in web.live.current.get("active") or []}
        page["live_state"] = (active.get(run["id"]) or {}).get("state")
    if live and run.get("started_at"):
        page["numbers"] = live_numbers(web.reader, run["id"], budget=budget_of(web.config), agent=run["agent_name"])
    if run["status"] == "queued":
        page["paused"] = paused(web.config.settings)
    if compare is None or live:
        return {**page, "diff": None}
    before, after = compare
    history = history_of(data["checkpoints"])
    text = workspace_diff(web.config.settings, run.get("workspace") or "", before, after, history)
    return {**page, "diff": diff_lines(text)}


def _network(run: dict[str, Any]) -> str:
    """What the run's commands and web tools could reach, as `hearth show` says it."""
    if not run.get("hearth_version"):
        return ""  # recorded before runs kept their allowances
    try:
        egress = json.loads(run.get("egress") or "[]")
    except ValueError:
        egress = []
    return network_words(bool(run.get("network")), [str(h) for h in egress])


def follow_up_refused(model_host: str, run: dict[str, Any]) -> str | None:
    """Why no follow-up is offered, or None when it is: a follow-up of a run whose model is missing
    would ask the same missing model (its request names it, or the same choice picks it again)."""
    if run.get("status") != "model_unavailable":
        return None
    model = run.get("model") or "its model"
    if run.get("model") and run["model"] in (probe(model_host, timeout_s=1.0) or []):
        return None  # pulled since: a follow-up can run now
    return (
        f"A follow-up would ask {model} again, which the model server did not have: pull it "
        f"(ollama pull {model}) or launch a new run with another model."
    )


@router.get("/api/runs/{run_id}", tags=["runs"])
def api_run(request: Request, run_id: str, diff: bool = False, me: Identity = Depends(viewer)) -> dict[str, Any]:
    """One run with its steps and checkpoints (`hearth show --json`); `diff=true` adds the workspace diff."""
    data = run_data(request, run_id)
    if diff and data["compare"]:
        before, after = data["compare"]
        history = history_of(data["checkpoints"])
        data["diff"] = workspace_diff(
            web_of(request).config.settings, data["run"].get("workspace") or "", before, after, history
        )
    return data


@router.get("/api/runs/{run_id}/steps/{seq}", tags=["runs"])
def api_step(request: Request, run_id: str, seq: int, me: Identity = Depends(viewer)) -> dict[str, Any]:
    """One step of a run, whole (a run page shows at most the first 20,000 characters of each text)."""
    step = web_of(request).reader.step(checked_id(run_id), seq)
    if step is None:
        raise WebError(404, f"run {run_id!r} has no step {seq}; see /api/runs/{run_id}")
    return step


async def _stop(request: Request, run_id: str, me: Identity) -> Stopped:
    try:
        settings = web_of(request).config.settings
        return await run_in_threadpool(stop_as, settings, checked_id(run_id), me.account, by=me.decider)
    except Forbidden as exc:
        raise WebError(403, str(exc)) from None
    except NotFound as exc:
        raise WebError(404, str(exc)) from None
    except NotRunning as exc:
        raise WebError(409, str(exc)) from None
    except StopFailed as exc:
        raise WebError(503, str(exc)) from None


@router.post("/runs/{run_id}/stop", include_in_schema=False, dependencies=[Depends(check_csrf)])
async def stop_page(request: Request, run_id: str, me: Identity = Depends(operator)) -> Response:
    await _stop(request, run_id, me)
    return RedirectResponse(f"/runs/{run_id}", status_code=303)


@router.post("/api/runs/{run_id}/stop", tags=["runs"], dependencies=[Depends(check_csrf)])
async def api_stop(request: Request, run_id: str, me: Identity = Depends(operator)) -> dict[str, Any]:
    """Stop one run (recorded `interrupted`, by you); its pending approvals are cancelled."""
    return vars(await _stop(request, run_id, me))


async def _steer(request: Request, run_id: str, me: Identity, text: str) -> Steer:
    try:
        settings = web_of(request).config.settings
        return await run_in_threadpool(give_as, settings, checked_id(run_id), me.account, text, by=me.decider)
    except Forbidden as exc:
        raise WebError(403, str(exc)) from None
    except NotFound as exc:
        raise WebError(404, str(exc)) from None
    except SteerRefused as exc:
        raise WebError(409, str(exc)) from None
    except UsageError as exc:
        raise WebError(400, str(exc)) from None


@router.post("/runs/{run_id}/steer", include_in_schema=False, dependencies=[Depends(check_csrf)])
async def steer_page(request: Request, run_id: str, me: Identity = Depends(operator)) -> Response:
    """The run page's steer form; the page next, saying the steer waits for the next tool result."""
    text = (await request.form()).get("text")
    await _steer(request, run_id, me, text if isinstance(text, str) else "")
    return RedirectResponse(f"/runs/{run_id}?steered=1", status_code=303)


@router.post("/api/runs/{run_id}/steer", tags=["runs"], dependencies=[Depends(check_csrf)])
async def api_steer(request: Request, run_id: str, me: Identity = Depends(operator)) -> dict[str, Any]:
    """Tell a working run something: `{"text": ...}` (at most 4,000 characters), read by its model
    after the next tool result and recorded as a steer step from you. 403 without `approve` in its
    profile, 404 no such run, 409 a run that has ended, 400 an empty or oversize text."""
    try:
        body = json.loads(await request.body() or b"{}")
    except ValueError:
        raise WebError(400, 'the body is not JSON; send {"text": "..."}') from None
    text = body.get("text") if isinstance(body, dict) else None
    given = await _steer(request, run_id, me, text if isinstance(text, str) else "")
    return {"run_id": run_id, "by": given.by, "at": given.at, "text": given.text}


async def _stop_all(request: Request, me: Identity) -> list[Stopped]:
    try:
        return await run_in_threadpool(stop_all_as, web_of(request).config.settings, me.account, by=me.decider)
    except Forbidden as exc:
        raise WebError(403, str(exc)) from None


@router.post("/stop-all", include_in_schema=False, dependencies=[Depends(check_csrf)])
async def stop_all_page(request: Request, me: Identity = Depends(operator)) -> Response:
    await _stop_all(request, me)
    return RedirectResponse("/", status_code=303)


@router.post("/api/stop-all", tags=["runs"], dependencies=[Depends(check_csrf)])
async def api_stop_all(request: Request, me: Identity = Depends(operator)) -> dict[str, Any]:
    """Stop every claimed or running run; what became of each."""
    return {"stopped": [vars(s) for s in await _stop_all(request, me)]}
