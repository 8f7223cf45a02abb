"""Signing in: a token for a session cookie (HttpOnly, SameSite=Strict, Secure over TLS)."""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from hearth.web.context import web_of
from hearth.web.security import COOKIE, Identity, check_csrf, checked_account, role_for, set_cookie, viewer

router = APIRouter()
NAME = re.compile(r"^[\w .@-]{1,64}$")


def _next(target: str) -> str:
    """Only a path on this server (never //host or a scheme): an open redirect helps phishing."""
    return target if target.startswith("/") and not target.startswith("//") and "\\" not in target else "/"


@router.get("/signin", response_class=HTMLResponse, include_in_schema=False)
def signin_page(request: Request, next: str = "/") -> HTMLResponse:
    return web_of(request).pages.render(request, "signin.html", next=_next(next), error=None, name="")


@router.post("/signin", include_in_schema=False, dependencies=[Depends(check_csrf)])
async def signin(request: Request) -> Response:
    web, form = web_of(request), await request.form()
    token, name, target = (str(form.get(k) or "") for k in ("token", "name", "next"))
    client = request.client.host if request.client else "?"
    account = await checked_account(token.strip(), web.config, web.throttle, client, web.reader)
    role = role_for(account) if account is not None else ""
    if not role or not NAME.match(name.strip() or role):
        error = "a name is letters, digits, spaces and . @ - _ (at most 64)" if role else "wrong token"
        if account is not None and account.disabled:
            error = f"user {account.name!r} is disabled; an owner can enable them"
        return web.pages.render(request, "signin.html", 401, next=_next(target), error=error, name=name)
    me: Identity = request.state.identity
    if me.session is not None:
        web.sessions.drop(me.session.id)  # a new id on sign-in: a planted cookie is worth nothing
    assert account is not None
    # a configured token is shared, so its holder names themselves; a user's own token is the user
    shown = (name.strip() or role) if account.built_in else account.name
    session = web.sessions.new(shown, role, account.name)
    response = RedirectResponse(_next(target), status_code=303)
    set_cookie(response, session, request)
    return response


@router.post("/signout", include_in_schema=False, dependencies=[Depends(check_csrf)])
def signout(request: Request) -> Response:
    me: Identity = request.state.identity
    if me.session is not None:
        web_of(request).sessions.drop(me.session.id)
    response = RedirectResponse("/signin", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response


@router.get("/api/session", tags=["session"])
def api_session(request: Request) -> dict[str, Any]:
    """Who you are here, and the CSRF token a cookie-holding client sends with each POST (X-CSRF-Token)."""
    me: Identity = request.state.identity
    return {
        "user": me.user,
        "role": me.role or None,
        "account": me.account.name or None,
        "account_role": me.account.role if me.account.name else None,
        "via": me.via,
        "csrf_token": me.csrf or None,
    }


@router.get("/api/openapi.json", include_in_schema=False)
def api_description(request: Request, me: Identity = Depends(viewer)) -> dict[str, Any]:
    """The OpenAPI description of /api, for viewers and operators only: it maps every route."""
    description: dict[str, Any] = request.app.openapi()
    return description
