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
