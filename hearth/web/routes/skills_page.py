"""Skills: each skill on the box, its state (offered, checking, failed, retired, ...), its last
check's pass rates with and without it, and its checks' history, each linking to its two evals.
Read through hearth/skills/overview.py, which records the verdicts of checks whose evals have
finished (the one write: the appliance's own function); the page never starts a check."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse

from hearth.audit import skills as check_rows
from hearth.settings import Settings
from hearth.skills.overview import overview
from hearth.web.context import web_of
from hearth.web.security import Identity, viewer

router = APIRouter()
HISTORY = 20


def skills_data(settings: Settings, reader: Any) -> dict[str, Any]:
    """Every skill with its checks (newest first), and the broken SKILL.md files."""
    found = overview(settings)
    for row in found["skills"]:
        row["checks"] = check_rows.history(reader, row["key"], HISTORY) if settings.audit_path.exists() else []
    return found


@router.get("/evals/skills", response_class=HTMLResponse, include_in_schema=False)
async def skills_page(request: Request, me: Identity = Depends(viewer)) -> HTMLResponse:
    web = web_of(request)
    data = await run_in_threadpool(skills_data, web.config.settings, web.reader)
    return web.pages.render(request, "skills.html", **data, skills_dir=str(web.config.settings.config_dir / "skills"))


@router.get("/api/skills", tags=["skills"])
async def api_skills(request: Request, me: Identity = Depends(viewer)) -> dict[str, Any]:
    """Every skill (as `hearth skills list --json`), each with its checks, newest first: the suite,
    both evals, both pass rates and the verdict; and one line per SKILL.md that cannot be offered."""
    web = web_of(request)
    return await run_in_threadpool(skills_data, web.config.settings, web.reader)
