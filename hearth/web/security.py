"""The command center's walls: who may reach it, who is signed in, and what a request may change.

Host header      must be one this server answers to (a DNS-rebinding page names its own)
identity         a session cookie (from the sign-in form), or `Authorization: Bearer TOKEN`
                 for scripts; with no tokens configured (loopback only) everyone is operator
roles            viewer reads; operator also launches, decides and stops
POST             the only verb that changes anything; from a browser it carries the session's
                 CSRF token (form field `csrf` or header X-CSRF-Token) and an Origin equal to
                 the server's own. A bearer request needs no CSRF token (a browser never
                 attaches that header by itself) but a foreign Origin is refused all the same
bad tokens       compared in constant time; each failure from one address doubles the wait
                 before the next answer (up to 10 s)
every answer     a Content-Security-Policy without inline script or third-party origins
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from fastapi import Request
from starlette.responses import JSONResponse, Response

from hearth.errors import HearthError
from hearth.web.config import WebConfig

COOKIE = "hearth_session"
SESSION_TTL_S = 12 * 3600
MAX_SESSIONS = 10_000
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
ROLES = ("viewer", "operator")


class WebError(HearthError):
    """A request refused with a status and a one-line reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class SignInNeeded(WebError):
    def __init__(self) -> None:
        super().__init__(401, "sign in first: a viewer or operator token is needed")


@dataclass
class Session:
    id: str
    user: str
    role: str  # "" until signed in
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    created: float = field(default_factory=time.monotonic)


@dataclass(frozen=True)
class Identity:
    user: str
    role: str  # "", viewer or operator
    via: str  # session | bearer
    session: Session | None = None

    @property
    def decider(self) -> str:
        """How the audit names this person (`decided_by`, a stop's `by`)."""
        return f"web:{self.user}"


class Sessions:
    """Signed-in browsers, in memory (a restart signs everyone out), oldest dropped first."""

    def __init__(self) -> None:
        self._by_id: OrderedDict[str, Session] = OrderedDict()

    def new(self, user: str, role: str) -> Session:
        session = Session(secrets.token_urlsafe(32), user, role)
        self._by_id[session.id] = session
        while len(self._by_id) > MAX_SESSIONS:
            self._by_id.popitem(last=False)
        return session

    def get(self, session_id: str | None) -> Session | None:
        session = self._by_id.get(session_id or "")
        if session and time.monotonic() - session.created > SESSION_TTL_S:
            self.drop(session.id)
            return None
        return session

    def drop(self, session_id: str) -> None:
        self._by_id.pop(session_id, None)


class Throttle:
    """Failed sign-ins per client address: the n-th failure waits base * 2^(n-1) seconds."""

    def __init__(self, base_s: float, cap_s: float = 10.0, window_s: float = 900.0) -> None:
        self.base_s, self.cap_s, self.window_s = base_s, cap_s, window_s
        self._failures: dict[str, tuple[int, float]] = {}

    def fail(self, client: str) -> float:
        """Count a failure; how long to wait before answering it."""
        count, last = self._failures.get(client, (0, 0.0))
        count = 1 if time.monotonic() - last > self.window_s else count + 1
        self._failures[client] = (count, time.monotonic())
        return min(self.cap_s, self.base_s * 2 ** (count - 1))

    def ok(self, client: str) -> None:
        self._failures.pop(client, None)


def role_of(token: str, config: WebConfig) -> str | None:
    """The role a token grants, compared in constant time against every configured token."""
    found = None
    for role, expected in (config.tokens or {}).items():
        if hmac.compare_digest(token.encode(), expected.encode()):
            found = role
    return found


class Guard:
    """The HTTP middleware: Host check, identity, Origin on POST, security headers."""

    def __init__(self, config: WebConfig, sessions: Sessions, throttle: Throttle) -> None:
        self.config, self.sessions, self.throttle = config, sessions, throttle

    async def __call__(self, request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        try:
            self._check_host(request)
            new_session = await self._identify(request)
            if request.method not in ("GET", "HEAD"):
                self._check_origin(request)
        except WebError as exc:
            return _secured(JSONResponse({"error": exc.reason}, status_code=exc.status))
        response = await call_next(request)
        if new_session is not None and COOKIE not in response.headers.get("set-cookie", ""):
            set_cookie(response, new_session, request)
        return _secured(response)

    def _check_host(self, request: Request) -> None:
        host = request.headers.get("host", "").lower()
        if host not in self.config.allowed_hosts:
            raise WebError(400, f"Host {host!r} is not one this server answers to (see hearth serve --allowed-host)")

    async def _identify(self, request: Request) -> Session | None:
        """Put the Identity on request.state; a new session the response must set, if one was made."""
        auth = request.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            role = role_of(auth[7:].strip(), self.config)
            if role is None:
                await asyncio.sleep(self.throttle.fail(_client(request)))
                raise WebError(401, "wrong token")
            request.state.identity = Identity(f"token:{role}", role, "bearer")
            return None
        session = self.sessions.get(request.cookies.get(COOKIE))
        made = None
        if session is None:
            session = made = self._fresh_session()
        request.state.identity = Identity(session.user, session.role, "session", session)
        return made

    def _fresh_session(self) -> Session:
        if self.config.open:
            return self.sessions.new("local", "operator")
        return self.sessions.new("", "")

    def _check_origin(self, request: Request) -> None:
        origin = request.headers.get("origin")
        identity: Identity = request.state.identity
        if origin is None and identity.via == "bearer":
            return
        own = f"{request.url.scheme}://{request.headers.get('host', '').lower()}"
        if origin is None or origin.lower() != own:
            raise WebError(403, f"refused: a state-changing request must come from {own} (Origin {origin!r})")


async def check_csrf(request: Request) -> None:
    """The dependency of every POST route: a browser's request carries its session's CSRF token."""
    identity: Identity = request.state.identity
    if identity.via == "bearer":
        return
    token = request.headers.get("x-csrf-token")
    if token is None and "form" in request.headers.get("content-type", ""):
        value = (await request.form()).get("csrf")
        token = value if isinstance(value, str) else None
    assert identity.session is not None
    if not token or not hmac.compare_digest(token.encode(), identity.session.csrf.encode()):
        raise WebError(403, "refused: the CSRF token is missing or wrong; reload the page and try again")


def viewer(request: Request) -> Identity:
    identity: Identity = request.state.identity
    if identity.role not in ROLES:
        raise SignInNeeded()
    return identity


def operator(request: Request) -> Identity:
    identity = viewer(request)
    if identity.role != "operator":
        raise WebError(403, "refused: this needs the operator role (you are signed in as viewer)")
    return identity


def set_cookie(response: Response, session: Session, request: Request) -> None:
    response.set_cookie(
        COOKIE,
        session.id,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        max_age=SESSION_TTL_S,
        path="/",
    )


def _secured(response: Response) -> Response:
    for name, value in HEADERS.items():
        response.headers.setdefault(name, value)
    response.headers.setdefault("Cache-Control", "no-store")
    return response


def _client(request: Request) -> str:
    return request.client.host if request.client else "?"
