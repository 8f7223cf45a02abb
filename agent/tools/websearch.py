"""web_search: the `ddgs` package (keyless metasearch), behind the run's network guard.

ddgs connects with its own HTTP client, so each search starts a GuardProxy (agent/net/proxy.py)
and hands it to ddgs as its proxy: every provider connection is checked and pinned like any other
network tool's. With an egress allow list only DuckDuckGo is used, and only if the list allows
its host. ddgs is imported only when a search runs; tests inject a backend with ddgs' `text()`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent.net.guard import NetRefused
from agent.safety.workspace import Workspace
from agent.tools.args import guard_of, integer, within_run
from agent.tools.registry import Tool, ToolFailed

MAX_RESULTS = 20
PROVIDER_HOST = "html.duckduckgo.com"  # what ddgs' duckduckgo engine connects to


def web_search(args: dict[str, Any], ws: Workspace) -> str:
    query = " ".join(args["query"].split())
    if not query:
        raise ToolFailed("query is empty")
    limit = args.get("max_results", 5)
    try:  # the query goes to the providers: no credential's value rides along, in any spelling
        guard_of(ws).refuse_secrets(PROVIDER_HOST, "search query", query)
    except NetRefused as exc:
        raise ToolFailed(f"web_search {exc}") from None
    backend_name = _backend_for(ws)
    results = search(ws, query, limit, backend_name)
    if not results:
        return f"no results for {query!r}"
    return "\n\n".join(
        f"{n}. {r.get('title') or '(no title)'}\n   {r.get('href') or r.get('url') or ''}\n   "
        f"{' '.join(str(r.get('body') or '').split())}"
        for n, r in enumerate(results[:limit], 1)
    )


def _backend_for(ws: Workspace) -> str:
    """ddgs picks its providers itself: with an egress allow list, only DuckDuckGo, and only if listed."""
    guard = guard_of(ws)
    if not guard.egress:
        return "auto"
    try:
        guard.check_host(PROVIDER_HOST)
    except NetRefused as exc:
        raise ToolFailed(f"web_search {exc}; allow {PROVIDER_HOST} (or *.duckduckgo.com) to search") from None
    return "duckduckgo"


SEARCH_TIMEOUT_S = 20.0  # as the web client's (agent/net/client.py), without importing httpx for it


def search(ws: Workspace, query: str, limit: int, backend_name: str) -> list[dict[str, Any]]:
    timeout = within_run(SEARCH_TIMEOUT_S, ws.services.deadline, "the search was not sent")
    backend = ws.services.search_backend
    if backend is not None:
        return _answers(lambda: backend.text(query, max_results=limit, backend=backend_name), query, [])
    from ddgs import DDGS  # slow to import: only when a search runs

    from agent.net.proxy import GuardProxy

    with GuardProxy(guard_of(ws)) as proxy:
        engine = DDGS(proxy=proxy.url, timeout=max(1, int(timeout)))
        return _answers(lambda: engine.text(query, max_results=limit, backend=backend_name), query, proxy.refused)


def _answers(call: Callable[[], Any], query: str, refused: list[str]) -> list[dict[str, Any]]:
    """Run the search; rate limits, timeouts, refusals and failures become one-line tool errors."""
    from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

    try:
        return list(call())
    except RatelimitException:
        raise ToolFailed(
            "web_search was rate-limited by the search provider; wait a while before searching "
            "again, or fetch a known URL with web_fetch"
        ) from None
    except TimeoutException:
        raise ToolFailed(f"web_search timed out for {query!r}; try again or use fewer words") from None
    except DDGSException as exc:
        if refused:
            raise ToolFailed(f"web_search refused by the network guard: {refused[0]}") from None
        if "no results" in str(exc).lower():
            return []
        first = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise ToolFailed(f"web_search failed: {first}") from None


TOOLS = [
    Tool(
        name="web_search",
        description="Search the web.",
        params={
            "query": {"type": "string"},
            "max_results": {**integer("1 to 20 (default 5).", 1, MAX_RESULTS), "hidden": True},
        },
        required=("query",),
        fn=web_search,
        risk="dangerous",
    ),
]
