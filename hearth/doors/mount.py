"""Where the doors meet the command center: /v1 and /mcp go to their own apps, outside its Guard.

The Guard reads `Authorization: Bearer` as a viewer or operator token; a `/v1` call carries a key
instead (hearth/doors/keys.py), and an MCP client speaks its own protocol. So this ASGI layer,
inside the body limit and outside the Guard, hands those two prefixes to their apps, each of which
keeps the command center's Host check and headers; everything else goes on to the Guard.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hearth.web.context import Web

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


class Doors:
    def __init__(self, app: ASGIApp, doors: dict[str, ASGIApp]) -> None:
        self.app, self.doors = app, doors

    async def __call__(
        self, scope: Scope, receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]
    ) -> None:
        if scope["type"] == "http":
            path: str = scope["path"]
            for prefix, door in self.doors.items():
                if path == prefix or path.startswith(prefix + "/"):
                    return await door(scope, receive, send)
        return await self.app(scope, receive, send)


class McpDoor:
    """`/mcp` on `hearth serve`: the SDK's streamable HTTP app behind the command center's walls.

    Host as the command center answers; `Authorization: Bearer` with the viewer or operator token
    or a user's own token (checked in the Throttle's turn, as the Guard does), or, on a server without
    tokens (loopback), an owner as everyone there is; a browser's foreign Origin is refused (a page
    must not drive it). The user goes on the scope's state, where hearth/doors/mcpserver.py's tools
    read it and ask hearth/users/access.py before each act.
    """

    def __init__(self, web: Web) -> None:
        from mcp.server.transport_security import TransportSecuritySettings

        from hearth.doors.mcpserver import build, http_role

        self.web = web
        self.server = build(web.config.settings, http_role)
        # the Host and Origin checks are done here, with the command center's own list of names
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        self.app = self.server.streamable_http_app(streamable_http_path="/mcp", transport_security=security)

    def running(self) -> AbstractAsyncContextManager[None]:
        """The SDK's session manager, run for as long as the command center is up."""
        return self.server.session_manager.run()

    async def __call__(
        self, scope: Scope, receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]
    ) -> None:
        from hearth.users.access import shell_owner
        from hearth.web.security import HEADERS, WebError, checked_account

        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        config = self.web.config
        try:
            if headers.get("host", "").lower() not in config.allowed_hosts:
                raise WebError(400, f"Host {headers.get('host', '')!r} is not one this server answers to")
            origin, own = headers.get("origin"), f"{scope.get('scheme', 'http')}://{headers.get('host', '')}"
            if origin is not None and origin.lower() != own.lower():
                raise WebError(403, f"refused: /mcp answers no page of another origin (Origin {origin!r})")
            auth = headers.get("authorization", "")
            if auth.lower().startswith("bearer "):
                client = scope["client"][0] if scope.get("client") else "?"
                account = await checked_account(auth[7:].strip(), config, self.web.throttle, client, self.web.reader)
                if account is None:
                    raise WebError(401, "wrong token")
            elif config.open:
                account = shell_owner("local")
            else:
                raise WebError(401, "a viewer or operator token is needed: Authorization: Bearer TOKEN")
        except WebError as exc:
            from starlette.responses import JSONResponse

            answer = JSONResponse({"error": exc.reason}, status_code=exc.status, headers=HEADERS)
            return await answer(scope, receive, send)
        scope.setdefault("state", {})["hearth_user"] = account
        await self.app(scope, receive, send)
