"""web_search through ddgs (an injected backend offline, and one live call skipped without network),
and through a search endpoint the operator runs (SearXNG's JSON API) on loopback behind the guard."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

from agent.net.guard import NetGuard
from agent.safety.workspace import Workspace
from agent.services import RunServices
from agent.tools.gate import call_tool
from agent.tools.websearch import SearchEndpoint
from tests.netfixtures import Answer, Backend, Seen, TestNet, Web

RESULTS = [
    {"title": f"Result {n}", "href": f"https://example.com/{n}", "body": f"snippet   {n}\nmore"} for n in range(1, 9)
]


def search(tmp_path: Path, backend: Any, guard: NetGuard | None = None, **args: Any) -> tuple[bool, str]:
    ws = Workspace(tmp_path, services=RunServices(search_backend=backend, net=guard))
    result = call_tool("web_search", {"query": "hearth agents", **args}, ws, mode="bypass")
    return result.ok, result.output


def test_results_come_back_as_title_url_and_snippet(tmp_path: Path) -> None:
    backend = Backend(RESULTS)
    ok, out = search(tmp_path, backend, max_results=3)
    assert ok
    assert out.splitlines()[:3] == ["1. Result 1", "   https://example.com/1", "   snippet 1 more"]
    assert "Result 3" in out and "Result 4" not in out
    assert backend.calls == [("hearth agents", {"max_results": 3, "backend": "auto"})]


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (RatelimitException("202 Ratelimit"), "rate-limited by the search provider"),
        (TimeoutException("timed out"), "timed out"),
        (DDGSException("https://html.duckduckgo.com/html 403 Forbidden"), "web_search failed: https://html.duckduckgo"),
    ],
)
def test_rate_limits_timeouts_and_failures_are_error_results(tmp_path: Path, error: Exception, message: str) -> None:
    ok, out = search(tmp_path, Backend(error))
    assert not ok and message in out and "\n" not in out


def test_no_results_is_an_answer_not_an_error(tmp_path: Path) -> None:
    assert search(tmp_path, Backend(DDGSException("No results found."))) == (True, "no results for 'hearth agents'")


def test_bad_arguments_are_refused_before_searching(tmp_path: Path) -> None:
    backend = Backend(RESULTS)
    assert "between 1 and 20" in search(tmp_path, backend, max_results=50)[1]
    ws = Workspace(tmp_path, services=RunServices(search_backend=backend))
    assert "query is empty" in call_tool("web_search", {"query": "  "}, ws, mode="bypass").output
    assert backend.calls == []


def test_an_egress_list_without_the_provider_refuses_search_and_with_it_pins_duckduckgo(tmp_path: Path) -> None:
    backend = Backend(RESULTS)
    ok, out = search(tmp_path, backend, NetGuard(egress=("api.github.com",)))
    assert not ok and "allow html.duckduckgo.com" in out and backend.calls == []
    assert search(tmp_path, backend, NetGuard(egress=("*.duckduckgo.com",)))[0]
    assert backend.calls[-1][1]["backend"] == "duckduckgo"


def online() -> bool:
    """Whether DNS answers for the provider (no packet goes anywhere when it does not)."""
    try:
        socket.getaddrinfo("duckduckgo.com", 443)
    except OSError:
        return False
    return True


@pytest.mark.live
def test_live_search_through_the_real_ddgs(tmp_path: Path) -> None:
    if not online():
        pytest.skip("no network: the live search test needs duckduckgo.com")
    ok, out = search(tmp_path, None, query="python programming language", max_results=3)
    if not ok and ("rate-limited" in out or "timed out" in out):
        pytest.skip(f"the provider did not answer usefully: {out}")
    assert ok and out.startswith("1. ") and "http" in out


@pytest.fixture
def searx() -> Iterator[tuple[TestNet, Web]]:
    def answer(seen: Seen) -> Answer:
        query = parse_qs(urlsplit(seen.path).query)
        results = [
            {"url": f"https://example.com/{n}", "title": f"Result {n}", "content": f"about {query['q'][0]}"}
            for n in (1, 2, 3)
        ]
        return Answer(
            200, json.dumps({"results": [*results, {"title": "no url"}]}), {"content-type": "application/json"}
        )

    web = Web(
        {"/search": answer, "/broken": Answer(200, "<html>not the JSON API</html>", {"content-type": "text/html"})}
    )
    net = TestNet()
    net.host("searx.example", web)
    yield net, web
    web.close()


def endpoint_search(tmp_path: Path, net: TestNet, url: str, **guard: Any) -> tuple[bool, str]:
    checked = net.guard(**guard)
    services = RunServices(search_backend=SearchEndpoint(url, checked), net=checked)
    result = call_tool(
        "web_search",
        {"query": "hearth agents", "max_results": 2},
        Workspace(tmp_path, services=services),
        mode="bypass",
    )
    return result.ok, result.output


def test_a_search_endpoint_is_asked_through_the_guard_with_the_query_and_its_json_api(
    tmp_path: Path, searx: tuple[TestNet, Web]
) -> None:
    net, web = searx
    ok, out = endpoint_search(tmp_path, net, "http://searx.example/search")
    assert ok and out.splitlines()[:3] == ["1. Result 1", "   https://example.com/1", "   about hearth agents"]
    assert "Result 3" not in out
    assert [s.path for s in web.seen] == ["/search?q=hearth+agents&format=json"]
    assert net.lookups == ["searx.example"]  # resolved and checked by the guard, as any host


def test_a_search_endpoint_outside_the_egress_list_is_refused_and_never_asked(
    tmp_path: Path, searx: tuple[TestNet, Web]
) -> None:
    net, web = searx
    ok, out = endpoint_search(tmp_path, net, "http://searx.example/search", egress=("docs.example",))
    assert not ok and "refused host searx.example: not in this run's egress allow list" in out
    assert web.seen == []
    assert endpoint_search(tmp_path, net, "http://searx.example/search", egress=("searx.example",))[0]


def test_a_search_endpoint_that_does_not_answer_its_json_api_is_an_error_result(
    tmp_path: Path, searx: tuple[TestNet, Web]
) -> None:
    net, _ = searx
    ok, out = endpoint_search(tmp_path, net, "http://searx.example/broken")
    assert not ok and "did not answer its JSON API" in out
    ok, out = endpoint_search(tmp_path, net, "http://searx.example/missing")
    assert not ok and "answered HTTP 404" in out
