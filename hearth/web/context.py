"""What a route of the command center reaches: the `Web` on app.state, and the one-line error reply.

Below the app and its routes alike: hearth/web/app.py builds a `Web` and registers the handlers
that answer with `error_response`; each module of hearth/web/routes/ reads `web_of(request)`. So
a route never imports the app that includes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request
from starlette.responses import JSONResponse, Response

from hearth.web.config import WebConfig
from hearth.web.live import Live
from hearth.web.pages import Pages
from hearth.web.reader import Reader
from hearth.web.security import Sessions, Throttle


@dataclass
class Web:
    """Everything a route needs, on app.state.web."""

    config: WebConfig
    reader: Reader
    live: Live
    pages: Pages
    sessions: Sessions
    throttle: Throttle


def web_of(request: Request) -> Web:
    web: Web = request.app.state.web
    return web


def wants_json(request: Request) -> bool:
    return request.url.path.startswith("/api/") or request.url.path == "/metrics"


def error_response(request: Request, status: int, reason: str) -> Response:
    """One line, as JSON for scripts or as a page for a person."""
    if wants_json(request):
        return JSONResponse({"error": reason}, status_code=status)
    return web_of(request).pages.render(request, "error.html", status, status=status, reason=reason)
