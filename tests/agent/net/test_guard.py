"""The network guard: hostile URLs in every spelling never connect; public test names do."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent.net.client import request
from agent.net.guard import FetchFailed, NetGuard, NetRefused, normalize_host, parse_url
from tests.netfixtures import Answer, TestNet, Tripwire, Web


@pytest.fixture
def tripwire() -> Iterator[Tripwire]:
    wire = Tripwire()
    yield wire
    wire.close()


@pytest.fixture
def web() -> Iterator[Web]:
    server = Web({"/": Answer(200, "public page")})
    yield server
    server.close()


def hostile_urls(port: int) -> list[str]:
    """Loopback, private, metadata and reserved targets, spelled every way we know of."""
    p = port
    return [
        f"http://127.0.0.1:{p}/",
        f"http://127.1:{p}/",
        f"http://0x7f.0.0.1:{p}/",
        f"http://0x7f000001:{p}/",
        f"http://0177.0.0.1:{p}/",
        f"http://017700000001:{p}/",
        f"http://2130706433:{p}/",
        f"http://127.0.0.1.:{p}/",
        f"http://１２７．０．０．１:{p}/",
        f"http://127。0。0。1:{p}/",
        f"http://0:{p}/",
        f"http://0.0.0.0:{p}/",
        f"http://[::1]:{p}/",
        f"http://[::]:{p}/",
        f"http://[::ffff:127.0.0.1]:{p}/",
        f"http://[::ffff:7f00:1]:{p}/",
        f"http://[0:0:0:0:0:ffff:127.0.0.1]:{p}/",
        f"http://[::127.0.0.1]:{p}/",
        f"http://[64:ff9b::7f00:1]:{p}/",
        f"http://[2002:7f00:1::1]:{p}/",
        f"http://[fe80::1%25lo]:{p}/",
        f"http://localhost:{p}/",
        f"http://LOCALHOST.:{p}/",
        f"http://ｌｏｃａｌｈｏｓｔ:{p}/",
        f"http://app.localhost:{p}/",
        f"http://loop.test:{p}/",
        f"http://rebind.test:{p}/",
        f"http://mapped.test:{p}/",
        f"http://v6loop.test:{p}/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/",
        "http://metadata.google.internal/",
        "http://100.100.100.200/",
        "http://10.0.0.1/",
        "http://172.16.0.1/",
        "http://192.168.1.1/",
        "http://100.64.0.1/",
        "http://224.0.0.1/",
        "http://255.255.255.255/",
        "http://240.0.0.1/",
        "http://198.18.0.1/",
        "http://[fc00::1]/",
        "http://[ff02::1]/",
        "http://private.test/",
        "http://cgnat.test/",
        "http://meta.test/",
        f"ftp://127.0.0.1:{p}/",
        "file:///etc/passwd",
        f"gopher://127.0.0.1:{p}/",
        "javascript:alert(1)",
        f"http://public.test@127.0.0.1:{p}/",
        f"http://evil.test\\@127.0.0.1:{p}/",
        f"http://127.0.0.1:{p} /",
        f"http://%31%32%37.0.0.1:{p}/",
        f"http://１２７．０．０．１：{p}/",
    ]


def hostile_net() -> TestNet:
    net = TestNet()
    net.alias("loop.test", "127.0.0.1")
    net.alias("rebind.test", "93.184.216.34", "127.0.0.1")  # one good answer does not excuse a bad one
    net.alias("mapped.test", "::ffff:127.0.0.1")
    net.alias("v6loop.test", "::1")
    net.alias("private.test", "10.1.2.3")
    net.alias("cgnat.test", "100.64.0.7")
    net.alias("meta.test", "169.254.169.254")
    return net


def test_hostile_urls_are_refused_and_a_listening_socket_sees_no_connection(tripwire: Tripwire) -> None:
    net = hostile_net()
    guard = net.guard()
    for url in hostile_urls(tripwire.port):
        with pytest.raises(NetRefused) as refused:
            request(guard, "GET", url, timeout_s=2)
        assert "\n" not in str(refused.value), url
    assert tripwire.connections() == 0
    assert net.stray == [] and net.connections == []


def test_the_same_hostile_urls_are_refused_by_the_production_connector_too(tripwire: Tripwire) -> None:
    guard = NetGuard(resolver=hostile_net().resolve)  # the real connector: a failure would really connect
    for url in hostile_urls(tripwire.port):
        with pytest.raises(NetRefused):
            request(guard, "GET", url, timeout_s=2)
    assert tripwire.connections() == 0


def test_a_redirect_to_loopback_is_refused_at_the_hop(tripwire: Tripwire) -> None:
    net = TestNet()
    for n, target in enumerate(
        [
            f"http://127.0.0.1:{tripwire.port}/",
            f"http://localhost:{tripwire.port}/",
            f"http://2130706433:{tripwire.port}/",
            "http://169.254.169.254/",
        ]
    ):
        server = Web({"/": Answer(302, headers={"location": target})})
        net.host(f"hop{n}.test", server)
        with pytest.raises(NetRefused, match="refused"):
            request(net.guard(), "GET", f"http://hop{n}.test/")
        assert len(server.seen) == 1
        server.close()
    assert tripwire.connections() == 0 and net.stray == []


def test_a_public_test_name_reaches_its_local_server_through_the_checked_address(web: Web) -> None:
    net = TestNet()
    address = net.host("site.test", web)
    reply = request(net.guard(), "GET", "http://site.test/")
    assert (reply.status, reply.body) == (200, b"public page")
    assert net.connections == [(address, 80)]
    assert web.seen[0].headers["host"] == "site.test"


def test_dns_is_asked_once_per_hop_so_a_rebinding_answer_is_never_used(web: Web) -> None:
    net = TestNet()
    net.host("rebinding.test", web)
    answers = iter([["93.184.216.10"], ["127.0.0.1"], ["127.0.0.1"]])

    def rebinding(host: str, port: int) -> list[str]:
        net.lookups.append(host)
        return next(answers)

    guard = NetGuard(resolver=rebinding, connector=net.connect)
    assert request(guard, "GET", "http://rebinding.test/").body == b"public page"
    assert net.lookups == ["rebinding.test"] and net.stray == []


def test_an_egress_allow_list_limits_hosts_and_redirects(web: Web) -> None:
    net = TestNet()
    net.host("api.allowed.test", web)
    net.host("other.test", Web({"/": Answer(200, "other")}))
    web.routes["/away"] = Answer(302, headers={"location": "http://other.test/"})
    guard = net.guard(egress=("*.allowed.test",))
    assert request(guard, "GET", "http://api.allowed.test/").status == 200
    with pytest.raises(NetRefused, match="egress allow list"):
        request(guard, "GET", "http://other.test/")
    with pytest.raises(NetRefused, match="egress allow list"):
        request(guard, "GET", "http://api.allowed.test/away")
    with pytest.raises(NetRefused, match="egress allow list"):
        request(guard, "GET", "http://allowed.test/")  # *.domain means its subdomains only


def test_an_operator_named_lan_host_may_use_a_private_address_but_never_loopback_or_metadata() -> None:
    net = TestNet()
    net.alias("nas.lan", "192.168.1.20")
    net.alias("sneaky.lan", "127.0.0.1")
    net.alias("meta.lan", "169.254.169.254")
    guard = net.guard(private_hosts=frozenset({"nas.lan", "sneaky.lan", "meta.lan"}))
    assert guard.check("http://nas.lan/share").addresses == ("192.168.1.20",)
    for url in ("http://sneaky.lan/", "http://meta.lan/"):
        with pytest.raises(NetRefused):
            guard.check(url)
    with pytest.raises(NetRefused, match="private address"):
        net.guard().check("http://nas.lan/")


def test_more_than_five_redirects_are_refused() -> None:
    net = TestNet()
    server = Web({f"/{n}": Answer(302, headers={"location": f"/{n + 1}"}) for n in range(10)})
    net.host("loop.test", server)
    with pytest.raises(NetRefused, match="more than 5 redirects"):
        request(net.guard(), "GET", "http://loop.test/0")
    assert len(server.seen) == 6
    server.close()


def test_an_unknown_name_is_a_one_line_fetch_failure() -> None:
    with pytest.raises(FetchFailed, match="cannot resolve host nowhere.test"):
        request(TestNet().guard(), "GET", "http://nowhere.test/")


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("0x7f.1", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("１２７．０．０．１", "127.0.0.1"),
        ("ＥＸＡＭＰＬＥ．ｃｏｍ", "example.com"),
        ("bücher.de", "xn--bcher-kva.de"),
        ("Example.COM.", "example.com"),
        ("[::ffff:127.0.0.1]", "::ffff:7f00:1"),
        ("1.2.3.4", "1.2.3.4"),
    ],
)
def test_hosts_are_normalised_before_any_decision(spelling: str, canonical: str) -> None:
    assert normalize_host(spelling) == canonical


@pytest.mark.parametrize("bad", ["256.0.0.1", "1.2.3.4.5", "0x1g.1", "08.0.0.1", "exa mple.com", "a..b", "-a.com"])
def test_malformed_hosts_are_refused(bad: str) -> None:
    with pytest.raises(NetRefused):
        normalize_host(bad)


def test_urls_keep_path_and_query_and_drop_the_fragment() -> None:
    parsed = parse_url("HTTPS://Example.com:8443/a/b?c=1#frag")
    assert parsed.url == "https://example.com:8443/a/b?c=1"


def test_the_tripwire_counts_a_connection_that_gets_past_a_guard(tripwire: Tripwire) -> None:
    # the check of the tests above: a connection to loopback through the test connector is seen
    net = TestNet()
    net.connect("127.0.0.1", tripwire.port, 2).close()
    assert tripwire.connections() == 1 and net.stray == [("127.0.0.1", tripwire.port)]


@pytest.mark.parametrize(
    ("address", "phrase"),
    [
        ("192.0.0.8", "the IPv4 dummy address (192.0.0.8/32, RFC 7600)"),
        ("192.0.0.9", "the Port Control Protocol anycast address (192.0.0.9/32, RFC 7723)"),
        ("192.0.0.170", "a NAT64/DNS64 discovery address (192.0.0.170/31, RFC 8880)"),
        ("192.0.2.7", "a documentation address (TEST-NET-1) (192.0.2.0/24, RFC 5737)"),
        ("198.51.100.1", "a documentation address (TEST-NET-2) (198.51.100.0/24, RFC 5737)"),
        ("192.31.196.1", "an AS112-v4 address (192.31.196.0/24, RFC 7535)"),
        ("192.88.99.1", "a deprecated 6to4 relay anycast address (192.88.99.0/24, RFC 7526)"),
        ("0.1.2.3", 'a "this network" address (0.0.0.0/8, RFC 791)'),
        ("fec0::1", "a site-local address (deprecated) (fec0::/10, RFC 3879)"),
        ("100::1", "a discard-only address (100::/64, RFC 6666)"),
        ("100:0:0:1::1", "a dummy IPv6 prefix address (100:0:0:1::/64, RFC 9780)"),
        ("2001:db8::1", "a documentation address (2001:db8::/32, RFC 3849)"),
        ("3fff::1", "a documentation address (3fff::/20, RFC 9637)"),
        ("5f00::1", "a segment routing (SRv6) SID (5f00::/16, RFC 9602)"),
        ("2001:2::1", "a benchmarking address (2001:2::/48, RFC 5180)"),
        ("2001:1::1", "the Port Control Protocol anycast address (2001:1::1/128, RFC 7723)"),
        ("4000::1", "an address outside IPv6 global unicast (2000::/3) (::/0, RFC 4291)"),
    ],
)
def test_special_purpose_addresses_are_refused_by_the_registry_tables_naming_the_entry(
    address: str, phrase: str, tripwire: Tripwire
) -> None:
    net = TestNet()
    net.alias("special.test", address)
    with pytest.raises(NetRefused) as refused:
        request(net.guard(), "GET", "http://special.test/")
    assert str(refused.value) == (
        f"refused http://special.test/: special.test resolves to {address}, {address} is {phrase}; "
        "hearth connects only to public addresses"
    )
    assert net.stray == [] and tripwire.connections() == 0


def test_named_lan_hosts_open_only_the_lan_blocks_of_the_tables() -> None:
    net = TestNet()
    for name, address in (("nas.lan", "10.1.1.1"), ("cg.lan", "100.64.1.1"), ("ula.lan", "fd12::1")):
        net.alias(name, address)
    net.alias("dummy.lan", "192.0.0.8")
    net.alias("site.lan", "fec0::1")
    guard = net.guard(private_hosts=frozenset({"nas.lan", "cg.lan", "ula.lan", "dummy.lan", "site.lan"}))
    for name in ("nas.lan", "cg.lan", "ula.lan"):
        assert guard.check(f"http://{name}/").host == name
    for name in ("dummy.lan", "site.lan"):
        with pytest.raises(NetRefused, match="RFC"):
            guard.check(f"http://{name}/")
    public = net.guard()
    net.alias("v6.test", "2606:2800:220:1:248:1893:25c8:1946")
    assert public.check("http://v6.test/").addresses == ("2606:2800:220:1:248:1893:25c8:1946",)
