"""A real MCP server (the official SDK) whose one tool fetches a URL: the probe of a server's network.

Its `fetch` goes through the proxy its environment names (HTTP_PROXY, as hearth sets it for a
server granted egress), or straight to the address with `direct` (which must go nowhere)."""

from __future__ import annotations

import urllib.request

from mcp.server.mcpserver import MCPServer

server = MCPServer("fetcher")


@server.tool(description="Fetch a URL over HTTP and answer with its body.")
def fetch(url: str, direct: bool = False) -> str:
    opener = urllib.request.build_opener(*([urllib.request.ProxyHandler({})] if direct else []))
    with opener.open(url, timeout=10) as reply:
        return reply.read().decode()


@server.tool(description="Say the text back.")
def echo(text: str) -> str:
    return text


if __name__ == "__main__":
    server.run("stdio")
