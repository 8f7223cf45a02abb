"""Security: what the walls did, across runs or for one run, read from the audit.

    connections    every connection a command made through its run's proxy: host, allowed, why
    hosts          the same, counted per host and port (allowed and refused)
    tripwires      a decoy secret touched: which, how, by which tool, and what the run did
    denials        tool calls the policy, a person or a rule denied (steps with verdict `denied`)
    credentials    each credential a tool used or was refused, and for which host

Read-only, for viewers too; each list is the newest first and capped (LIMIT), and reads go
through indexes (m156's partial ones for denials and credential uses), never a full table.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse

from hearth.audit import steps, walls
from hearth.web.context import web_of
from hearth.web.reader import Reader
from hearth.web.security import Identity, viewer
from hearth.web.steps import decision_words

router = APIRouter()
LIMIT = 200


def security_data(reader: Reader, run: str = "", denied_only: bool = False) -> dict[str, Any]:
    """The five lists, for one run when `run` is given; `denied_only` keeps refused connections."""
    connections = walls.latest_connections(reader, run, LIMIT, refused_only=denied_only)
    hosts = walls.hosts(reader, run, LIMIT)
    tripwires = walls.latest_tripwires(reader, run, LIMIT)
    denials = steps.denials(reader, run, LIMIT)
    credentials = [_credential(row) for row in steps.credential_uses(reader, run, LIMIT)]
    for row in connections:
        row["allowed"] = bool(row["allowed"])
    return {
        "run": run,
        "denied_only": denied_only,
        "connections": connections,
        "hosts": hosts,
        "tripwires": tripwires,
        "denials": denied_calls(denials),
        "credentials": credentials,
    }


def _decoded(text: Any) -> dict[str, Any]:
    try:
        found = json.loads(text or "{}")
    except (TypeError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _credential(row: dict[str, Any]) -> dict[str, Any]:
    """A credential step's JSON detail as columns: name, host, verdict, reason (never a value:
    the recorder redacts, and a credential step holds none)."""
    detail = _decoded(row.pop("detail"))
    return {**row, "name": detail.get("name"), "host": detail.get("host"), "reason": detail.get("reason") or ""}


def denied_calls(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each denied call once, its reason in words: a person's denial by its approval step (who, after
    how long, their note), not again by the call it stopped; the policy's by the call's own reason."""
    details = [_decoded(row["detail"]) for row in rows]
    by_person = {d.get("approval") for d in details if "requested_at" in d}
    out = []
    for row, detail in zip(rows, details):
        if "requested_at" in detail:
            reason = decision_words(detail, "denied")
        elif detail.get("approval") in by_person:
            continue  # the call a person denied: its approval step says who and why
        else:
            reason = detail.get("reason") or row["detail"] or row["output"] or ""
        out.append({**row, "reason": str(reason)[:500], "output": (row["output"] or "")[:500]})
    return out


@router.get("/operate/security", response_class=HTMLResponse, include_in_schema=False)
async def security_page(
    request: Request, run: str = "", denied: bool = False, me: Identity = Depends(viewer)
) -> HTMLResponse:
    web = web_of(request)
    data = await run_in_threadpool(security_data, web.reader, run[:128].strip(), denied)
    return web.pages.render(request, "security.html", **data)


@router.get("/api/security", tags=["security"])
async def api_security(
    request: Request, run: str = "", denied: bool = False, me: Identity = Depends(viewer)
) -> dict[str, Any]:
    """Connections (host, allowed, reason), per host and port, tripwires tripped, denied calls and
    credential uses; newest first, at most 200 each; `run` narrows to one run, `denied` to refused
    connections."""
    return await run_in_threadpool(security_data, web_of(request).reader, run[:128].strip(), denied)
