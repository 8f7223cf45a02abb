"""web_fetch, http_request and fetch_to_kb through call_tool against real local servers."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.context.envelope import opened
from agent.knowledge.store import KnowledgeStore
from agent.net.guard import CredentialRefused
from agent.safety.redaction import Redactor
from agent.safety.workspace import Workspace
from agent.services import RunServices
from agent.tools.gate import call_tool
from tests.netfixtures import Answer, Seen, TestNet, Web

HTML = """<html><head><title>Hearth notes</title></head><body><nav>Home | About | Login</nav>
<article><h1>Knowledge in hearth</h1><p>Hearth stores what one run learns in a SQLite knowledge base
with full-text search, so that the next run can find it again without asking anybody.</p>
<p>Every network tool goes through one guard that checks each address before connecting.</p></article>
<footer>Copyright nobody</footer></body></html>"""


@pytest.fixture
def site() -> Iterator[Web]:
    server = Web(
        {
            "/page": Answer(200, HTML, {"content-type": "text/html; charset=utf-8"}),
            "/plain": Answer(200, "just text\nline two", {"content-type": "text/plain"}),
            "/data": Answer(200, '{"b": 1, "a": [1, 2]}', {"content-type": "application/json"}),
            "/image": Answer(200, b"\x89PNG\r\n\x1a\n" + b"\0" * 100, {"content-type": "image/png"}),
            "/missing": Answer(404, "nope"),
        }
    )
    yield server
    server.close()


@pytest.fixture
def net(site: Web) -> TestNet:
    net = TestNet()
    net.host("site.test", site)
    return net


def workspace(tmp_path: Path, net: TestNet, **services: object) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    return Workspace(root, services=RunServices(net=net.guard(), **services))  # type: ignore[arg-type]


def call(ws: Workspace, name: str, **args: object) -> tuple[bool, str]:
    result = call_tool(name, args, ws, mode="bypass")
    inside = opened(result.output)  # an answer from the web is enveloped as data (agent/context/envelope.py)
    assert inside is not None or not result.ok or name not in ("web_fetch", "http_request", "fetch_to_kb")
    return result.ok, inside if inside is not None else result.output


def test_web_fetch_returns_the_readable_text_of_a_page_without_navigation(tmp_path: Path, net: TestNet) -> None:
    ok, out = call(workspace(tmp_path, net), "web_fetch", url="http://site.test/page")
    assert ok, out
    assert out.startswith("URL: http://site.test/page\nTitle: ")
    assert "next run can find it again" in out and "Home | About | Login" not in out


def test_web_fetch_reads_plain_text_and_pretty_prints_json(tmp_path: Path, net: TestNet) -> None:
    ws = workspace(tmp_path, net)
    assert call(ws, "web_fetch", url="http://site.test/plain")[1].endswith("just text\nline two")
    ok, out = call(ws, "web_fetch", url="http://site.test/data")
    assert ok and json.loads(out.split("\n\n", 1)[1]) == {"b": 1, "a": [1, 2]} and '\n  "b": 1' in out


def test_web_fetch_refuses_an_image_with_a_clear_error(tmp_path: Path, net: TestNet) -> None:
    ok, out = call(workspace(tmp_path, net), "web_fetch", url="http://site.test/image")
    assert not ok and "\n" not in out
    assert "image/png" in out and "cannot be read as text" in out


def test_web_fetch_reports_an_http_error_status(tmp_path: Path, net: TestNet) -> None:
    ok, out = call(workspace(tmp_path, net), "web_fetch", url="http://site.test/missing")
    assert not ok and "HTTP 404" in out


def test_a_body_over_the_cap_is_a_one_line_error_and_nothing_is_stored(tmp_path: Path, net: TestNet, site: Web) -> None:
    site.routes["/huge"] = Answer(200, b"x" * 5_000_001)
    store = KnowledgeStore(tmp_path / "k.db")
    ws = workspace(tmp_path, net, knowledge=store)
    ok, out = call(ws, "fetch_to_kb", url="http://site.test/huge")
    assert not ok and "over the cap" in out and "\n" not in out
    assert store.documents() == []


def test_a_compression_bomb_is_cut_at_the_decoded_cap(tmp_path: Path, net: TestNet, site: Web) -> None:
    bomb = gzip.compress(b"a" * 30_000_000)
    assert len(bomb) < 100_000
    site.routes["/bomb"] = Answer(200, bomb, {"content-encoding": "gzip"})
    ok, out = call(workspace(tmp_path, net), "web_fetch", url="http://site.test/bomb")
    assert not ok and "decompresses to more than the cap" in out


def test_gzip_bodies_are_decoded(tmp_path: Path, net: TestNet, site: Web) -> None:
    site.routes["/gz"] = Answer(200, gzip.compress(b"compressed hello"), {"content-encoding": "gzip"})
    ok, out = call(workspace(tmp_path, net), "web_fetch", url="http://site.test/gz")
    assert ok and out.endswith("compressed hello")


def test_a_slow_server_times_out_as_an_error_result(tmp_path: Path, net: TestNet, site: Web) -> None:
    site.routes["/slow"] = Answer(200, "late", delay_s=2.5)
    ok, out = call(workspace(tmp_path, net), "web_fetch", url="http://site.test/slow", timeout_s=1)
    assert not ok and "timed out after 1s" in out


def test_a_non_http_url_is_a_one_line_error(tmp_path: Path, net: TestNet) -> None:
    for url in ("ftp://site.test/", "file:///etc/passwd", "site.test/page"):
        ok, out = call(workspace(tmp_path, net), "web_fetch", url=url)
        assert not ok and "only http and https" in out and "\n" not in out


def test_fetch_to_kb_stores_the_page_so_kb_search_finds_it(tmp_path: Path, net: TestNet) -> None:
    store = KnowledgeStore(tmp_path / "k.db")
    ws = workspace(tmp_path, net, knowledge=store)
    ok, out = call(ws, "fetch_to_kb", url="http://site.test/page")
    assert ok and "stored" in out
    ok, found = call(ws, "kb_search", query="guard checks each address")
    assert ok and "source: http://site.test/page" in found


def test_a_kb_search_hit_from_the_web_is_enveloped_and_one_from_a_local_file_is_not(
    tmp_path: Path, net: TestNet
) -> None:
    store = KnowledgeStore(tmp_path / "k.db")
    ws = workspace(tmp_path, net, knowledge=store)
    call(ws, "fetch_to_kb", url="http://site.test/page")
    call(ws, "kb_add", text="The guard checks each address in the local runbook.", source="runbook.md")
    ok, found = call(ws, "kb_search", query="guard checks each address")
    hits = found.split("\n\n")
    nonce = ws.services.envelope.nonce
    web = [h for h in hits if "source: http://site.test/page" in h]
    local = [h for h in hits if "source: runbook.md" in h]
    assert ok and web and local
    assert all(h.startswith(f"<<data {nonce} from http://site.test/page:") and opened(h) for h in web)
    assert all("<<data" not in h for h in local)


def echo(seen: Seen) -> Answer:
    return Answer(
        200,
        json.dumps({"method": seen.method, "headers": seen.headers, "body": seen.body.decode()}),
        {"content-type": "application/json", "x-echo-auth": seen.headers.get("authorization", "")},
    )


def credentials(values: dict[str, tuple[str, str]], redactor: Redactor) -> object:
    """A tiny stand-in for the appliance's resolver: name -> (host, value)."""

    def resolve(name: str, host: str) -> str:
        if name not in values or values[name][0] != host:
            raise CredentialRefused(f"credential {name!r} may not be sent to {host}")
        redactor.add(name, values[name][1])
        return values[name][1]

    return resolve


