"""The command center's app: `create_app(config)` wires the walls, the live map and the routes.

Routes live by area in hearth/web/routes/, reaching the app's parts through hearth/web/context.py
(never this module); each area's data is one function used by its page and by its /api twin, so a
script can do all the page can. The OpenAPI description is at
/api/openapi.json, for viewers like the rest of /api (no docs page: it would load scripts from
another origin).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from importlib.resources import files
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException
from starlette.responses import RedirectResponse, Response

from hearth.doors.mount import Doors
from hearth.remote import DOOR
from hearth.web.config import WebConfig
from hearth.web.context import Web, error_response, wants_json
from hearth.web.limits import BodyLimit
from hearth.web.live import Live
from hearth.web.pages import Pages
from hearth.web.reader import Reader
from hearth.web.security import Guard, Sessions, SignInNeeded, Throttle, WebError


def _migrated(path: Path) -> None:
    """Bring an existing audit to this hearth's schema before reading it read-only (new columns)."""
    if path.exists():
        from hearth.audit.store import AuditStore

        AuditStore(path).close()


def create_app(config: WebConfig, throttle: Throttle | None = None) -> FastAPI:
    """The app; `throttle` replaces the token checks' own (a test's, with its own sleep)."""
    _migrated(config.settings.audit_path)
    reader = Reader(config.settings.audit_path)
    sessions, throttle = Sessions(config.sessions_per_role), throttle or Throttle(config.throttle_base_s)
    web = Web(config, reader, Live(config, reader), Pages(), sessions, throttle)

    doors = _doors(web)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        task = asyncio.create_task(web.live.run())
        reminding = asyncio.create_task(_remind(config))
        fleet = asyncio.create_task(_hub_alive(config)) if DOOR in doors else None
        async with doors["/mcp"].running():  # the MCP door's sessions live as long as the app
            yield
        if fleet is not None:
            fleet.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await fleet
        web.live.close()
        task.cancel()
        reminding.cancel()

    app = FastAPI(
        title="hearth command center",
        description="Launch, watch, approve, replay and review hearth's runs. Every page's data is here as JSON.",
        version="1",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,  # served by hearth/web/routes/auth.py, behind the viewer role
        lifespan=lifespan,
    )
    app.state.web = web
    app.middleware("http")(Guard(config, web.sessions, web.throttle, web.reader))
    app.add_middleware(Doors, doors=doors)  # /v1 and /mcp: their own keys, outside the Guard
    app.add_middleware(BodyLimit)  # added last, so outermost: it runs before the Guard
    _handlers(app)
    app.mount("/static", StaticFiles(directory=str(files("hearth.web") / "static")), name="static")
    from hearth.web.routes import ROUTERS

    for router in ROUTERS:
        app.include_router(router)
    return app


def _doors(web: Web) -> dict[str, Any]:
    from hearth.dispatch.launchers import door_for
    from hearth.doors.mount import McpDoor
    from hearth.web.routes.v1 import v1_app

    doors: dict[str, Any] = {"/v1": v1_app(web), "/mcp": McpDoor(web)}
    door = door_for(web.config.settings)
    if door is not None:  # the launcher runs requests on other machines: the door they report through
        from hearth.remote.door import fleet_app

        doors[door] = fleet_app(web)
    return doors


async def _hub_alive(config: WebConfig) -> None:
    """While a hub's /fleet door is up, it says so in the audit: a worker is called lost only for
    silence the door was there to hear (hearth/remote/hub.py)."""
    from hearth.remote.hub import ALIVE_EVERY_S, door_alive

    started = time.time()
    try:
        while True:
            await asyncio.to_thread(door_alive, config.settings.audit_path, started)
            await asyncio.sleep(ALIVE_EVERY_S)
    finally:
        door_alive(config.settings.audit_path, started, closing=True)


REMIND_EVERY_S = 30.0


async def _remind(config: WebConfig) -> None:
    """Approvals' reminders (hearth.leash.alerts.remind_due) while the command center is up; the
    spawner's and `hearth watch`'s sweeps send the same ones, and each goes once whoever sends it."""
    while True:
        await asyncio.to_thread(_remind_once, config)
        await asyncio.sleep(REMIND_EVERY_S)


def _remind_once(config: WebConfig) -> None:
    from hearth.audit.store import AuditStore
    from hearth.leash.alerts import remind_due

    if not config.settings.audit_path.exists():
        return
    try:
        with AuditStore(config.settings.audit_path) as audit:
            remind_due(config.settings, audit)
    except Exception:  # best effort, as every alert: a reminder never takes the command center down
        return


def _handlers(app: FastAPI) -> None:
    app.add_exception_handler(WebError, _web_error)  # type: ignore[arg-type]
    app.add_exception_handler(HTTPException, _http_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _invalid)  # type: ignore[arg-type]


async def _web_error(request: Request, exc: WebError) -> Response:
    if isinstance(exc, SignInNeeded) and not wants_json(request):
        return RedirectResponse(f"/signin?next={request.url.path}", status_code=303)
    return error_response(request, exc.status, exc.reason)


async def _http_error(request: Request, exc: HTTPException) -> Response:
    reason = {404: "no such page", 405: "this address does not take that method"}.get(exc.status_code, str(exc.detail))
    return error_response(request, exc.status_code, reason)


async def _invalid(request: Request, exc: RequestValidationError) -> Response:
    first = exc.errors()[0] if exc.errors() else {}
    where = ".".join(str(part) for part in first.get("loc", ())[1:]) or "request"
    return error_response(request, 400, f"{where}: {first.get('msg', 'is not valid')}")
