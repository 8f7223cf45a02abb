"""File tools: read, list and write inside the run's workspace (containment lives in Workspace)."""

from __future__ import annotations

from typing import Any

from agent.hearth_tools import Tool, ToolFailed, register
from agent.workspace import Workspace

READ_LIMIT = 64_000
PAGE_SCAN_LIMIT = 16_000_000  # how much of a file start_line may page through


def read_file(args: dict[str, Any], ws: Workspace) -> str:
    limit = _bounded(args.get("max_bytes", READ_LIMIT), 1, 1_000_000, "max_bytes")
    start = _bounded(args.get("start_line", 1), 1, 10_000_000, "start_line")
    entry = ws.stat(args["path"])
    if entry is None:
        raise ToolFailed(f"file not found: {args['path']}")
    if entry.kind == "dir":
        raise ToolFailed(f"{args['path']} is a directory; use list_files")
    if start > 1:
        return _read_from_line(args["path"], ws, start, limit)
    text, truncated = ws.read_text(args["path"], limit=limit)
    if truncated:
        lines = text.count("\n")
        text += (f"\n[read_file: cut at {limit} bytes of {entry.size}; pass max_bytes to read more, "
                 f"or start_line={lines + 1} to read on]")
    return text


def _read_from_line(path: str, ws: Workspace, start: int, limit: int) -> str:
    """Lines from `start` on, at most `limit` bytes of them: paging through long files and spilled outputs."""
    text, _ = ws.read_text(path, limit=PAGE_SCAN_LIMIT)
    lines = text.splitlines(keepends=True)
    if start > len(lines):
        raise ToolFailed(f"{path} has {len(lines)} lines; start_line {start} is past the end")
    page, used, end = [], 0, start - 1
    for line in lines[start - 1:]:
        size = len(line.encode())
        if page and used + size > limit:
            break
        page.append(line if size <= limit else line.encode()[:limit].decode(errors="ignore"))
        used, end = used + size, end + 1
    more = f"; start_line={end + 1} reads on" if end < len(lines) else ""
    return "".join(page) + f"\n[read_file: lines {start}-{end} of {len(lines)}{more}]"


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
    description="Read a text file from the workspace; long files are cut at max_bytes (default 64000), start_line pages on.",
    params={"path": _PATH, "max_bytes": {"type": "integer", "description": "Bytes to read, 1 to 1000000."},
            "start_line": {"type": "integer", "description": "First line to read, from 1 (default 1): pages through long files."}},
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
