"""`/fleet` on the hub's `hearth serve`: where workers send their runs' events and ask what to do.

Every call carries the worker's token (`Authorization: Bearer hw-...`, from `hearth fleet add`),
the Host the command center answers to, and JSON; hearth/fleet/hub.py does the work on the audit:

    POST /fleet/claim       {"run_id"}                  -> {"go": run | resume | drop, ...}
    POST /fleet/heartbeat   {"models", "running"}       -> {"stop": {run_id: why}, "paused": ...}
    POST /fleet/events      {"events": [{id, event}]}   -> {"written", "skipped"}; 4xx names the one refused
    GET  /fleet/approvals/ID                            -> the approval as the hub holds it

A run's last event (RunFinished) places its request here at once, as a local run's end does.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from starlette.responses import JSONResponse, Response

from hearth.audit.store import AuditStore
from hearth.fleet import hub

if TYPE_CHECKING:
    from hearth.web.context import Web

MAX_EVENTS = 500


def fleet_app(web: Web) -> FastAPI:
    from hearth.web.live import budget_of  # the hub's budgets count every box's runs
    from hearth.web.security import HEADERS

    settings = web.config.settings
    app = FastAPI(title="hearth /fleet", docs_url=None, redoc_url=None, openapi_url=None)

    kept = threading.local()

    def store() -> AuditStore:
        """The audit through one connection per thread of the pool the calls run in (a worker calls
        several times a second; opening the file for each was a good part of the hub's work)."""
        audit: AuditStore | None = getattr(kept, "audit", None)
        if audit is None:
            audit = kept.audit = AuditStore(settings.audit_path)
        return audit

    def call(request_headers: dict[str, str], work: Any) -> tuple[int, dict[str, Any]]:
        try:
            audit = store()
            worker = hub.identify(audit, request_headers.get("authorization", ""))
            return 200, work(audit, worker)
        except hub.WorkerRefused as exc:
            body: dict[str, Any] = {"error": str(exc)}
            if exc.index is not None:
                body["index"] = exc.index
            return exc.status, body

    async def answer(request: Request, work: Any) -> Response:
        host = request.headers.get("host", "").lower()
        if host not in web.config.allowed_hosts:
            status, body = (
                400,
                {"error": f"Host {host!r} is not one this server answers to (hearth serve --allowed-host)"},
            )
        else:
            status, body = await asyncio.to_thread(call, dict(request.headers), work)
        return JSONResponse(body, status_code=status, headers={**HEADERS, "Cache-Control": "no-store"})

    async def body_of(request: Request) -> dict[str, Any]:
        try:
            found = await request.json()
        except ValueError:
            found = None
        if not isinstance(found, dict):
            raise hub.WorkerRefused(400, "the body must be a JSON object")
        return found

    async def guarded(request: Request, work: Any) -> Response:
        try:
            found = await body_of(request)
        except hub.WorkerRefused as exc:
            return JSONResponse({"error": str(exc)}, status_code=exc.status, headers=HEADERS)
        return await answer(request, lambda audit, worker: work(audit, worker, found))

    @app.post("/fleet/claim")
    async def claim(request: Request) -> Response:
        def work(audit: AuditStore, worker: hub.Worker, body: dict[str, Any]) -> dict[str, Any]:
            return hub.claim(audit, worker, str(body.get("run_id")), paused=_paused(settings))

        return await guarded(request, work)

    @app.post("/fleet/heartbeat")
    async def heartbeat(request: Request) -> Response:
        def work(audit: AuditStore, worker: hub.Worker, body: dict[str, Any]) -> dict[str, Any]:
            models, running = body.get("models"), body.get("running")
            if not isinstance(models, list) or not isinstance(running, list):
                raise hub.WorkerRefused(400, "a heartbeat is {models: [...], running: [...]}")
            answer = hub.heartbeat(audit, worker, models, running, budget=budget_of(web.config))
            return {**answer, "paused": _paused(settings)}

        return await guarded(request, work)

    @app.post("/fleet/events")
    async def events(request: Request) -> Response:
        def work(audit: AuditStore, worker: hub.Worker, body: dict[str, Any]) -> dict[str, Any]:
            batch = body.get("events")
            if not isinstance(batch, list) or len(batch) > MAX_EVENTS:
                raise hub.WorkerRefused(400, f"events must be a list of at most {MAX_EVENTS}")
            done = hub.accept(audit, worker, batch)
            for row in done.pop("asked"):
                _asked(settings, row)
            for run_id in done.pop("finished"):
                _place(settings, audit, run_id)
            return done

        return await guarded(request, work)

    @app.get("/fleet/approvals/{approval_id}")
    async def approval(request: Request, approval_id: str) -> Response:
        return await answer(request, lambda audit, worker: hub.approval(audit, worker, approval_id))

    return app


def _paused(settings: Any) -> bool:
    from hearth.dispatch.pause import paused

    return paused(settings) is not None


def _asked(settings: Any, row: dict[str, Any]) -> None:
    """A remote run waits for a person: the hub alerts it as a local run's approver does, with links
    to the hub's pages."""
    from hearth.audit.approvals import from_row
    from hearth.leash import alerts

    try:
        approval = from_row(row)
        alerts.pending_alert(settings)(approval, f"{approval.tool} {str(approval.arguments or '')[:400]}")
    except (KeyError, TypeError, ValueError):
        return


def _place(settings: Any, audit: AuditStore, run_id: str) -> None:
    """A remote run ended: its request leaves claimed/ as a local one's does (settle, hearth/dispatch/),
    and the hub alerts its end as it would a local run's, once."""
    from hearth.dispatch.launchers import launcher_for
    from hearth.dispatch.settle import settle
    from hearth.leash import alerts
    from hearth.queue.directory import Queue

    queue = Queue(settings.queue_dir)
    claimed = queue.claimed / f"{run_id}.json"
    if not claimed.exists():
        return  # placed already (its RunFinished came twice, or a sweep settled it): alerted then
    try:
        settle(queue, audit, settings, claimed.name, launcher_for(settings), grace_s=0.0)
    except OSError:
        return  # the spawner's next sweep places it
    run = audit.run(run_id) or {}
    if run.get("status") not in (None, "running", "waiting") and not claimed.exists():
        detail = str(run.get("error") or run.get("summary") or "")
        goal, agent = str(run.get("goal") or ""), str(run.get("agent_name") or "")
        alerts.run_ended(settings, run_id, str(run["status"]), goal=goal, detail=detail, agent=agent)
