"""A real MCP server (the SDK's low-level server, which does not check its own answers) whose
`count` tool declares an output schema and answers, when asked to, with structured content that
does not match it: what a buggy or hostile server sends. hearth's client must catch it.

    python misshapen.py
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

SCHEMA = {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}
INPUT = {"type": "object", "properties": {"broken": {"type": "boolean"}}}


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    count = types.Tool(name="count", description="Count things.", input_schema=INPUT, output_schema=SCHEMA)
    return types.ListToolsResult(tools=[count])


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    shaped: dict[str, Any] = {"count": "many"} if (params.arguments or {}).get("broken") else {"count": 3}
    text = types.TextContent(type="text", text=json.dumps(shaped))
    return types.CallToolResult(content=[text], structured_content=shaped)


server = Server("misshapen", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
