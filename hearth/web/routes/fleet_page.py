"""Fleet: a hub's workers as `hearth fleet list` shows them, the requests waiting in the broker for
one, and adding or removing a worker.

Read through the web's reader from the audit's `fleet_workers` and `fleet_runs` (an audit without
them reads as no fleet). Adding and removing are hearth/remote/hub.py's own `add_worker` and
`remove_worker`, as `hearth fleet add|rm` calls them. A new worker's token is in the answer to the
POST that made it and nowhere else: the audit keeps its SHA-256, `operator_actions` its name and
labels, and the answer is not kept by a browser (`no-store`, as every page) nor put in an address.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from hearth.audit import fleet
from hearth.audit.store import AuditStore
from hearth.dispatch.launchers import door_for
from hearth.errors import NotFound, UsageError
from hearth.fleet.config import waits
from hearth.remote import hub
from hearth.render import ago
from hearth.settings import Settings
from hearth.web.context import web_of
from hearth.web.reader import Reader
from hearth.web.routes.operate import recent_actions, record_action
from hearth.web.security import Identity, WebError, check_csrf, owner, viewer

router = APIRouter()
PILLS = {"up": "st-done", "lost": "st-failed", "never seen": "st-other"}


def fleet_data(settings: Settings, reader: Reader, now: float | None = None) -> dict[str, Any]:
    """As `hearth fleet list --json`, each worker with its runs' live states; the requests waiting in
    the broker with why (hearth/fleet/config.py's `waits`), and the redeliveries refused."""
    now = now or time.time()
    lost_s = hub.lost_after()
    found = hub.workers(reader)
    answering = [w for w in found if w.seen_within(lost_s, now)]
    waiting = [
        {**row, "waits": waits(row, answering), **_seen(row["sent_at"], now, "sent")} for row in fleet.waiting(reader)
    ]
    return {
        "hub": door_for(settings) is not None,
        "lost_after_s": lost_s,
        "workers": [_shown(w, now, lost_s) for w in found],
        "waiting": waiting,
        "refused": fleet.refused_total(reader),
    }


def _shown(worker: hub.Worker, now: float, lost_s: float) -> dict[str, Any]:
    up = worker.seen_within(lost_s, now)
    return {
        "name": worker.name,
        "labels": list(worker.labels),
        "up": up,
        "state": "up" if up else "never seen" if worker.seen_at is None else "lost",
        **_seen(worker.seen_at, now, "seen"),
        "models": list(worker.models),
        "runs": list(worker.states),
    }


def _seen(at: float | None, now: float, name: str) -> dict[str, Any]:
    """`{name}_at` (epoch seconds), `{name}_s_ago`, `{name}` for a person and `{name}_utc`."""
    if at is None:
        return {f"{name}_at": None, f"{name}_s_ago": None, name: "never", f"{name}_utc": ""}
    moment = datetime.fromtimestamp(at, UTC)
    shown = ago(moment.isoformat(), datetime.fromtimestamp(now, UTC))  # as every page says a time
    return {
        f"{name}_at": at,
        f"{name}_s_ago": round(now - at, 1),
        name: shown,
        f"{name}_utc": moment.strftime("%Y-%m-%d %H:%M:%S"),
    }


def labels_of(text: str) -> list[str]:
    """`gpu, big` -> ["gpu", "big"]: comma-separated, blanks dropped (hub.add_worker checks each)."""
    return [part.strip() for part in text.split(",") if part.strip()]


def add(settings: Settings, me: Identity, name: str, labels: list[str]) -> str:
    """hub.add_worker, recorded (the refusal too); its token, for the one answer that shows it."""
    said = f"labels: {', '.join(labels)}" if labels else "no labels"
    try:
        with _audit(settings) as audit:
            token = hub.add_worker(audit, name, labels, me.decider)
    except UsageError as exc:
        record_action(settings, me, "fleet", "add", name, ok=False, detail=str(exc))
        raise
    record_action(settings, me, "fleet", "add", name, ok=True, detail=said)
    return token


def remove(settings: Settings, me: Identity, name: str) -> None:
    """hub.remove_worker, recorded: its token is refused from now on. WebError(404) for no such worker."""
    try:
        with _audit(settings) as audit:
            hub.remove_worker(audit, name)
    except NotFound as exc:
        record_action(settings, me, "fleet", "remove", name, ok=False, detail=str(exc))
        raise WebError(404, str(exc)) from None
    record_action(settings, me, "fleet", "remove", name, ok=True, detail="its token is refused from now on")


def _audit(settings: Settings) -> AuditStore:
    settings.audit_path.parent.mkdir(parents=True, exist_ok=True)
    return AuditStore(settings.audit_path)


# -- pages ------------------------------------------------------------------------------------------
async def _page(request: Request, code: int = 200, **more: Any) -> HTMLResponse:
    web = web_of(request)
    data = await run_in_threadpool(fleet_data, web.config.settings, web.reader)
    context = {"error": "", "form": {}, "removed": "", **more}
    counts = {"up": sum(w["up"] for w in data["workers"]), "running": sum(len(w["runs"]) for w in data["workers"])}
    changes = recent_actions(request, "fleet")
    return web.pages.render(request, "fleet.html", code, **data, **counts, pills=PILLS, changes=changes, **context)


@router.get("/operate/fleet", response_class=HTMLResponse, include_in_schema=False)
async def fleet_page(request: Request, removed: str = "", me: Identity = Depends(viewer)) -> HTMLResponse:
    return await _page(request, removed=removed[:63])


@router.post("/operate/fleet/add", include_in_schema=False, dependencies=[Depends(check_csrf)])
async def add_submit(request: Request, me: Identity = Depends(owner)) -> Response:
    form = {k: v for k, v in (await request.form()).items() if k in ("name", "labels") and isinstance(v, str)}
    name, labels = form.get("name", "").strip()[:200], labels_of(form.get("labels", "")[:2000])
    try:
        token = await run_in_threadpool(add, web_of(request).config.settings, me, name, labels)
    except UsageError as exc:
        return await _page(request, 422, error=str(exc), form=form)
    return web_of(request).pages.render(request, "fleet_added.html", name=name, labels=labels, token=token)


@router.post("/operate/fleet/{name}/remove", include_in_schema=False, dependencies=[Depends(check_csrf)])
async def remove_submit(request: Request, name: str, me: Identity = Depends(owner)) -> Response:
    await run_in_threadpool(remove, web_of(request).config.settings, me, name)
    return RedirectResponse(f"/operate/fleet?removed={name}", status_code=303)


# -- the API ----------------------------------------------------------------------------------------
@router.get("/api/fleet", tags=["fleet"])
async def api_fleet(request: Request, me: Identity = Depends(viewer)) -> dict[str, Any]:
    """A hub's workers (as `hearth fleet list --json`: labels, up, seen_s_ago, models) with their runs'
    live states; `waiting` the requests in the broker no worker took yet, each with why (`waits`);
    `refused` the redeliveries refused (a request handed out again is never run twice); `hub` whether
    this box sends its requests to workers (its launcher runs them on other machines)."""
    web = web_of(request)
    return await run_in_threadpool(fleet_data, web.config.settings, web.reader)


@router.post("/api/fleet/workers", tags=["fleet"], dependencies=[Depends(check_csrf)])
async def api_add(request: Request, me: Identity = Depends(owner)) -> Response:
    """Add a worker, as `hearth fleet add NAME --label L --json`: 201 {name, labels, token}, the token
    shown this once (the hub keeps its SHA-256); 422 {error} for a bad or taken name or label."""
    try:
        body = await request.json()
    except ValueError:
        raise WebError(400, "malformed request body: not valid JSON") from None
    labels = body.get("labels", []) if isinstance(body, dict) else None
    if not isinstance(body, dict) or not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
        raise WebError(400, 'the body must be an object: {"name": "gpu1", "labels": ["gpu"]}')
    name = str(body.get("name") or "")[:200]
    try:
        token = await run_in_threadpool(add, web_of(request).config.settings, me, name, labels)
    except UsageError as exc:
        return JSONResponse({"error": str(exc)}, status_code=422)
    return JSONResponse({"name": name, "labels": labels, "token": token}, status_code=201)


@router.post("/api/fleet/workers/{name}/remove", tags=["fleet"], dependencies=[Depends(check_csrf)])
async def api_remove(request: Request, name: str, me: Identity = Depends(owner)) -> dict[str, str]:
    """Remove a worker, as `hearth fleet rm NAME --json`: its token is refused from now on; 404 unknown."""
    await run_in_threadpool(remove, web_of(request).config.settings, me, name)
    return {"removed": name}