def test_http_request_sends_method_headers_and_body_and_shows_the_reply(
    tmp_path: Path, net: TestNet, site: Web
) -> None:
    site.routes["/echo"] = echo
    ok, out = call(
        workspace(tmp_path, net),
        "http_request",
        url="http://site.test/echo",
        method="POST",
        headers={"X-One": "1"},
        body='{"q": 2}',
    )
    assert ok and out.startswith("HTTP 200 OK\ncontent-type: application/json")
    assert site.seen[-1].method == "POST" and site.seen[-1].body == b'{"q": 2}'
    assert site.seen[-1].headers["x-one"] == "1"


def test_a_cred_header_is_replaced_at_send_time_and_a_reflected_value_is_redacted(
    tmp_path: Path, net: TestNet, site: Web
) -> None:
    site.routes["/echo"] = echo
    redactor = Redactor()
    ws = workspace(
        tmp_path,
        net,
        redact=redactor,
        credentials=credentials({"TOKEN": ("site.test", "s3cret-canary-value")}, redactor),
    )
    ok, out = call(ws, "http_request", url="http://site.test/echo", headers='{"Authorization": "Bearer cred:TOKEN"}')
    assert ok
    assert site.seen[-1].headers["authorization"] == "Bearer s3cret-canary-value"
    assert "s3cret-canary-value" not in out and "Bearer [redacted:TOKEN]" in out


