"""One network guard for every network tool: which URLs may be reached, and at which addresses.

`NetGuard.check(url)` parses and normalises the URL, resolves EVERY address of its host through
the injected resolver, and refuses the whole request if any one of them is not a public address
(or, for a host the operator named, a private LAN one). The returned `Target` carries the checked
addresses; `agent/net/client.py` connects to those and to nothing else, so a DNS answer that
changes between the check and the connection (rebinding) is never asked for.

Refused, in every spelling: schemes other than http/https; user info in the URL; every address
in the IANA special-purpose registries (agent/net/special.py: loopback, private, link-local,
CGNAT, documentation, benchmarking, reserved, the dummy and protocol-assignment blocks, site-local
and all IPv6 outside 2000::/3, multicast); IPv4-mapped, IPv4-compatible, NAT64, 6to4-of-private
and Teredo IPv6 addresses; cloud metadata addresses and names. Hosts are normalised before any decision: NFKC (full-width
letters, digits and dots), IDNA, a trailing dot, and the WHATWG IPv4 forms (decimal `2130706433`,
octal `0177.0.0.1`, hex `0x7f.1`, short `127.1`), so a spelling cannot slip past the checks.

Testing without weakening the guard: there is no switch that allows loopback. Tests inject a
resolver that maps public-looking test names to public stand-in addresses, and a connector
(see agent/net/client.py) that carries a connection to a stand-in to a local server on 127.0.0.1. The
guard checks exactly what it checks in production; only the last hop of the socket differs.

Errors (one line each)::

    NetError              a network tool could not do what was asked
    ├── NetRefused        the guard refused: scheme, address, egress list, redirects, headers
    │   └── CredentialRefused   a cred:NAME that may not be used: odd, unlisted or unknown name,
    │                           another host (raised by the appliance's resolver); or a request
    │                           carrying a credential's value toward a host it is not bound to
    └── FetchFailed       the request was allowed but failed: DNS, connect, timeout, size, type
"""

from __future__ import annotations

import ipaddress
import re
import socket
import ssl
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from agent.errors import AgentError
from agent.safety.display import shorten
from agent.safety.redaction import SecretFinder

if TYPE_CHECKING:
    from agent.services import RunServices

IP = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]
# (ip, port, timeout_s) -> an httpcore NetworkStream; typed loosely so this module needs no httpcore
Connector = Callable[[str, int, float | None], Any]
Record = Callable[[str, dict[str, Any]], None]  # (kind, detail) -> kept in the run's audit

DEFAULT_PORTS = {"http": 80, "https": 443}
_LABEL = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$")
_IPV4_PART = re.compile(r"^(?:0x[0-9a-f]*|[0-9]+)$")
_BAD_URL_CHARS = re.compile(r"[\x00-\x20\x7f\\]")
METADATA_NAMES = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
    }
)
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",
        "169.254.170.2",
        "169.254.169.253",
        "100.100.100.200",
        "192.0.0.192",
        "fd00:ec2::254",
        "fd00:ec2::23",
    )
)
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_IPV4_COMPAT = ipaddress.ip_network("::/96")


class NetError(AgentError):
    """A network tool failed; str(error) is the one line the model reads."""


class NetRefused(NetError):
    """The guard will not let this request (or this hop of it) happen."""


class FetchFailed(NetError):
    """The request was allowed but did not succeed."""


@dataclass(frozen=True)
class Target:
    """A checked URL: what to send, and the only addresses a connection may go to."""

    url: str  # normalised: ASCII host, explicit path, no fragment
    scheme: str
    host: str  # ASCII host name or canonical IP text (no brackets)
    port: int
    addresses: tuple[str, ...]

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)


