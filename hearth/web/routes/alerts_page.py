"""Alerts: where alerts go (alerts.toml, URLs redacted), a test send, and what was sent or failed.

The list and the test are `hearth alerts` and `hearth alerts test`: load_destinations, then
send_now with a `test` alert, each result recorded in the audit's `alerts` table as every alert is.
A destination URL can hold a secret (a token in its path, an ntfy topic, a password), so the page
shows apprise's own private form of it (url(privacy=True)) with each path part shortened and
the query left off; `{cred:NAME}` placeholders are listed by name, never filled.
"""

from __future__ import annotations

import socket
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, RedirectResponse, Response

from hearth.audit import alerts as alert_rows
from hearth.errors import ConfigError
from hearth.leash.alerts import ALERTS_FILE, Alert, Destination, load_destinations, redacted, send_now
from hearth.settings import Settings
from hearth.web.context import web_of
from hearth.web.reader import Reader
from hearth.web.routes.operate import record_action
from hearth.web.security import Identity, WebError, check_csrf, owner, viewer

router = APIRouter()
RECENT = 50


def _shown(destination: Destination) -> dict[str, Any]:
    return {
        "name": destination.name,
        "url": redacted(destination.url),
        "events": list(destination.events),
        "local": destination.local,
        "credentials": destination.credentials,
    }


def alerts_data(settings: Settings, reader: Reader) -> dict[str, Any]:
    """The destinations, the recent alerts (newest first) and the failures among them."""
    try:
        destinations, problem = [_shown(d) for d in load_destinations(settings.config_dir)], ""
    except ConfigError as exc:
        destinations, problem = [], str(exc)
    recent = alert_rows.recent(reader, RECENT)
    failures = alert_rows.failures(reader)
    return {
        "file": str(settings.config_dir / ALERTS_FILE),
        "problem": problem,
        "destinations": destinations,
        "recent": recent,
        "failures": failures,
    }


def test_send(settings: Settings, me: Identity, name: str = "") -> list[dict[str, Any]]:
    """`hearth alerts test`, to every destination or the one named; each result as recorded."""
    try:
        destinations = load_destinations(settings.config_dir)
    except ConfigError as exc:
        raise WebError(409, f"no test sent: {exc}") from None
    chosen = [d for d in destinations if not name or d.name == name]
    if not chosen:
        known = ", ".join(d.name for d in destinations) or "none"
        raise WebError(
            404, f"no alert destination {name[:80]!r} in {settings.config_dir / ALERTS_FILE}; destinations: {known}"
        )
    alert = Alert(
        "test", "hearth: test alert", f"A test alert from hearth on {socket.gethostname()}, sent by {me.decider}."
    )
    results = send_now(settings, alert, chosen)
    summary = "; ".join(f"{r['destination']}: {r['status']}" for r in results)
    record_action(settings, me, "alerts", "test", name or "every destination", ok=True, detail=summary)
    return [{k: r[k] for k in ("destination", "status", "attempts", "error", "at")} for r in results]


@router.get("/operate/alerts", response_class=HTMLResponse, include_in_schema=False)
async def alerts_page(request: Request, tested: str = "", me: Identity = Depends(viewer)) -> HTMLResponse:
    web = web_of(request)
    data = await run_in_threadpool(alerts_data, web.config.settings, web.reader)
    return web.pages.render(request, "alerts.html", **data, tested=tested[:500])


@router.post("/operate/alerts/test", include_in_schema=False, dependencies=[Depends(check_csrf)])
async def alerts_test(request: Request, me: Identity = Depends(owner)) -> Response:
    name = (await request.form()).get("destination")
    results = await run_in_threadpool(
        test_send, web_of(request).config.settings, me, name if isinstance(name, str) else ""
    )
    said = "; ".join(f"{r['destination']} {r['status']}" for r in results)
    return RedirectResponse(f"/operate/alerts?tested={said}", status_code=303)


@router.get("/api/alerts", tags=["alerts"])
async def api_alerts(request: Request, me: Identity = Depends(viewer)) -> dict[str, Any]:
    """As `hearth alerts --json`, URLs redacted: the destinations, the last 50 alerts and the
    failures per destination; `problem` when alerts.toml does not load."""
    web = web_of(request)
    return await run_in_threadpool(alerts_data, web.config.settings, web.reader)


@router.post("/api/alerts/test", tags=["alerts"], dependencies=[Depends(check_csrf)])
async def api_alerts_test(
    request: Request, destination: str = "", me: Identity = Depends(owner)
) -> list[dict[str, Any]]:
    """As `hearth alerts test --json`: a test alert to every destination (or `destination`), now;
    each one's status (sent or failed), attempts and error, as recorded in the audit."""
    return await run_in_threadpool(test_send, web_of(request).config.settings, me, destination[:200])
