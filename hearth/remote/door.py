"""`/fleet` on the hub's `hearth serve`: where workers send their runs' events and ask what to do.

Every call carries the worker's token (`Authorization: Bearer hw-...`, from `hearth fleet add`),
the Host the command center answers to, and JSON; hearth/remote/hub.py does the work on the audit:

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
from hearth.remote import hub

if TYPE_CHECKING:
    from hearth.web.context import Web

MAX_EVENTS = 500


def fleet_app(web: Web) -> FastAPI:
    """The `/fleet` routes, each a check of the worker's body and one call of hearth/remote/hub.py."""
    door = _Door(web)
    app = FastAPI(title="hearth /fleet", docs_url=None, redoc_url=None, openapi_url=None)

    @app.post("/fleet/claim")
    async def claim(request: Request) -> Response:
        return await door.guarded(request, door.claim)

    @app.post("/fleet/heartbeat")
    async def heartbeat(request: Request) -> Response:
        return await door.guarded(request, door.heartbeat)

    @app.post("/fleet/events")
    async def events(request: Request) -> Response:
        return await door.guarded(request, door.events)

    @app.get("/fleet/approvals/{approval_id}")
    async def approval(request: Request, approval_id: str) -> Response:
        return await door.answer(request, lambda audit, worker: hub.approval(audit, worker, approval_id))

    return app


class _Door:
    """What every `/fleet` call shares: the Host check, the worker's token, the audit per thread,
    one JSON answer; and the work of the three calls that carry a body."""

    def __init__(self, web: Web) -> None:
        self.web = web
        self.settings = web.config.settings
        self.kept = threading.local()

    def store(self) -> AuditStore:
        """The audit through one connection per thread of the pool the calls run in (a worker calls
        several times a second; opening the file for each was a good part of the hub's work)."""
        audit: AuditStore | None = getattr(self.kept, "audit", None)
        if audit is None:
            audit = self.kept.audit = AuditStore(self.settings.audit_path)
        return audit

    def call(self, request_headers: dict[str, str], work: Any) -> tuple[int, dict[str, Any]]:
        try:
            audit = self.store()
            worker = hub.identify(audit, request_headers.get("authorization", ""))
            return 200, work(audit, worker)
        except hub.WorkerRefused as exc:
            body: dict[str, Any] = {"error": str(exc)}
            if exc.index is not None:
                body["index"] = exc.index
            return exc.status, body

    async def answer(self, request: Request, work: Any) -> Response:
        from hearth.web.security import HEADERS

        host = request.headers.get("host", "").lower()
        if host not in self.web.config.allowed_hosts:
            status, body = (
                400,
                {"error": f"Host {host!r} is not one this server answers to (hearth serve --allowed-host)"},
            )
        else:
            status, body = await asyncio.to_thread(self.call, dict(request.headers), work)
        return JSONResponse(body, status_code=status, headers={**HEADERS, "Cache-Control": "no-store"})

    async def guarded(self, request: Request, work: Any) -> Response:
        from hearth.web.security import HEADERS

        try:
            found = await _body_of(request)
        except hub.WorkerRefused as exc:
            return JSONResponse({"error": str(exc)}, status_code=exc.status, headers=HEADERS)
        return await self.answer(request, lambda audit, worker: work(audit, worker, found))

    def claim(self, audit: AuditStore, worker: hub.Worker, body: dict[str, Any]) -> dict[str, Any]:
        return hub.claim(audit, worker, str(body.get("run_id")), paused=_paused(self.settings))

    def heartbeat(self, audit: AuditStore, worker: hub.Worker, body: dict[str, Any]) -> dict[str, Any]:
        from hearth.web.live import budget_of  # the hub's budgets count every box's runs

        models, running = body.get("models"), body.get("running")
        if not isinstance(models, list) or not isinstance(running, list):
            raise hub.WorkerRefused(400, "a heartbeat is {models: [...], running: [...]}")
        answer = hub.heartbeat(audit, worker, models, running, budget=budget_of(self.web.config))
        return {**answer, "paused": _paused(self.settings)}

    def events(self, audit: AuditStore, worker: hub.Worker, body: dict[str, Any]) -> dict[str, Any]:
        batch = body.get("events")
        if not isinstance(batch, list) or len(batch) > MAX_EVENTS:
            raise hub.WorkerRefused(400, f"events must be a list of at most {MAX_EVENTS}")
        done = hub.accept(audit, worker, batch)
        for row in done.pop("asked"):
            _asked(self.settings, row)
        for run_id in done.pop("finished"):
            _place(self.settings, audit, run_id)
        return done


async def _body_of(request: Request) -> dict[str, Any]:
    try:
        found = await request.json()
    except ValueError:
        found = None
    if not isinstance(found, dict):
        raise hub.WorkerRefused(400, "the body must be a JSON object")
    return found


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
