"""TLS through the pinned transport: the socket goes to the checked address, SNI and verification use the name."""

from __future__ import annotations

import shutil
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.net.client import request
from agent.net.guard import FetchFailed
from tests.netfixtures import Answer, TestNet, Web, certificate

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")


@pytest.fixture
def secure(tmp_path: Path) -> Iterator[tuple[Web, list[str], Path]]:
    key, cert = certificate(tmp_path, "secure.test")
    names: list[str] = []
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(cert, key)
    server_side.sni_callback = lambda sock, name, ctx: names.append(name)  # type: ignore[assignment,misc,func-returns-value]
    web = Web({"/": Answer(200, "over tls")}, tls=server_side)
    yield web, names, cert
    web.close()


def test_https_sends_the_name_as_sni_and_verifies_it_while_connecting_to_the_checked_address(
    secure: tuple[Web, list[str], Path],
) -> None:
    web, names, cert = secure
    net = TestNet()
    address = net.host("secure.test", web)
    trusted = ssl.create_default_context(cafile=str(cert))
    reply = request(net.guard(ssl_context=trusted), "GET", "https://secure.test/")
    assert (reply.status, reply.body) == (200, b"over tls")
    assert names == ["secure.test"] and net.connections == [(address, 443)]
    assert web.seen[0].headers["host"] == "secure.test"


def test_a_certificate_for_another_name_fails_verification(tmp_path: Path, secure: tuple[Web, list[str], Path]) -> None:
    web, names, cert = secure
    net = TestNet()
    net.host("other.test", web)  # the right server and address, but not the name on its certificate
    trusted = ssl.create_default_context(cafile=str(cert))
    with pytest.raises(FetchFailed, match="cannot fetch https://other.test/"):
        request(net.guard(ssl_context=trusted), "GET", "https://other.test/")
    assert names == ["other.test"] and web.seen == []


def test_an_untrusted_certificate_is_refused_by_default(secure: tuple[Web, list[str], Path]) -> None:
    web, _, _ = secure
    net = TestNet()
    net.host("secure.test", web)
    with pytest.raises(FetchFailed, match="CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
        request(net.guard(), "GET", "https://secure.test/")
    assert web.seen == []
