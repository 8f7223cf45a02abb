"""File tools: read, list and write inside the run's workspace (containment lives in Workspace)."""

from __future__ import annotations

from typing import Any

from agent.hearth_tools import Tool, ToolFailed, register
from agent.workspace import Workspace

READ_LIMIT = 64_000


def read_file(args: dict[str, Any], ws: Workspace) -> str:
    limit = _bounded(args.get("max_bytes", READ_LIMIT), 1, 1_000_000, "max_bytes")
    entry = ws.stat(args["path"])
    if entry is None:
        raise ToolFailed(f"file not found: {args['path']}")
    if entry.kind == "dir":
        raise ToolFailed(f"{args['path']} is a directory; use list_files")
    text, truncated = ws.read_text(args["path"], limit=limit)
    if truncated:
        text += f"\n[read_file: cut at {limit} bytes of {entry.size}; pass max_bytes to read more]"
    return text


def list_files(args: dict[str, Any], ws: Workspace) -> str:
    path = args.get("path") or "."
    entry = ws.stat(path)
    if entry is None:
        raise ToolFailed(f"directory not found: {path}")
    if entry.kind != "dir":
        raise ToolFailed(f"{path} is not a directory")
    lines = [_entry_line(e) for e in ws.iter_dir(path)]
    return "\n".join(lines) if lines else "(empty directory)"


def _entry_line(entry: Any) -> str:
    if entry.kind == "dir":
        return f"{entry.name}/"
    if entry.kind == "symlink":
        return f"{entry.name}@"
    return f"{entry.name}  ({entry.size} bytes)"


def write_file(args: dict[str, Any], ws: Workspace) -> str:
    data = args["content"].encode("utf-8")
    ws.write_bytes(args["path"], data)
    return f"wrote {len(data)} bytes to {ws.relpath(args['path'])}"


def _bounded(value: int, low: int, high: int, name: str) -> int:
    if not low <= value <= high:
        raise ToolFailed(f"{name} must be between {low} and {high}, got {value}")
    return value


_PATH = {"type": "string", "description": "A path relative to the workspace."}

register(Tool(
    name="read_file",
    description="Read a text file from the workspace; long files are cut at max_bytes (default 64000).",
    params={"path": _PATH, "max_bytes": {"type": "integer", "description": "Bytes to read, 1 to 1000000."}},
    required=("path",),
    fn=read_file,
    risk="safe",
))
register(Tool(
    name="list_files",
    description="List the entries of one workspace directory (default: the workspace root).",
    params={"path": {"type": "string", "description": "A directory relative to the workspace."}},
    fn=list_files,
    risk="safe",
))
register(Tool(
    name="write_file",
    description="Create or replace a text file in the workspace with the given content.",
    params={"path": _PATH, "content": {"type": "string", "description": "The whole new content."}},
    required=("path", "content"),
    fn=write_file,
    risk="edit",
))
