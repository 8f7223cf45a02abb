"""The command center's routes, one module per area; each page's data also answers under /api."""

from __future__ import annotations

from fastapi import APIRouter

from hearth.web.routes import (
    alert_actions,
    alerts_page,
    approvals,
    auth,
    budgets,
    decisions,
    evals,
    fleet_page,
    health,
    knowledge,
    launch,
    mcp,
    missions,
    models,
    operate,
    overview,
    proposals,
    report,
    research,
    router_page,
    runs,
    security,
    skills_page,
    users_page,
)

ROUTERS: list[APIRouter] = [
    auth.router,
    overview.router,
    runs.router,
    research.router,
    launch.router,
    approvals.router,
    report.router,
    knowledge.router,
    proposals.router,
    alert_actions.router,
    health.router,
    operate.router,
    budgets.router,
    missions.router,
    router_page.router,
    security.router,
    alerts_page.router,
    models.router,
    decisions.router,
    evals.router,
    skills_page.router,
    mcp.router,
    fleet_page.router,
    users_page.router,
]
