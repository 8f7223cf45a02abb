"""Answer from the alert: `/act/TOKEN`, the signed single-use links an approval alert carries.

No session and no CSRF token: the token is its own authority (hearth/leash/actions.py signed it
for one approval, one decision, until the approval expires), so a phone that never signed in can
use it, and ntfy's `http` action can POST it without opening a page. The other walls stay: the
Host check, the body limit (16 KiB here), the security headers.

    GET  /act/TOKEN    what would be decided (the call, the run, the time left) and one button;
                       it NEVER decides: link previews and scanners fetch links
    POST /act/TOKEN    decides, once, as `alert:<destination name>` (signed into the token), and wakes
                       the run: hearth/leash/decisions.py, the one way every door decides

A forged, altered, expired, used or replayed token, or one for an approval closed already, is
refused with a one-line page (4xx) and changes nothing.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, Response

from agent.clock import utc_now
from hearth.audit import runs
from hearth.audit.approvals import Approval, parse_stamp, utc_clock
from hearth.audit.store import AuditStore
from hearth.leash import actions, decisions
from hearth.render import time_left
from hearth.web.context import error_response, web_of
from hearth.web.security import ACT_PREFIX

router = APIRouter()
REASON_CHARS = 500


def _audit_path(request: Request) -> Any:
    path = web_of(request).config.settings.audit_path
    if not path.exists():
        raise actions.ActionRefused(404, "this hearth has no approvals yet; nothing changed")
    return path


def preview(request: Request, token: str) -> tuple[actions.Action, Approval, dict[str, Any]]:
    """What the link would decide, and the run it is for (its goal and profile)."""
    settings = web_of(request).config.settings
    with AuditStore(_audit_path(request)) as audit:
        action, approval = actions.check(audit, settings.state_dir, token)
        return action, approval, runs.header(audit, approval.run_id) or {}


def decide(request: Request, token: str, reason: str) -> Approval:
    return decisions.by_link(web_of(request).config.settings, token, reason=reason).approval


@router.get(ACT_PREFIX + "{token}", response_class=HTMLResponse, include_in_schema=False)
async def act_page(request: Request, token: str) -> Response:
    try:
        action, approval, run = await run_in_threadpool(preview, request, token)
    except actions.ActionRefused as exc:
        return error_response(request, exc.status, exc.reason)
    left_s = (parse_stamp(approval.expires_at) - utc_clock()).total_seconds()
    return web_of(request).pages.render(
        request,
        "act.html",
        action=action,
        approval=approval,
        run=run,
        arguments=_pretty(approval.arguments),
        left=time_left(left_s),
        now=utc_now(),
    )


@router.post(ACT_PREFIX + "{token}", include_in_schema=False)
async def act(request: Request, token: str) -> Response:
    form = await request.form()  # a deny's reason from the page; ntfy's button sends none
    reason = " ".join(str(form.get("reason") or "").split())[:REASON_CHARS]
    try:
        decided = await run_in_threadpool(decide, request, token, reason)
    except actions.ActionRefused as exc:
        return error_response(request, exc.status, exc.reason)
    return web_of(request).pages.render(request, "act_done.html", approval=decided)


def _pretty(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
    except ValueError:
        return arguments
