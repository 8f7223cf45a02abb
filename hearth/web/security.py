"""The command center's walls: who may reach it, who is signed in, and what a request may change.

body             limited before any of this, by hearth/web/limits.py (413)
Host header      must be one this server answers to (a DNS-rebinding page names its own)
identity         a session cookie (from the sign-in form), or `Authorization: Bearer TOKEN`
                 for scripts; with no tokens configured (loopback only) everyone is an owner.
                 A token is the configured operator or viewer token (the built-in users of
                 those names) or a user's own (`hearth users add`); each request reads the
                 user afresh, so a disabled user is out at once
sessions         made only at sign-in, at most so many per role: an anonymous request keeps no
                 state, so no flood of them can push a signed-in operator out
roles            viewer reads; operator and owner also see the buttons, and each act asks
                 hearth/users/access.py (launch, stop, approve per profile; managing: owners)
POST             the only verb that changes anything; from a browser it carries the session's
                 CSRF token (form field `csrf` or header X-CSRF-Token; before sign-in, a token
                 signed over a random cookie: a double submit) and an Origin equal to
                 the server's own. A bearer request needs no CSRF token (a browser never
                 attaches that header by itself) but a foreign Origin is refused all the same
bad tokens       compared in constant time, one check at a time per address and a few at once
                 in all; each failure from one address doubles the wait before its next check
                 (up to 10 s); guesses queued past a few are refused 429 unchecked
alert links      /act/TOKEN (hearth/web/routes/alert_actions.py) needs no session, no CSRF token
                 and no Origin: the token is its own authority (signed by hearth/leash/actions.py
                 for one approval and one decision, single use, expiring), and ntfy's http action
                 posts it from a phone app that sends no Origin. Host check and body limit
                 (16 KiB) stand; GET only shows what a POST would decide
every answer     a Content-Security-Policy without inline script or third-party origins
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import re
import secrets
import sqlite3
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from fastapi import Request
from starlette.responses import JSONResponse, Response

from hearth.audit.store import Rows
from hearth.errors import HearthError
from hearth.users.access import Forbidden, User, require, shell_owner, user_named, user_with_token
from hearth.web.config import WebConfig

COOKIE = "hearth_session"
CSRF_COOKIE = "hearth_csrf"  # a random nonce; the token a page carries is the server's HMAC of it
SESSION_TTL_S = 12 * 3600
ACT_PREFIX = "/act/"  # signed alert links: their token is their authority (see the table above)
SESSIONS_PER_ROLE = 1000
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
NOBODY = User("", "viewer", disabled=True)  # no one signed in: may do nothing
NONCE = re.compile(r"[A-Za-z0-9_-]{43}")  # secrets.token_urlsafe(32)


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
    account: str = ""  # the hearth user (hearth/users/): read afresh on each request
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    created: float = field(default_factory=time.monotonic)


@dataclass(frozen=True)
class Identity:
    user: str
    role: str  # "", viewer or operator
    via: str  # session | bearer | browser (no session: anonymous, or everyone on an open server)
    session: Session | None = None
    csrf: str = ""  # the token this browser's POSTs must carry
    account: User = NOBODY  # the hearth user whose rights every act is asked with

    @property
    def decider(self) -> str:
        """How the audit names this person (`decided_by`, a stop's `by`)."""
        return f"web:{self.user}"


def role_for(account: User) -> str:
    """The command center's role for a user: operator sees the buttons (each act is asked again)."""
    return "" if account.disabled else "operator" if account.operates else "viewer"


def account_of(token: str, config: WebConfig, db: Rows) -> User | None:
    """The user a token is: a configured token is its built-in user, else a user's own token."""
    role = role_of(token, config)
    if role is not None:
        return built_in(db, role)
    try:
        return user_with_token(db, token)
    except sqlite3.Error:  # no audit yet: no user has a token
        return None


def built_in(db: Rows, name: str) -> User:
    """A built-in user as the audit has it (disabled, say), or as made before the audit was."""
    try:
        found = user_named(db, name)
    except sqlite3.Error:
        found = None
    return found or User(name, "owner" if name == "operator" else "viewer", built_in=True)


class Sessions:
    """Signed-in browsers, in memory (a restart signs everyone out), made only at sign-in.

    Each role keeps at most `per_role`; past that, the oldest of the same role goes. So viewers
    signing in cannot push out an operator, and anonymous traffic, which makes none, cannot either.
    """

    def __init__(self, per_role: int = SESSIONS_PER_ROLE) -> None:
        self.per_role = per_role
        self._by_role: dict[str, OrderedDict[str, Session]] = {role: OrderedDict() for role in ROLES}

    def new(self, user: str, role: str, account: str = "") -> Session:
        session = Session(secrets.token_urlsafe(32), user, role, account)
        kept = self._by_role[role]
        for stale in [s.id for s in kept.values() if _expired(s)]:
            kept.pop(stale)
        kept[session.id] = session
        while len(kept) > self.per_role:
            kept.popitem(last=False)
        return session

    def get(self, session_id: str | None) -> Session | None:
        found = (kept.get(session_id or "") for kept in self._by_role.values())
        session = next((s for s in found if s is not None), None)
        if session is not None and _expired(session):
            self.drop(session.id)
            return None
        return session

    def drop(self, session_id: str) -> None:
        for kept in self._by_role.values():
            kept.pop(session_id, None)

    def __len__(self) -> int:
        return sum(len(kept) for kept in self._by_role.values())


def _expired(session: Session) -> bool:
    return time.monotonic() - session.created > SESSION_TTL_S


class Throttle:
    """Token checks, per client address: the n-th failure makes that address's next check wait
    base * 2^(n-1) seconds (up to cap_s) *before* it is made, and an address has one check at a
    time, so parallel guesses queue behind each other instead of waiting side by side. At most
    `in_flight` checks wait or run at once in all; past `waiting` queued guesses from one address,
    or `waiting_total` in all, a guess is refused 429 unchecked. The address is the unit: behind a
    proxy, everyone shares the proxy's.
    """

    def __init__(
        self,
        base_s: float,
        cap_s: float = 10.0,
        window_s: float = 900.0,
        *,
        in_flight: int = 8,
        waiting: int = 4,
        waiting_total: int = 64,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.base_s, self.cap_s, self.window_s = base_s, cap_s, window_s
        self.waiting, self.waiting_total, self.sleep = waiting, waiting_total, sleep
        self._failures: dict[str, tuple[int, float]] = {}
        self._queued: dict[str, tuple[int, asyncio.Lock]] = {}
        self._slots = asyncio.Semaphore(in_flight)

    def fail(self, client: str) -> float:
        """Count a failure; how long the address's next check waits."""
        count, last = self._failures.get(client, (0, 0.0))
        count = 1 if time.monotonic() - last > self.window_s else count + 1
        self._failures[client] = (count, time.monotonic())
        return self.delay(client)

    def delay(self, client: str) -> float:
        count, last = self._failures.get(client, (0, 0.0))
        if count == 0 or time.monotonic() - last > self.window_s:
            return 0.0
        return min(self.cap_s, self.base_s * 2 ** (count - 1))

    def ok(self, client: str) -> None:
        self._failures.pop(client, None)

    @contextlib.asynccontextmanager
    async def turn(self, client: str) -> AsyncIterator[None]:
        """Wait for this address's turn and a slot, then its delay; the check runs inside."""
        queued, lock = self._queued.get(client, (0, asyncio.Lock()))
        if queued > self.waiting or sum(n for n, _ in self._queued.values()) >= self.waiting_total:
            raise WebError(429, "too many token checks at once from here; wait for the answers, then try again")
        self._queued[client] = (queued + 1, lock)
        try:
            async with lock, self._slots:
                if wait := self.delay(client):
                    await self.sleep(wait)
                yield
        finally:
            left = self._queued[client][0] - 1
            if left:
                self._queued[client] = (left, lock)
            else:
                del self._queued[client]


def role_of(token: str, config: WebConfig) -> str | None:
    """The role a token grants, compared in constant time against every configured token."""
    found = None
    for role, expected in (config.tokens or {}).items():
        if hmac.compare_digest(token.encode(), expected.encode()):
            found = role
    return found


async def checked_account(token: str, config: WebConfig, throttle: Throttle, client: str, db: Rows) -> User | None:
    """account_of in the client's turn: a failure counts toward its next wait, a success clears it."""
    async with throttle.turn(client):
        account = account_of(token, config, db) if token else None
        throttle.fail(client) if account is None else throttle.ok(client)
    return account


class Guard:
    """The HTTP middleware: Host check, identity, Origin on POST, security headers."""

    def __init__(self, config: WebConfig, sessions: Sessions, throttle: Throttle, db: Rows) -> None:
        self.config, self.sessions, self.throttle, self.db = config, sessions, throttle, db
        self._key = secrets.token_bytes(32)  # signs the CSRF tokens of browsers without a session

    async def __call__(self, request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        try:
            self._check_host(request)
            nonce = await self._identify(request)
            if request.method not in ("GET", "HEAD") and not request.url.path.startswith(ACT_PREFIX):
                self._check_origin(request)
        except WebError as exc:
            return _secured(JSONResponse({"error": exc.reason}, status_code=exc.status))
        response = await call_next(request)
        if nonce is not None:
            _set_csrf_cookie(response, nonce, request)
        return _secured(response)

    def _check_host(self, request: Request) -> None:
        host = request.headers.get("host", "").lower()
        if host not in self.config.allowed_hosts:
            raise WebError(400, f"Host {host!r} is not one this server answers to (see hearth serve --allowed-host)")

    async def _identify(self, request: Request) -> str | None:
        """Put the Identity on request.state; a new CSRF nonce the response must set, if one was made."""
        auth = request.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            account = await checked_account(auth[7:].strip(), self.config, self.throttle, _client(request), self.db)
            if account is None:
                raise WebError(401, "wrong token")
            if account.disabled:
                raise WebError(403, f"refused: user {account.name!r} is disabled; an owner can enable them")
            name = f"token:{account.name}" if account.built_in else account.name
            request.state.identity = Identity(name, role_for(account), "bearer", account=account)
            return None
        session = self.sessions.get(request.cookies.get(COOKIE))
        if session is not None:
            account = self._account(session)
            ident = Identity(session.user, role_for(account), "session", session, session.csrf, account)
            request.state.identity = ident
            return None
        nonce = request.cookies.get(CSRF_COOKIE, "")
        made = None if NONCE.fullmatch(nonce) else secrets.token_urlsafe(32)
        user, role = ("local", "operator") if self.config.open else ("", "")
        account = shell_owner("local") if self.config.open else NOBODY
        request.state.identity = Identity(user, role, "browser", None, self._signed(made or nonce), account)
        return made

    def _account(self, session: Session) -> User:
        """The session's user as the audit has them now: disabled or removed since is out."""
        if session.account in ("operator", "viewer") or not session.account:
            return built_in(self.db, session.account or session.role)
        try:
            return user_named(self.db, session.account) or NOBODY
        except sqlite3.Error:
            return NOBODY

    def _signed(self, nonce: str) -> str:
        return hmac.new(self._key, nonce.encode(), hashlib.sha256).hexdigest()

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
    if not token or not identity.csrf or not hmac.compare_digest(token.encode(), identity.csrf.encode()):
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


def owner(request: Request) -> Identity:
    """Managing hearth (users, keys, missions, budgets, MCP pins, the fleet, knowledge, pausing):
    an owner's, asked of hearth/users/access.py."""
    identity = viewer(request)
    try:
        require(identity.account, "manage")
    except Forbidden as exc:
        raise WebError(403, str(exc)) from None
    return identity


def acting(identity: Identity, act: str, profile: str) -> None:
    """WebError 403 unless the signed-in user may do `act` in `profile` (the one check, asked here)."""
    try:
        require(identity.account, act, profile)
    except Forbidden as exc:
        raise WebError(403, str(exc)) from None


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


def _set_csrf_cookie(response: Response, nonce: str, request: Request) -> None:
    secure = request.url.scheme == "https"
    response.set_cookie(CSRF_COOKIE, nonce, httponly=True, samesite="strict", secure=secure, path="/")


def _secured(response: Response) -> Response:
    for name, value in HEADERS.items():
        response.headers.setdefault(name, value)
    response.headers.setdefault("Cache-Control", "no-store")
    return response


def _client(request: Request) -> str:
    return request.client.host if request.client else "?"
