"""An http MCP server as a run reaches it: through the run's network guard, like any request.

The SDK's HTTP client is sent through a guard proxy (agent/net/cmdproxy.py, the one commands use)
listening on a loopback port of hearth's own process: every request is checked by the run's
`NetGuard` (public addresses only after DNS, a LAN host only if the operator named it, loopback
never, the run's egress list) and connected to the checked address; each connection, allowed or
refused, is an `mcp` step of the run. A header's `cred:NAME` becomes the credential's value only
if the store binds that credential to the server's host; each use is a `credential` step."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from agent.net.cmdproxy import CommandProxy
from agent.net.guard import NetGuard, matching
from agent.tools.mcp.client import Connection, Launch, McpFailed
from hearth.credentials import CredentialStore
from hearth.mcp.config import ServerConfig
from hearth.settings import Settings

Record = Callable[[str, dict[str, Any]], None]


def remote(config: ServerConfig, settings: Settings, guard: NetGuard | None, record: Record | None) -> Connection:
    """The http server's connection (not started); without `guard` (the operator's own review) it
    goes straight to the url. McpFailed when a credential may not be sent there."""
    note = record or (lambda kind, detail: None)
    headers = _headers(config, settings, note)
    if guard is None:
        return Connection(config.name, Launch(url=config.url, headers=headers))
    proxy = CommandProxy(guard)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    proxy.attach(listener)
    where = f"http://127.0.0.1:{listener.getsockname()[1]}"
    server = Connection(config.name, Launch(url=config.url, proxy=where, headers=headers))
    server.after_call = lambda: record_connections(proxy, config.name, note)
    server.after_close.append(lambda: proxy.detach(listener))
    return server


def record_connections(proxy: CommandProxy, server: str, note: Record) -> None:
    """Each connection the proxy made since it was last asked, as an `mcp` step of the run."""
    for c in proxy.drain():
        verdict = "allowed" if c.allowed else "refused"
        why = f": {c.reason}" if c.reason else ""
        line = f"{server}: {c.method} {c.host}:{c.port} {verdict}{why} ({c.bytes_up} bytes up, {c.bytes_down} down)"
        note("mcp", {"server": server, "verdict": verdict, "host": c.host, "port": c.port, "line": line})


def _headers(config: ServerConfig, settings: Settings, note: Record) -> dict[str, str]:
    """The headers with each cred:NAME made its value, for the url's host only."""
    from agent.net.client import CRED_TOKEN

    host = (urlsplit(config.url).hostname or "").lower()
    store = CredentialStore(settings.credentials_path, settings.credentials_dir)

    def value(match: Any) -> str:
        name = match.group(1)
        data = store.load()
        hosts = data.get(name, {}).get("hosts", [])
        found = store.value(name, data) if name in data else None
        if found is None or not matching(host, hosts):
            why = "is not in hearth's store" if name not in data else f"is bound to {', '.join(hosts) or 'no host'}"
            reason = f"credential {name!r} {why}, not to {host}"
            note("credential", {"name": name, "host": host, "verdict": "refused", "reason": reason})
            raise McpFailed(
                f"MCP server {config.name} was not started: {reason}; hearth creds set {name} --host {host}"
            )
        note("credential", {"name": name, "host": host, "verdict": "used", "reason": ""})
        return found

    return {header: CRED_TOKEN.sub(value, text) for header, text in config.headers}
