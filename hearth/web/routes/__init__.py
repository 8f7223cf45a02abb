"""The command center's routes, one module per area; each page's data also answers under /api."""

from __future__ import annotations

from fastapi import APIRouter

from hearth.web.routes import alert_actions, approvals, auth, knowledge, launch, mcp, overview, proposals, report, runs

ROUTERS: list[APIRouter] = [
    auth.router,
    overview.router,
    runs.router,
    launch.router,
    approvals.router,
    report.router,
    knowledge.router,
    proposals.router,
    alert_actions.router,
    mcp.router,
]
