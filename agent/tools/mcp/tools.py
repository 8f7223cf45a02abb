"""An MCP server's tool as a `Tool` record: named `<server>__<tool>`, its schema flattened to
what the gate checks, its function a call through the server's `Connection` under a deadline.

A call that fails in any way (the server did not start, hung past the deadline, crashed mid-call,
answered an error) is a `ToolFailed`: one line for the model, and the run goes on."""

from __future__ import annotations

import hashlib
import mimetypes
import re
import time
from typing import TYPE_CHECKING, Any

from agent.tools.mcp.client import Connection, McpFailed, ToolInfo, digest
from agent.tools.mcp.names import SEPARATOR
from agent.tools.registry import Tool, ToolFailed

if TYPE_CHECKING:
    from agent.safety.workspace import Workspace

__all__ = ["SEPARATOR", "digest", "mcp_tool", "tool_name"]

OUTPUT_DIR = "mcp-output"  # where an image or binary result is kept in the workspace
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_KINDS = {"string", "integer", "boolean", "number", "array", "object"}


def tool_name(server: str, tool: str) -> str:
    """`<server>__<tool>`, with what a tool name may not hold made `_`, at most 64 characters."""
    return f"{server}{SEPARATOR}{_UNSAFE.sub('_', tool)}"[:64]


def mcp_tool(server: str, info: ToolInfo, risk: str, connection: Connection, timeout_s: float) -> Tool:
    """The gate's record of one approved MCP tool."""
    properties = info.schema.get("properties") or {}
    params: dict[str, dict[str, Any]] = {}
    for key, spec in properties.items():
        spec = spec if isinstance(spec, dict) else {}
        kind = spec.get("type") if spec.get("type") in _KINDS else "object"
        params[key] = {"type": kind, "description": str(spec.get("description") or spec.get("title") or key)}
        if isinstance(spec.get("enum"), list):
            params[key]["enum"] = spec["enum"]
    required = tuple(r for r in info.schema.get("required") or () if r in params)

    def call(args: dict[str, Any], ws: Workspace) -> str:
        deadline = ws.services.deadline
        left = timeout_s if deadline is None else min(timeout_s, deadline - time.monotonic())
        if left <= 0:
            raise ToolFailed(f"{tool_name(server, info.name)}: the run's time limit is spent")

        def save(mime: str, data: bytes) -> str:
            return saved(ws, server, info.name, mime, data)

        try:
            return connection.call(info.name, args, left, save)
        except McpFailed as exc:
            raise ToolFailed(str(exc)) from None

    description = f"{info.description.strip() or info.name} (MCP server {server})"
    # what a server answers is the server's text: the gate envelopes it as data (issue 25)
    name = tool_name(server, info.name)
    return Tool(name, description, params, call, risk=risk, required=required, outside=f"MCP server {server}")


def saved(ws: Workspace, server: str, tool: str, mime: str, data: bytes) -> str:
    """An image or binary a tool answered with, kept in the workspace (mcp-output/, named after
    its bytes); the path the model reads."""
    extension = mimetypes.guess_extension(mime.split(";")[0].strip()) or ".bin"
    name = f"{OUTPUT_DIR}/{tool_name(server, tool)}-{hashlib.sha256(data).hexdigest()[:12]}{extension}"
    ws.write_bytes(name, data)
    return name
