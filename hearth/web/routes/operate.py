"""The operator's pages, one hub: budgets, missions, the router, security, alerts, the model server,
the fleet and the users.

Each area is its own module beside this one (hearth/web/routes/budgets.py ...), with its page under
/operate/AREA and its JSON at /api/AREA. What they share is here: the hub, the record of what an
operator changed (or tried to: a refusal is recorded too, in `operator_actions`), and the TOML
text a page writes, which is read back with tomllib before it replaces anything.
"""

from __future__ import annotations

import json
import tomllib
from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.responses import HTMLResponse

from agent.clock import utc_now
from hearth.audit import operator
from hearth.audit.store import AuditStore
from hearth.settings import Settings
from hearth.web.context import web_of
from hearth.web.security import Identity, viewer

router = APIRouter()

AREAS = (
    ("/operate/budgets", "Budgets", "tokens spent today and what is left, per profile; change the limits"),
    ("/operate/missions", "Missions", "scheduled goals: next fire, last runs, run now, pause, add, edit"),
    ("/operate/router", "Router", "which model a goal gets, and why: the rules and a box to try one"),
    ("/operate/security", "Security", "connections, tripwires, denials and credential uses"),
    ("/operate/alerts", "Alerts", "where alerts go, a test send, recent deliveries and failures"),
    ("/operate/models", "Model server", "the models Ollama has pulled and those loaded in memory"),
    ("/operate/fleet", "Fleet", "a hub's workers: up or lost, their models and runs, what waits; add, remove"),
    ("/operate/users", "Users", "who may launch, approve or only read, in which profile; the chat channels' state"),
)


def record_action(
    settings: Settings, me: Identity, area: str, action: str, subject: str, *, ok: bool, detail: str = ""
) -> None:
    """One row of `operator_actions` (the audit is made if this is the first thing it holds)."""
    row = {
        "at": utc_now(),
        "by": me.decider,
        "area": area,
        "action": action,
        "subject": subject[:200],
        "ok": int(ok),
        "detail": detail[:2000],
    }
    settings.audit_path.parent.mkdir(parents=True, exist_ok=True)
    with AuditStore(settings.audit_path) as audit:
        operator.record(audit, row)


def recent_actions(request: Request, area: str, limit: int = 20) -> list[dict[str, Any]]:
    return operator.recent(web_of(request).reader, area, limit)


def toml_text(data: dict[str, Any]) -> str:
    """Flat TOML (strings, whole numbers, lists of strings, one level of tables), checked by reading
    it back: JSON's string escapes are TOML's basic-string escapes, so a value cannot break out."""
    lines = [f"{key} = {_value(value)}" for key, value in data.items() if not isinstance(value, dict)]
    for key, table in data.items():
        if isinstance(table, dict):
            lines += ["", f"[{key}]", *(f"{json.dumps(str(k))} = {_value(v)}" for k, v in table.items())]
    text = "\n".join(lines) + "\n"
    try:
        same = tomllib.loads(text) == data
    except tomllib.TOMLDecodeError:
        same = False
    if not same:  # a value this writer cannot write faithfully: refuse, never garble a file
        raise ValueError("the values do not round-trip through TOML")
    return text


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | str | list):
        return json.dumps(value)
    raise ValueError(f"cannot write {type(value).__name__} to TOML")


@router.get("/operate", response_class=HTMLResponse, include_in_schema=False)
def operate_page(request: Request, me: Identity = Depends(viewer)) -> HTMLResponse:
    return web_of(request).pages.render(request, "operate.html", areas=AREAS)
