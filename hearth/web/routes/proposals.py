"""Proposals: the self-evolution changes agents proposed (`hearth proposals`), with their diffs."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.responses import HTMLResponse

from hearth.audit import proposals as proposal_rows
from hearth.run.diffs import diff_lines
from hearth.web.context import web_of
from hearth.web.security import Identity, viewer

router = APIRouter()


def proposals_data(request: Request) -> list[dict[str, Any]]:
    """As `hearth proposals --json`: booleans as booleans, the security reasons as a list."""
    rows = proposal_rows.latest(web_of(request).reader, 50)
    for row in rows:
        row["security_reasons"] = json.loads(row.get("security_reasons") or "[]")
        row["check_passed"], row["security_flag"] = bool(row["check_passed"]), bool(row["security_flag"])
    return rows


@router.get("/proposals", response_class=HTMLResponse, include_in_schema=False)
def proposals_page(request: Request, me: Identity = Depends(viewer)) -> HTMLResponse:
    rows = [{**row, "lines": diff_lines(row.get("diff") or "")} for row in proposals_data(request)]
    return web_of(request).pages.render(request, "proposals.html", proposals=rows)


@router.get("/api/proposals", tags=["proposals"])
def api_proposals(request: Request, me: Identity = Depends(viewer)) -> list[dict[str, Any]]:
    """The latest self-evolution proposals, newest first, diffs included."""
    return proposals_data(request)
