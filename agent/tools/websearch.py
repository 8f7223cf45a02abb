"""web_search: the `ddgs` package (keyless metasearch), or a search endpoint the operator runs,
behind the run's network guard.

ddgs connects with its own HTTP client, so each search starts a GuardProxy (agent/net/proxy.py)
and hands it to ddgs as its proxy: every provider connection is checked and pinned like any other
network tool's. With an egress allow list only DuckDuckGo is used, and only if the list allows
its host. ddgs is imported only when a search runs; tests inject a backend with ddgs' `text()`.

A search endpoint (`SearchEndpoint`, HEARTH_SEARCH_URL: a SearXNG instance, or anything answering
its JSON API, `GET URL?q=...&format=json` -> `{"results": [{"url", "title", "content"}]}`) is
asked instead of ddgs: a plain GET through the run's guard like web_fetch's, so the egress list
and the guard's address checks hold for it as for any host (a LAN instance is named in
HEARTH_NET_PRIVATE_HOSTS). `found()` is the search both web_search and a research run make.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode, urlsplit

from agent.net.guard import NetError, NetRefused
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
    results = found(ws, query, limit)
    if not results:
        return f"no results for {query!r}"
    return "\n\n".join(
        f"{n}. {r.get('title') or '(no title)'}\n   {r.get('href') or r.get('url') or ''}\n   "
        f"{' '.join(str(r.get('body') or '').split())}"
        for n, r in enumerate(results[:limit], 1)
    )


def found(ws: Workspace, query: str, limit: int) -> list[dict[str, Any]]:
    """The results of one search (ddgs' shape: title, href, body); ToolFailed with the reason."""
    backend = ws.services.search_backend
    where = getattr(backend, "host", "") or PROVIDER_HOST
    try:  # the query goes to the providers: no credential's value rides along, in any spelling
        guard_of(ws).refuse_secrets(where, "search query", query)
    except NetRefused as exc:
        raise ToolFailed(f"web_search {exc}") from None
    return search(ws, query, limit, _backend_for(ws))


def _backend_for(ws: Workspace) -> str:
    """ddgs picks its providers itself: with an egress allow list, only DuckDuckGo, and only if listed.
    A search endpoint is checked by the guard at each request, as any host."""
    guard = guard_of(ws)
    if not guard.egress or isinstance(ws.services.search_backend, SearchEndpoint):
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


class SearchEndpoint:
    """A SearXNG-style JSON search API at `url`, asked through the run's guard; ddgs' `text()` shape."""

    def __init__(self, url: str, guard: Any) -> None:
        self.url, self.guard = url, guard
        self.host = urlsplit(url).hostname or ""

    def text(self, query: str, max_results: int = 5, **_: Any) -> list[dict[str, Any]]:
        from agent.net.client import request  # httpx: imported when a search first goes out

        url = f"{self.url}{'&' if '?' in self.url else '?'}{urlencode({'q': query, 'format': 'json'})}"
        try:
            reply = request(self.guard, "GET", url, timeout_s=SEARCH_TIMEOUT_S, headers={"accept": "application/json"})
        except NetError as exc:
            raise ToolFailed(f"web_search: {exc}") from None
        if not 200 <= reply.status < 300:
            raise ToolFailed(f"web_search: the search endpoint answered HTTP {reply.status} {reply.reason}".rstrip())
        try:
            results = json.loads(reply.text()).get("results")
        except (ValueError, AttributeError):
            results = None
        if not isinstance(results, list):
            raise ToolFailed(
                f"web_search: the search endpoint at {self.host} did not answer its JSON API (no results list)"
            )
        return [_shaped(r) for r in results if isinstance(r, dict) and isinstance(r.get("url"), str)][:max_results]


def _shaped(result: dict[str, Any]) -> dict[str, Any]:
    return {"title": str(result.get("title") or ""), "href": result["url"], "body": str(result.get("content") or "")}


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
