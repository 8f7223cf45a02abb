"""What `hearth serve` is told: where it listens, its tokens, the hosts it answers to.

Binding anything but loopback without a token is refused: this page can start agents and
approve their commands. Tokens come from files (`--token-file`, `--viewer-token-file`), else
from systemd credentials (`operator-token`, `viewer-token` in $CREDENTIALS_DIRECTORY).
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import socket
import struct
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from hearth.errors import ConfigError
from hearth.settings import Settings

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8770
MIN_TOKEN_CHARS = 16
CREDENTIAL_NAMES = {"operator": "operator-token", "viewer": "viewer-token"}


@dataclass(frozen=True)
class WebConfig:
    settings: Settings
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    tokens: dict[str, str] | None = None  # role -> token; none: loopback, everyone is operator
    extra_hosts: tuple[str, ...] = ()  # more Host header values to answer (a name behind a proxy)
    throttle_base_s: float = 0.25
    sessions_per_role: int = 1000  # signed-in browsers kept per role; past it, that role's oldest goes
    poll_s: float = 0.05  # how often the live map looks for changes

    @property
    def open(self) -> bool:
        return not self.tokens

    @cached_property
    def allowed_hosts(self) -> frozenset[str]:
        """Host header values answered: the bound address, the loopback names, and any extra. Bound
        to a wildcard (0.0.0.0, ::), also the machine's own addresses and host names, as they were
        when the server started: a person who binds the wildcard browses to the box's address
        (tokens are still required off loopback; a rebinding page's own name is still refused)."""
        loopback = {"127.0.0.1", "localhost", "[::1]"}
        names = {self.host, *loopback} if is_loopback(self.host) else {self.host}
        if is_wildcard(self.host):
            names |= loopback | own_names()
        names |= set(self.extra_hosts)
        bare = {_bracketed(n).lower() for n in names}
        return frozenset({f"{n}:{self.port}" for n in bare} | (bare if self.port in (80, 443) else set()))


def is_wildcard(host: str) -> bool:
    return host.strip("[]") in ("0.0.0.0", "::", "")


def own_names() -> set[str]:
    """This machine's host names and the addresses of its interfaces (IPv4 and IPv6)."""
    names = {socket.gethostname(), socket.getfqdn()}
    for name in list(names):
        try:
            names |= {str(info[4][0]) for info in socket.getaddrinfo(name, None)}
        except OSError:
            pass  # a host name that does not resolve still names this machine
    names |= _interface_addresses()
    return {n.lower() for n in names if n}


def _interface_addresses() -> set[str]:
    """Every interface's addresses: IPv4 by SIOCGIFADDR, IPv6 from /proc/net/if_inet6 (Linux)."""
    found: set[str] = set()
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for _, name in socket.if_nameindex():
            request = struct.pack("256s", name.encode()[:15])
            with contextlib.suppress(OSError):
                found.add(socket.inet_ntoa(fcntl.ioctl(probe.fileno(), 0x8915, request)[20:24]))
    with contextlib.suppress(OSError):
        for line in Path("/proc/net/if_inet6").read_text().splitlines():
            raw = line.split()[0]
            address = ipaddress.IPv6Address(int(raw, 16))
            if not address.is_link_local:  # a link-local Host needs its zone, which no browser sends
                found.add(str(address))
    return found


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def read_token(path: Path, role: str) -> str:
    try:
        token = path.read_text().strip()
    except OSError as exc:
        raise ConfigError(f"cannot read the {role} token file {path}: {exc.strerror or exc}") from None
    if len(token) < MIN_TOKEN_CHARS or any(c.isspace() for c in token):
        raise ConfigError(
            f"the {role} token in {path} must be one word of at least {MIN_TOKEN_CHARS} characters "
            "(for instance: openssl rand -hex 24)"
        )
    return token


def load_tokens(operator_file: Path | None, viewer_file: Path | None, credentials_dir: Path | None) -> dict[str, str]:
    """role -> token from the files given, else from systemd's credentials directory."""
    files = {"operator": operator_file, "viewer": viewer_file}
    for role, name in CREDENTIAL_NAMES.items():
        if files[role] is None and credentials_dir is not None and (credentials_dir / name).is_file():
            files[role] = credentials_dir / name
    tokens = {role: read_token(path, role) for role, path in files.items() if path is not None}
    if len(set(tokens.values())) < len(tokens):
        raise ConfigError("the viewer and operator tokens must differ")
    return tokens


def check_bind(host: str, tokens: dict[str, str]) -> None:
    """Refuse to listen beyond loopback without a token: anyone who reaches it could launch runs."""
    if not is_loopback(host) and "operator" not in tokens and "viewer" not in tokens:
        raise ConfigError(
            f"refusing to listen on {host} without a token: anyone who reaches it could launch runs and "
            "approve commands; give --token-file FILE (operator) and/or --viewer-token-file FILE"
        )
