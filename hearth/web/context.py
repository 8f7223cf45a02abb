"""What a route of the command center reaches: the `Web` on app.state, and the one-line error reply.

Below the app and its routes alike: hearth/web/app.py builds a `Web` and registers the handlers
that answer with `error_response`; each module of hearth/web/routes/ reads `web_of(request)`. So
a route never imports the app that includes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, urlsplit

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
    links = error_links(request)
    return web_of(request).pages.render(request, "error.html", status, status=status, reason=reason, links=links)


def error_links(request: Request) -> list[tuple[str, str]]:
    """Where a person can go from an error: the page they came from (when it was this server's),
    the run the path names, and the lists; every link a local path, never the Referer's host."""
    links: list[tuple[str, str]] = []
    came = urlsplit(request.headers.get("referer") or "")
    if came.netloc == request.url.netloc and came.path.startswith("/") and not came.path.startswith("//"):
        links.append((came.path + (f"?{came.query}" if came.query else ""), "Back to the page you came from"))
    parts = request.url.path.strip("/").split("/")
    if len(parts) >= 2 and parts[0] == "runs" and parts[1]:
        links.append((f"/runs/{quote(parts[1], safe='')}", "This run's page"))
    if parts and parts[0] == "approvals":
        links.append(("/approvals", "Approvals"))
    links += [("/runs", "All runs"), ("/", "The overview")]
    return list({href: (href, label) for href, label in reversed(links)}.values())[::-1]
