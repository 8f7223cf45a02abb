"""web_search through ddgs: an injected backend offline, and one live call skipped without network."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

from agent.net.guard import NetGuard
from agent.safety.workspace import Workspace
from agent.services import RunServices
from agent.tools.gate import call_tool
from tests.netfixtures import Backend

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
