"""Users and channels: who may use this hearth and what each may do (the same rows as `hearth
users`), and each chat channel's state, last error and what it still owes.

Anyone signed in reads the page (tokens are never shown; only how many a user has); changing
users is an owner's, through hearth/users/roster.py as the CLI does, each change recorded in
`operator_actions` (area `users`). A new user's token, or another one, is shown once, on the page
the change returns, and never again.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, Response

from hearth.audit import channels as channel_rows
from hearth.audit.store import AuditStore, Rows
from hearth.errors import HearthError
from hearth.settings import Settings
from hearth.users import roster
from hearth.web.context import web_of
from hearth.web.routes.operate import recent_actions, record_action
from hearth.web.security import Identity, WebError, check_csrf, owner, viewer

router = APIRouter()
ACTIONS = ("add", "grant", "revoke", "disable", "enable", "rm", "token", "link", "unlink")


def users_data(reader: Rows) -> dict[str, Any]:
    """Every user (rights and identities, never a token) and every channel's state."""
    people = [
        {
            **asdict(listed.user),
            "rights": sorted(f"{right} in {profile}" for profile, right in listed.user.rights),
            "tokens": "configured" if listed.user.built_in else listed.tokens,
            "identities": listed.identities,
            "created_at": listed.created_at,
            "created_by": listed.created_by,
        }
        for listed in roster.listing(reader)
    ]
    return {"users": people, "channels": channel_rows.status(reader)}


def change(settings: Settings, me: Identity, form: dict[str, str]) -> str:
    """One change asked by the page's forms, as the owner `me`; what to show once (a token), or ''."""
    action, name = form.get("action", ""), form.get("name", "").strip()
    if action not in ACTIONS:
        raise WebError(400, f"{action[:40]!r} is not a change of users; one of: {', '.join(ACTIONS)}")
    settings.audit_path.parent.mkdir(parents=True, exist_ok=True)  # the first thing it holds, as record_action
    try:
        with AuditStore(settings.audit_path) as audit:
            shown = _apply(audit, action, name, form, me.account.name or me.user)
    except HearthError as exc:
        record_action(settings, me, "users", action, name, ok=False, detail=str(exc))
        raise WebError(409 if "exists" in str(exc) or "last" in str(exc) else 400, str(exc)) from None
    record_action(settings, me, "users", action, name, ok=True, detail=_detail(action, form))
    return shown


def _apply(audit: AuditStore, action: str, name: str, form: dict[str, str], by: str) -> str:
    profile, right = form.get("profile", "").strip(), form.get("right", "")
    if action == "add":
        return roster.add(
            audit, name, form.get("role", ""), by=by, default_profile=form.get("default_profile") or "default"
        )
    if action == "token":
        return roster.new_token(audit, name, by=by)
    if action in ("grant", "revoke"):
        (
            roster.grant(audit, name, profile, right, by=by)
            if action == "grant"
            else roster.revoke(audit, name, profile, right)
        )
    elif action in ("disable", "enable"):
        roster.set_disabled(audit, name, action == "disable")
    elif action == "rm":
        roster.remove(audit, name)
    elif action == "link":
        roster.link(audit, name, form.get("channel", ""), form.get("address", ""), by=by)
    else:
        roster.unlink(audit, name, form.get("channel", ""), form.get("address", ""))
    return ""


def _detail(action: str, form: dict[str, str]) -> str:
    keys = {"add": ("role",), "grant": ("profile", "right"), "revoke": ("profile", "right")}
    keys |= {"link": ("channel", "address"), "unlink": ("channel", "address")}
    return " ".join(f"{k}={form.get(k, '')[:80]}" for k in keys.get(action, ()))


@router.get("/operate/users", response_class=HTMLResponse, include_in_schema=False)
async def users_page(request: Request, me: Identity = Depends(viewer)) -> HTMLResponse:
    web = web_of(request)
    data = await run_in_threadpool(users_data, web.reader)
    actions = recent_actions(request, "users", 10)
    return web.pages.render(request, "users.html", **data, token=None, done="", error=None, actions=actions)


@router.post("/operate/users", include_in_schema=False, dependencies=[Depends(check_csrf)])
async def users_submit(request: Request, me: Identity = Depends(owner)) -> Response:
    web = web_of(request)
    form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
    token, error, status = None, None, 200
    try:
        token = await run_in_threadpool(change, web.config.settings, me, form) or None
    except WebError as exc:
        error, status = exc.reason, exc.status
    data = await run_in_threadpool(users_data, web.reader)
    done = "" if error else f"{form.get('action', '')} {form.get('name', '')[:40]}: done"
    actions = recent_actions(request, "users", 10)
    page = web.pages.render(request, "users.html", status, **data, token=token, done=done, error=error, actions=actions)
    return page


@router.get("/api/users", tags=["users"])
async def api_users(request: Request, me: Identity = Depends(viewer)) -> dict[str, Any]:
    """Every user (role, rights, chat identities, how many tokens: never a token) and each chat
    channel's state, last error and deliveries owed or missing."""
    return await run_in_threadpool(users_data, web_of(request).reader)


@router.post("/api/users", tags=["users"], dependencies=[Depends(check_csrf)])
async def api_change_users(request: Request, me: Identity = Depends(owner)) -> dict[str, Any]:
    """One change, as `hearth users ACTION` (owners only): {action, name, role, profile, right,
    channel, address}; `token` in the answer when one was made (shown this once)."""
    body = await request.json()
    form = {k: str(v) for k, v in (body if isinstance(body, dict) else {}).items()}
    token = await run_in_threadpool(change, web_of(request).config.settings, me, form)
    return {"done": f"{form.get('action', '')} {form.get('name', '')}", "token": token or None}
