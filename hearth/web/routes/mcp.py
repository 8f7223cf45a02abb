"""MCP servers: the declared servers, their tools with risk and pin state, the drift runs found,
each tool's calls in the runs that used it, and (operator) Approve, as `hearth mcp approve` does.

Reading the page never starts a server: what it shows comes from the servers' files, the pins
and the runs' `mcp` steps. Review (operator) starts the server in the sandbox to list its tools
as they are now, and Approve pins one of them as listed then."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Form, Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, RedirectResponse, Response

from agent.tools.mcp.tools import tool_name
from hearth.audit import steps
from hearth.audit.store import AuditStore
from hearth.errors import HearthError
from hearth.mcp.config import ServerConfig, load_servers
from hearth.mcp.pins import drift_found, drifts, pinned_states, pins
from hearth.settings import Settings
from hearth.web.context import web_of
from hearth.web.security import Identity, WebError, check_csrf, owner, viewer

router = APIRouter()
CALLS = 20  # a tool's latest calls shown
DRIFT = 50  # the latest changes runs found, of every server


def mcp_data(request: Request) -> dict[str, Any]:
    """Every declared server with its pinned tools, their state and latest calls, and the drift found."""
    settings = web_of(request).config.settings
    try:
        servers = load_servers(settings.config_dir)
    except HearthError as exc:
        return {"error": str(exc), "servers": []}
    return {"error": "", "servers": [_server(request, config) for config in servers]}


def _server(request: Request, config: ServerConfig) -> dict[str, Any]:
    reader = web_of(request).reader
    pinned = pins(reader, config.name)
    # a drift a run found before the tool was approved again is history, not news
    approved = {tool_name(config.name, t): p.approved_at for t, p in pinned.items()}
    tools = []
    for t in pinned_states(config, pinned, drifts(reader, config, pinned)):
        name = tool_name(config.name, t.tool)
        calls = steps.tool_calls(reader, name, CALLS)
        tools.append(
            {
                "tool": t.tool,
                "name": name,
                "state": t.state,
                "risk": t.risk,
                "sha256": t.sha256,
                "approved_by": t.pin.approved_by if t.pin else "",
                "approved_at": t.pin.approved_at if t.pin else "",
                "description": t.pin.description if t.pin else "",
                "calls": [{**c, "ok": bool(c["ok"])} for c in calls],
            }
        )
    return {
        "name": config.name,
        "transport": config.transport,
        "where": config.url or " ".join([config.command, *config.args]),
        "egress": list(config.egress),
        "tools": tools,
        "drift": [
            {"run_id": d.run_id, "at": d.at, "tool": d.tool, "why": d.why}
            for d in drift_found(reader, config.name, limit=DRIFT)
            if d.at > approved.get(d.tool, "")
        ],
    }


def _declared(request: Request, server: str) -> tuple[Settings, ServerConfig]:
    """The settings and the server's declaration; 404 naming what is wrong with it."""
    from hearth.mcp.review import server_config

    settings = web_of(request).config.settings
    try:
        return settings, server_config(settings, server)
    except HearthError as exc:
        raise WebError(404, str(exc)) from None


def review(request: Request, server: str) -> dict[str, Any]:
    """The server started in the sandbox, its tools as listed now against the pins."""
    from hearth.mcp.review import inspect

    settings, config = _declared(request, server)
    with AuditStore(settings.audit_path) as audit:
        seen = inspect(config, settings, audit)
    listed = {t.name: t for t in seen.tools}
    states = [
        {
            "tool": t.tool,
            "state": t.state,
            "risk": t.risk,
            "why": t.reason(server),
            "description": listed[t.tool].description if t.tool in listed else "",
        }
        for t in seen.states
    ]
    return {"server": server, "error": seen.error, "tools": states}


def approve(request: Request, server: str, tool: str, by: str) -> dict[str, Any]:
    """Pin `tool` as the server lists it now; WebError naming what is wrong."""
    from hearth.mcp.pins import CLASH, pin
    from hearth.mcp.review import inspect

    settings, config = _declared(request, server)
    with AuditStore(settings.audit_path) as audit:
        seen = inspect(config, settings, audit)
        if seen.error:
            raise WebError(502, seen.error)
        listed = {t.name: t for t in seen.tools}
        if tool not in listed:
            raise WebError(404, f"{server} lists no tool {tool!r}; it lists: {', '.join(listed) or 'none'}")
        clash = [t for t in seen.states if t.tool == tool and t.state == CLASH]
        if clash:
            raise WebError(409, f"cannot approve {tool!r}: {clash[0].reason(server)}")
        made = pin(audit, server, listed[tool], by)
    return {"tool": made.tool, "sha256": made.sha256, "approved_by": made.approved_by, "approved_at": made.approved_at}


@router.get("/operate/mcp", response_class=HTMLResponse, include_in_schema=False)
def mcp_page(request: Request, me: Identity = Depends(viewer)) -> HTMLResponse:
    return web_of(request).pages.render(request, "mcp.html", **mcp_data(request), reviewed=None)


@router.get("/operate/mcp/{server}/review", response_class=HTMLResponse, include_in_schema=False)
async def review_page(request: Request, server: str, me: Identity = Depends(owner)) -> HTMLResponse:
    reviewed = await run_in_threadpool(review, request, server)
    return web_of(request).pages.render(request, "mcp.html", **mcp_data(request), reviewed=reviewed)


@router.post("/operate/mcp/{server}/approve", include_in_schema=False, dependencies=[Depends(check_csrf)])
async def approve_page(request: Request, server: str, tool: str = Form(...), me: Identity = Depends(owner)) -> Response:
    await run_in_threadpool(approve, request, server, tool, me.decider)
    return RedirectResponse("/operate/mcp", status_code=303)


@router.get("/api/mcp", tags=["mcp"])
def api_mcp(request: Request, me: Identity = Depends(viewer)) -> dict[str, Any]:
    """The declared MCP servers, their pinned tools (risk, state, who approved), the drift runs
    found and each tool's latest calls."""
    return mcp_data(request)


@router.post("/api/mcp/{server}/{tool}/approve", tags=["mcp"], dependencies=[Depends(check_csrf)])
async def api_approve(request: Request, server: str, tool: str, me: Identity = Depends(owner)) -> dict[str, Any]:
    """Approve (pin) one tool as the server lists it now (operator)."""
    return await run_in_threadpool(approve, request, server, tool, me.decider)