@dataclass(frozen=True)
class ParsedURL:
    scheme: str
    host: str
    port: int
    target: str  # path and query

    @property
    def url(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        port = "" if DEFAULT_PORTS[self.scheme] == self.port else f":{self.port}"
        return f"{self.scheme}://{shown}{port}{self.target}"


def system_resolver(host: str, port: int) -> list[str]:
    """Every address the system resolver gives for host (IPv4 and IPv6), in its order."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        raise FetchFailed(f"cannot resolve host {host}: {exc.strerror}") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass
class NetGuard:
    """The policy of one run: where its network tools may go. See the module docstring."""

    resolver: Resolver = system_resolver
    connector: Connector | None = None  # None: the client's default, a plain TCP connection
    egress: tuple[str, ...] = ()  # host patterns this run may reach; empty: any public host
    private_hosts: frozenset[str] = field(default_factory=frozenset)  # operator-named LAN hosts
    ssl_context: ssl.SSLContext | None = None  # None: the default CA bundle (an operator may add a LAN CA)
    secrets: SecretFinder = field(default_factory=SecretFinder)  # every credential value and its hosts
    record: Record | None = None  # the audit's ear for the guard's decisions (None: not recorded)

    def __post_init__(self) -> None:
        self.egress = tuple(normalize_pattern(p) for p in self.egress)
        self.private_hosts = frozenset(normalize_host(h) for h in self.private_hosts)

    def note(self, kind: str, **detail: Any) -> None:
        """A decision worth keeping (a credential used or refused, a header dropped at a redirect)."""
        if self.record is not None:
            self.record(kind, detail)

    def refuse_secrets(self, host: str, where: str, text: str | bytes | None) -> None:
        """CredentialRefused when `text` carries, in any spelling, a credential not bound to `host`;
        the message names the credential and the host, never the value."""
        found = self.secrets.find(text, lambda hosts: matching(host, hosts))
        if found is None:
            return
        reason = (
            f"refused a request to {self.secrets.mask(host)}: its {where} carries the value of credential {found.name!r} "
            f"({found.encoding}), which may be sent only to {', '.join(found.hosts) or 'no host'}"
        )
        self.note("credential", name=found.name, host=self.secrets.mask(host), verdict="refused", reason=reason)
        raise CredentialRefused(reason)

    def check(self, url: str) -> Target:
        try:
            parsed = parse_url(url)
        except NetRefused:
            self.refuse_secrets(_rough_host(url), "URL", url)  # a refused URL still names what it carried
            raise
        self.refuse_secrets(parsed.host, "URL", url)
        self.check_host(parsed.host)
        addresses = [parsed.host] if _is_ip(parsed.host) else self._resolve(parsed.host, parsed.port)
        lan_ok = parsed.host in self.private_hosts
        for address in addresses:
            problem = address_problem(ipaddress.ip_address(address), lan_ok=lan_ok)
            if problem:
                via = "" if address == parsed.host else f"{parsed.host} resolves to {address}, "
                raise NetRefused(
                    f"refused {parsed.url}: {via}{address} is {problem}; hearth connects only to public addresses"
                )
        return Target(parsed.url, parsed.scheme, parsed.host, parsed.port, tuple(addresses))

    def check_host(self, host: str) -> None:
        """Refusals by name alone: local and metadata names, and the run's egress allow list."""
        if host == "localhost" or host.endswith(".localhost") or host in METADATA_NAMES:
            raise NetRefused(f"refused host {host}: it names this machine or a cloud metadata service")
        if self.egress and not any(host_matches(host, p) for p in self.egress):
            raise NetRefused(f"refused host {host}: not in this run's egress allow list ({', '.join(self.egress)})")

    def _resolve(self, host: str, port: int) -> list[str]:
        try:
            raw = self.resolver(host, port)
        except NetError:
            raise
        except OSError as exc:
            raise FetchFailed(f"cannot resolve host {host}: {exc.strerror or exc}") from None
        addresses = []
        for item in raw:
            try:  # a scoped answer (fe80::1%eth0) is link-local anyway; keep the address part
                addresses.append(str(ipaddress.ip_address(str(item).split("%", 1)[0])))
            except ValueError:
                raise NetRefused(f"refused host {host}: the resolver answered {item!r}, not an address") from None
        if not addresses:
            raise FetchFailed(f"cannot resolve host {host}: no addresses")
        return list(dict.fromkeys(addresses))


def _rough_host(url: str) -> str:
    try:
        return urlsplit(str(url).strip()).hostname or "an unparsable host"
    except ValueError:
        return "an unparsable host"


def parse_url(url: str) -> ParsedURL:
    """Split and normalise an http(s) URL; NetRefused names what is wrong with it."""
    if not isinstance(url, str) or not url.strip():
        raise NetRefused("no URL given")
    text = url.strip()
    if _BAD_URL_CHARS.search(text):
        raise NetRefused(f"refused URL {shorten(text)!r}: it contains spaces, control characters or backslashes")
    try:
        parts = urlsplit(text)
    except ValueError as exc:
        raise NetRefused(f"refused URL {shorten(text)!r}: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise NetRefused(f"refused URL {shorten(text)!r}: only http and https URLs can be fetched")
    if "@" in parts.netloc:
        raise NetRefused(f"refused URL {shorten(text)!r}: user info (user@host) is not accepted in URLs")
    host, port = _split_netloc(parts.netloc, scheme, text)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return ParsedURL(scheme, host, port, target)


def _split_netloc(netloc: str, scheme: str, url: str) -> tuple[str, int]:
    if netloc.startswith("["):
        inside, close, rest = netloc[1:].partition("]")
        if not close or (rest and not rest.startswith(":")):
            raise NetRefused(f"refused URL {shorten(url)!r}: malformed IPv6 host")
        host, port_text = f"[{inside}]", rest[1:] if rest else ""
    else:
        host, _, port_text = netloc.rpartition(":") if ":" in netloc else (netloc, "", "")
    port = DEFAULT_PORTS[scheme]
    if port_text:
        if not port_text.isascii() or not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise NetRefused(f"refused URL {shorten(url)!r}: bad port {port_text!r}")
        port = int(port_text)
    return normalize_host(host), port


def normalize_host(raw: str) -> str:
    """The one spelling every check uses: ASCII lower-case name, or canonical IP text."""
    text = unicodedata.normalize("NFKC", raw).replace("\u3002", ".").strip().lower()
    if text.startswith("[") and text.endswith("]"):
        return _ipv6_literal(text[1:-1], raw)
    if text.endswith("."):
        text = text[:-1]
    if not text:
        raise NetRefused(f"refused host {raw!r}: empty host")
    if not text.isascii():
        text = _idna(text, raw)
    labels = text.split(".")
    if _IPV4_PART.match(labels[-1]):  # WHATWG: a host ending in a number is an IPv4 address
        return str(_parse_ipv4(labels, raw))
    if len(text) > 253 or not all(_LABEL.match(label) for label in labels):
        raise NetRefused(f"refused host {raw!r}: not a valid host name")
    return text


def _ipv6_literal(inside: str, raw: str) -> str:
    if "%" in inside:
        raise NetRefused(f"refused host {raw!r}: IPv6 zone identifiers are not accepted")
    try:
        return str(ipaddress.IPv6Address(inside))
    except ValueError:
        raise NetRefused(f"refused host {raw!r}: not a valid IPv6 address") from None


def _idna(text: str, raw: str) -> str:
    try:
        return ".".join(
            label.encode("idna").decode("ascii") if not label.isascii() else label for label in text.split(".")
        )
    except UnicodeError:
        raise NetRefused(f"refused host {raw!r}: not a valid internationalised host name") from None


def _parse_ipv4(labels: list[str], raw: str) -> ipaddress.IPv4Address:
    """The WHATWG IPv4 parser: 1 to 4 parts, each decimal, 0-octal or 0x-hex; the last fills the rest."""
    if len(labels) > 4 or not all(_IPV4_PART.match(part) for part in labels):
        raise NetRefused(f"refused host {raw!r}: not a valid IPv4 address")
    numbers = [_ipv4_number(part) for part in labels]
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(numbers)):
        raise NetRefused(f"refused host {raw!r}: not a valid IPv4 address")
    value = last
    for index, number in enumerate(head):
        value += number << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


def _ipv4_number(part: str) -> int:
    if part.startswith("0x"):
        return int(part[2:] or "0", 16)
    if len(part) > 1 and part.startswith("0"):
        if not set(part) <= set("01234567"):
            raise NetRefused(f"refused host part {part!r}: not a valid octal number")
        return int(part, 8)
    return int(part)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def address_problem(ip: IP, *, lan_ok: bool = False) -> str | None:
    """Why hearth will not connect to ip (a phrase), or None when it may.

    The rule is the tables of agent/net/special.py (the IANA special-purpose registries): an
    address in any entry is refused, a LAN block only unless `lan_ok`. Metadata addresses and
    IPv6 forms that carry an IPv4 address come first; `is_global` is a last check behind them.
    """
    if ip in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if isinstance(ip, ipaddress.IPv6Address):
        problem = _ipv6_embedding(ip)
        if problem:
            return problem
    from agent.net.special import special_purpose  # the tables load with the first address checked

    entry = special_purpose(ip)
    if entry is not None and not entry.embedded:
        return None if entry.lan and lan_ok else entry.phrase()
    if not ip.is_global and entry is None:
        return "not a globally routable address"
    return None


def is_metadata(ip: IP) -> bool:
    """Whether ip is a cloud metadata service's, plainly or carried in an IPv6 form (mapped,
    compatible, NAT64, 6to4, Teredo): never this machine nor the LAN, whatever an operator allows."""
    if ip in METADATA_ADDRESSES:
        return True
    if not isinstance(ip, ipaddress.IPv6Address):
        return False
    low = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    carried = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
    if carried is None and (ip in _IPV4_COMPAT or any(ip in net for net in _NAT64)):
        carried = low
    return carried in METADATA_ADDRESSES


def _ipv6_embedding(ip: ipaddress.IPv6Address) -> str | None:
    """IPv6 forms that carry an IPv4 address and could reach it: refused whatever they carry."""
    if ip.ipv4_mapped is not None:
        return "an IPv4-mapped IPv6 address"
    if ip in _IPV4_COMPAT and int(ip) > 1:
        return "an IPv4-compatible IPv6 address"
    if any(ip in net for net in _NAT64):
        return "a NAT64 address"
    if ip.teredo is not None:
        return "a Teredo address"
    if ip.sixtofour is not None and address_problem(ip.sixtofour):
        return f"a 6to4 address of {ip.sixtofour}"
    return None


def normalize_pattern(pattern: str) -> str:
    """An egress or binding pattern: a host name, or `*.` plus a domain (its subdomains only)."""
    text = pattern.strip()
    if text.startswith("*."):
        return "*." + normalize_host(text[2:])
    return normalize_host(text)


def host_matches(host: str, pattern: str) -> bool:
    if pattern.startswith("*."):
        return host.endswith(pattern[1:]) and host != pattern[2:]
    return host == pattern


def matching(host: str, patterns: Iterable[str]) -> bool:
    return any(host_matches(host, p) for p in patterns)


class CredentialRefused(NetRefused):
    """A `cred:NAME` that may not be used here: unknown, unlisted, odd name, or another host."""


def run_guard(services: RunServices) -> NetGuard:
    """The run's network guard (`services.net`), else the default one (public addresses only,
    system DNS)."""
    if services.net is None:
        return NetGuard()
    if not isinstance(services.net, NetGuard):
        raise TypeError(f"a run's network guard must be a NetGuard, not {type(services.net).__name__}")
    return services.net
