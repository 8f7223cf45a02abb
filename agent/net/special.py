"""The IANA special-purpose address registries, as tables, and the one function that reads them.

Sources (RFC 6890 defines the registries; their contents as published in 2026):
- IANA IPv4 Special-Purpose Address Registry,
  https://www.iana.org/assignments/iana-ipv4-special-registry/
- IANA IPv6 Special-Purpose Address Registry,
  https://www.iana.org/assignments/iana-ipv6-special-registry/
- plus what lies outside every registry's "globally reachable" space: IPv4 multicast
  (224.0.0.0/4, the IPv4 Multicast Address Space Registry, RFC 5771) and, for IPv6, everything
  outside 2000::/3, the only Global Unicast block of the IANA IPv6 Address Space registry (which
  is how fec0::/10, the site-local block RFC 3879 deprecated, and ff00::/8 multicast are caught).

Every entry is refused by the network guard, including the few the registry marks globally
reachable (anycast for PCP and TURN reaches the nearest such server, often the local router; AS112
and AMT are infrastructure): a web tool never needs one. The column is kept for the record. The
private-use, shared (CGNAT) and unique-local blocks are `lan`: an operator may open them for a
host named in HEARTH_NET_PRIVATE_HOSTS. `ipaddress.is_global` is not the rule; it is only a last
check behind these tables.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class Entry:
    network: Network
    name: str
    rfc: str
    globally_reachable: bool | None  # the registry's column; None where it says N/A
    lan: bool = False  # a block an operator may open for a named LAN host
    embedded: bool = False  # judged by the IPv4 address it carries (6to4), not refused as such

    def phrase(self) -> str:
        return f"{self.name} ({self.network}, {self.rfc})"


def _e(network: str, name: str, rfc: str, reachable: bool | None, lan: bool = False, embedded: bool = False) -> Entry:
    return Entry(ipaddress.ip_network(network), name, rfc, reachable, lan, embedded)


IPV4_SPECIAL = (
    _e("0.0.0.0/8", 'a "this network" address', "RFC 791", False),
    _e("0.0.0.0/32", 'the "this host on this network" address', "RFC 1122", False),
    _e("10.0.0.0/8", "a private address", "RFC 1918", False, lan=True),
    _e("100.64.0.0/10", "a CGNAT (shared address space) address", "RFC 6598", False, lan=True),
    _e("127.0.0.0/8", "a loopback address", "RFC 1122", False),
    _e("169.254.0.0/16", "a link-local address", "RFC 3927", False),
    _e("172.16.0.0/12", "a private address", "RFC 1918", False, lan=True),
    _e("192.0.0.0/24", "an IETF protocol assignments address", "RFC 6890", False),
    _e("192.0.0.0/29", "an IPv4 service continuity address", "RFC 7335", False),
    _e("192.0.0.8/32", "the IPv4 dummy address", "RFC 7600", False),
    _e("192.0.0.9/32", "the Port Control Protocol anycast address", "RFC 7723", True),
    _e("192.0.0.10/32", "the TURN anycast address", "RFC 8155", True),
    _e("192.0.0.170/31", "a NAT64/DNS64 discovery address", "RFC 8880", False),
    _e("192.0.2.0/24", "a documentation address (TEST-NET-1)", "RFC 5737", False),
    _e("192.31.196.0/24", "an AS112-v4 address", "RFC 7535", True),
    _e("192.52.193.0/24", "an AMT address", "RFC 7450", True),
    _e("192.88.99.0/24", "a deprecated 6to4 relay anycast address", "RFC 7526", False),
    _e("192.168.0.0/16", "a private address", "RFC 1918", False, lan=True),
    _e("192.175.48.0/24", "a direct delegation AS112 service address", "RFC 7534", True),
    _e("198.18.0.0/15", "a benchmarking address", "RFC 2544", False),
    _e("198.51.100.0/24", "a documentation address (TEST-NET-2)", "RFC 5737", False),
    _e("203.0.113.0/24", "a documentation address (TEST-NET-3)", "RFC 5737", False),
    _e("240.0.0.0/4", "a reserved address", "RFC 1112", False),
    _e("255.255.255.255/32", "the broadcast address", "RFC 919", False),
    _e("224.0.0.0/4", "a multicast address", "RFC 5771", False),  # the multicast registry, not this one
)

IPV6_SPECIAL = (
    _e("::1/128", "a loopback address", "RFC 4291", False),
    _e("::/128", "the unspecified address", "RFC 4291", False),
    _e("::ffff:0:0/96", "an IPv4-mapped IPv6 address", "RFC 4291", False),
    _e("64:ff9b::/96", "a NAT64 address", "RFC 6052", True),
    _e("64:ff9b:1::/48", "a local-use NAT64 address", "RFC 8215", False),
    _e("100::/64", "a discard-only address", "RFC 6666", False),
    _e("100:0:0:1::/64", "a dummy IPv6 prefix address", "RFC 9780", False),
    _e("2001::/23", "an IETF protocol assignments address", "RFC 2928", False),
    _e("2001::/32", "a Teredo address", "RFC 4380", None),
    _e("2001:1::1/128", "the Port Control Protocol anycast address", "RFC 7723", True),
    _e("2001:1::2/128", "the TURN anycast address", "RFC 8155", True),
    _e("2001:1::3/128", "the DNS-SD service registration protocol anycast address", "RFC 9665", True),
    _e("2001:2::/48", "a benchmarking address", "RFC 5180", False),
    _e("2001:3::/32", "an AMT address", "RFC 7450", True),
    _e("2001:4:112::/48", "an AS112-v6 address", "RFC 7535", True),
    _e("2001:10::/28", "a deprecated ORCHID address", "RFC 4843", False),
    _e("2001:20::/28", "an ORCHIDv2 address", "RFC 7343", True),
    _e("2001:30::/28", "a drone remote ID (DET) address", "RFC 9374", True),
    _e("2001:db8::/32", "a documentation address", "RFC 3849", False),
    _e("2002::/16", "a 6to4 address", "RFC 3056", None, embedded=True),
    _e("2620:4f:8000::/48", "a direct delegation AS112 service address", "RFC 7534", True),
    _e("3fff::/20", "a documentation address", "RFC 9637", False),
    _e("5f00::/16", "a segment routing (SRv6) SID", "RFC 9602", False),
    _e("fc00::/7", "a unique-local (private) address", "RFC 4193", False, lan=True),
    _e("fe80::/10", "a link-local address", "RFC 4291", False),
    _e("fec0::/10", "a site-local address (deprecated)", "RFC 3879", False),  # the address space registry
    _e("ff00::/8", "a multicast address", "RFC 4291", False),
)

_GLOBAL_UNICAST_V6 = ipaddress.ip_network("2000::/3")
_OUTSIDE_V6 = Entry(
    ipaddress.ip_network("::/0"), "an address outside IPv6 global unicast (2000::/3)", "RFC 4291", False
)


def special_purpose(ip: Address) -> Entry | None:
    """The most specific registry entry holding `ip`, or None for an ordinary public address."""
    table = IPV4_SPECIAL if isinstance(ip, ipaddress.IPv4Address) else IPV6_SPECIAL
    found = [entry for entry in table if ip in entry.network]
    if found:
        return max(found, key=lambda entry: entry.network.prefixlen)
    if isinstance(ip, ipaddress.IPv6Address) and ip not in _GLOBAL_UNICAST_V6:
        return _OUTSIDE_V6
    return None