def test_a_credential_for_another_host_is_refused_and_nothing_is_sent(tmp_path: Path, net: TestNet, site: Web) -> None:
    redactor = Redactor()
    ws = workspace(
        tmp_path,
        net,
        redact=redactor,
        credentials=credentials({"TOKEN": ("api.other.test", "s3cret-canary-value")}, redactor),
    )
    ok, out = call(ws, "http_request", url="http://site.test/echo", headers={"Authorization": "cred:TOKEN"})
    assert not ok and "may not be sent to site.test" in out and site.seen == []


def test_a_cross_origin_redirect_drops_credential_headers(tmp_path: Path, net: TestNet, site: Web) -> None:
    other = Web({"/land": echo})
    net.host("other.test", other)
    site.routes["/go"] = Answer(307, headers={"location": "http://other.test/land"})
    redactor = Redactor()
    ws = workspace(
        tmp_path,
        net,
        redact=redactor,
        credentials=credentials({"TOKEN": ("site.test", "s3cret-canary-value")}, redactor),
    )
    ok, out = call(
        ws,
        "http_request",
        url="http://site.test/go",
        headers={"X-Api-Key": "cred:TOKEN", "Cookie": "a=b", "X-Plain": "kept"},
    )
    assert ok, out
    landed = other.seen[0].headers
    assert "x-api-key" not in landed and "cookie" not in landed and landed["x-plain"] == "kept"
    assert "s3cret-canary-value" not in json.dumps(landed)
    other.close()


def test_a_same_origin_redirect_keeps_the_credential(tmp_path: Path, net: TestNet, site: Web) -> None:
    site.routes["/go"] = Answer(302, headers={"location": "/echo"})
    site.routes["/echo"] = echo
    redactor = Redactor()
    ws = workspace(
        tmp_path,
        net,
        redact=redactor,
        credentials=credentials({"TOKEN": ("site.test", "s3cret-canary-value")}, redactor),
    )
    ok, out = call(ws, "http_request", url="http://site.test/go", headers={"X-Api-Key": "cred:TOKEN"})
    assert ok and "after 1 redirect" in out
    assert site.seen[-1].headers["x-api-key"] == "s3cret-canary-value"


def test_http_request_refuses_bad_headers_and_an_oversized_body(tmp_path: Path, net: TestNet, site: Web) -> None:
    ws = workspace(tmp_path, net)
    assert "set by hearth" in call(ws, "http_request", url="http://site.test/", headers={"Host": "x"})[1]
    assert "has no ':'" in call(ws, "http_request", url="http://site.test/", headers="nonsense")[1]
    ok, out = call(ws, "http_request", url="http://site.test/", method="POST", body="x" * 1_000_001)
    assert not ok and "over the limit" in out
    ok, out = call(ws, "http_request", url="http://site.test/", headers={"A": "cred:NOPE"})
    assert not ok and "no credentials" in out
    assert site.seen == []
