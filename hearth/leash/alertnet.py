"""Alerts are a network client too: where an alert destination may be, and the only way a send goes out.

The address policy is the network guard's (agent/net/guard.py, the special-purpose tables of
agent/net/special.py): loopback, link-local (169.254.169.254), private LAN, CGNAT and every other
special-purpose address is refused, unless alerts.toml names that exact destination as local
(``local = true`` on the [[destination]]), which `hearth alerts` and `hearth doctor` show.

- At load (`refusal`): a URL whose host is an address literal or a name of this machine or a
  cloud metadata service is refused with the reason, so doctor and `hearth alerts test` say so.
  A metadata service is neither this machine nor the LAN: `local = true` does not let a
  destination reach it, at load (`metadata_refusal`) nor at send (whatever its name resolves to).
- At send (`send`): apprise runs in a child process (hearth/leash/alertsend.py) whose HTTP and
  HTTPS go through a CommandProxy (agent/net/cmdproxy.py) in this process: every connection of
  the send, redirects included, is resolved then and checked by the guard, and connected to the
  checked address only. A redirect to a refused address gets a 403 and is not followed. The child
  connects to nothing but that proxy, and (for a destination apprise reaches without HTTP, such as
  mailto://) to the addresses its host resolved to here and passed the same check: an audit hook
  there refuses every other connect. Nothing in this process is patched.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from agent.net.cmdproxy import CommandProxy
from agent.net.guard import (
    METADATA_NAMES,
    NetError,
    NetGuard,
    NetRefused,
    Target,
    address_problem,
    is_metadata,
    normalize_host,
    parse_url,
    system_resolver,
)

SEND_TIMEOUT_S = 60.0  # the child's whole send (apprise's own timeouts are shorter)
_AUTHORITY = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/?#]*@)?(\[[^\]]*\]|[^:/?#]*)(?::(\d+))?")


@dataclass(frozen=True)
class Origin:
    host: str  # normalised, as the guard compares hosts
    port: int


def url_host(url: str) -> str:
    """The host part of an apprise URL as written ('' when it has none)."""
    found = _AUTHORITY.match(url)
    return found.group(1).strip("[]") if found else ""


def refusal(url: str) -> str | None:
    """Why a destination URL, not marked local, is refused before anything is resolved; None when
    only the send's resolution can tell."""
    host = url_host(url).lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost") or host in METADATA_NAMES:
        return f"{host} names this machine or a cloud metadata service"
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return None
    problem = address_problem(ip)
    return f"{host} is {problem}" if problem else None


def metadata_refusal(url: str) -> str | None:
    """Why a destination is refused even when marked local: a cloud metadata service (by name, or
    at an address in any spelling) is neither this machine nor the LAN."""
    host = url_host(url)
    try:
        normal = normalize_host(f"[{host}]" if ":" in host else host)
    except NetError:
        return None  # not a host the guard would connect to anyway
    if normal in METADATA_NAMES:
        return f"{host} names a cloud metadata service"
    if _is_address(normal) and is_metadata(ipaddress.ip_address(normal)):
        return f"{host} is a cloud metadata address"
    return None


def origin(url: str) -> Origin | None:
    """Where a local destination connects, as apprise reads its URL (None: apprise names no host)."""
    import apprise

    plugin = apprise.Apprise.instantiate(url)
    host = getattr(plugin, "host", None)
    if not isinstance(host, str) or not host or url_host(url).strip("[]").lower() != host.strip("[]").lower():
        return None
    port = getattr(plugin, "port", None) or (443 if getattr(plugin, "secure", False) else 80)
    try:
        return Origin(normalize_host(host.strip("[]") if ":" in host else host), int(port))
    except (NetError, ValueError):
        return None


class AlertGuard(NetGuard):
    """The network guard, plus the one destination alerts.toml marked local (any address it resolves to)."""

    def __init__(self, local: Origin | None = None) -> None:
        super().__init__()
        self.local = local

    def check(self, url: str) -> Target:
        parsed = parse_url(url)
        if self.local is not None and (parsed.host, parsed.port) == (self.local.host, self.local.port):
            if parsed.host in METADATA_NAMES:
                raise NetRefused(f"refused {parsed.url}: {parsed.host} names a cloud metadata service{_NEVER}")
            addresses = [parsed.host] if _is_address(parsed.host) else self._resolve(parsed.host, parsed.port)
            for address in addresses:
                if is_metadata(ipaddress.ip_address(address)):
                    via = "" if address == parsed.host else f"{parsed.host} resolves to {address}, "
                    raise NetRefused(f"refused {parsed.url}: {via}{address} is a cloud metadata address{_NEVER}")
            return Target(parsed.url, parsed.scheme, parsed.host, parsed.port, tuple(addresses))
        return super().check(url)


# a metadata service answers anyone on the box with its credentials: local = true does not reach it
_NEVER = "; alerts never go there, local = true or not"


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def direct_addresses(url: str, local: Origin | None) -> list[tuple[str, int]]:
    """Where the child may connect without the proxy (a destination apprise reaches without HTTP):
    its host's addresses at its port, resolved now, each passing the guard's check (a local one's: any)."""
    try:
        where = local or origin(url)
        if where is None:
            return []
        addresses = [where.host] if _is_address(where.host) else system_resolver(where.host, where.port)
    except (NetError, ValueError):
        return []
    if local is None:
        addresses = [a for a in addresses if address_problem(ipaddress.ip_address(a)) is None]
    return [(a, where.port) for a in addresses if not is_metadata(ipaddress.ip_address(a))]


def send(url: str, title: str, body: str, *, local: Origin | None, secrets: Sequence[str] = ()) -> str:
    """One send through the guard; the error ('' when sent). `secrets` (the credential values in
    the URL) are redacted from the child's log lines; with HEARTH_LOG_LEVEL its log goes to stderr."""
    proxy = CommandProxy(AlertGuard(local))
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    port = listener.getsockname()[1]
    proxy.attach(listener)
    job = {
        "url": url,
        "title": title,
        "body": body,
        "proxy": ["127.0.0.1", port],
        "direct": direct_addresses(url, local),
        "secrets": list(secrets),
    }
    try:
        done = subprocess.run(
            [sys.executable, "-P", "-m", "hearth.leash.alertsend"],  # -P: the cwd is never on its path
            input=json.dumps(job),
            stdout=subprocess.PIPE,
            stderr=None if os.environ.get("HEARTH_LOG_LEVEL") else subprocess.PIPE,  # its log: the journal's
            text=True,
            env=_sender_env(port),
            timeout=SEND_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return f"the send took longer than {SEND_TIMEOUT_S:.0f} s and was ended"
    finally:
        proxy.detach(listener)
    return _answer(done, [c.reason for c in proxy.drain() if not c.allowed and c.reason])


def _sender_env(port: int) -> dict[str, str]:
    """The child's environment: this one's, its proxy variables pointing at the guard's proxy."""
    env = {k: v for k, v in os.environ.items() if k.lower() not in _PROXY_VARS}
    # the same modules as this process (a wrapped program's path is set in its script, not the environment)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env.update(dict.fromkeys(("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"), f"http://127.0.0.1:{port}"))
    return env


def _answer(done: subprocess.CompletedProcess[str], refused: list[str]) -> str:
    """The child's error ('' when sent), or the guard's last refusal when it failed through one."""
    try:
        error = str(json.loads(done.stdout.strip().splitlines()[-1])["error"])
    except (ValueError, IndexError, KeyError, TypeError):
        error = ((done.stderr or "").strip().splitlines() or ["the alert sender failed"])[-1][:500]
    return refused[-1] if error and refused else error  # the guard's reason says more than apprise's 403


_PROXY_VARS = frozenset({"http_proxy", "https_proxy", "all_proxy", "no_proxy", "ftp_proxy"})
