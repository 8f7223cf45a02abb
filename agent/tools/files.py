"""File tools: read, list, tree and write inside the run's workspace (containment lives in Workspace)."""

from __future__ import annotations

import posixpath
from typing import Any

from agent.safety.display import shorten
from agent.safety.workspace import Entry, PathRefused, Workspace
from agent.tools import syntax
from agent.tools.args import PATH, SKIP_DIRS, integer, require_dir
from agent.tools.registry import Tool, ToolFailed

READ_LIMIT = 64_000
WRITE_LIMIT = 1_000_000  # characters of content; bigger files are built in steps or by a command
TREE_ENTRIES = 400
PAGE_SCAN_LIMIT = 16_000_000  # how much of a file start_line may page through


def read_file(args: dict[str, Any], ws: Workspace) -> str:
    limit, start = args.get("max_bytes", READ_LIMIT), args.get("start_line", 1)
    entry = ws.stat(args["path"])
    if entry is None:
        raise ToolFailed(f"file not found: {shorten(args['path'])}")
    if entry.kind == "dir":
        raise ToolFailed(f"{shorten(args['path'])} is a directory; use list_files")
    if start > 1:
        return _read_from_line(args["path"], ws, start, limit)
    text, truncated = ws.read_text(args["path"], limit=limit)
    if truncated:
        lines = text.count("\n")
        # start_line only helps once a whole line was read; inside the first line it would repeat it
        on = f", or start_line={lines + 1} to read on" if lines else ""
        text += f"\n[read_file: cut at {limit} bytes of {entry.size}; pass max_bytes to read more{on}]"
    return text


def _read_from_line(path: str, ws: Workspace, start: int, limit: int) -> str:
    """Lines from `start` on, at most `limit` bytes of them: paging through long files and spilled outputs."""
    text, _ = ws.read_text(path, limit=PAGE_SCAN_LIMIT)
    lines = text.splitlines(keepends=True)
    if start > len(lines):
        raise ToolFailed(f"{shorten(path)} has {len(lines)} lines; start_line {start} is past the end")
    page: list[str] = []
    used, end = 0, start - 1
    for line in lines[start - 1 :]:
        size = len(line.encode())
        if page and used + size > limit:
            break
        page.append(line if size <= limit else line.encode()[:limit].decode(errors="ignore"))
        used, end = used + size, end + 1
    more = f"; start_line={end + 1} reads on" if end < len(lines) else ""
    return "".join(page) + f"\n[read_file: lines {start}-{end} of {len(lines)}{more}]"


def list_files(args: dict[str, Any], ws: Workspace) -> str:
    path = require_dir(ws, args.get("path") or ".")
    lines = [_entry_line(e) for e in ws.iter_dir(path)]
    return "\n".join(lines) if lines else "(empty directory)"


def _entry_line(entry: Entry) -> str:
    if entry.kind == "dir":
        return f"{entry.name}/"
    if entry.kind == "symlink":
        return f"{entry.name}@"
    return f"{entry.name}  ({entry.size} bytes)"


def list_tree(args: dict[str, Any], ws: Workspace) -> str:
    path = require_dir(ws, args.get("path") or ".")
    depth = args.get("max_depth", 4)
    lines: list[str] = []
    cut = _tree(ws, ws.relpath(path), 0, depth, lines)
    if len(lines) > TREE_ENTRIES:
        lines[TREE_ENTRIES:] = [
            f"[list_tree: stopped at {TREE_ENTRIES} entries; list a subdirectory or lower max_depth]"
        ]
    elif cut:
        lines.append(f"[list_tree: directories deeper than max_depth={depth} are not expanded]")
    return "\n".join([f"{ws.relpath(path)}/", *lines]) if lines else f"{ws.relpath(path)}/ (empty directory)"


def _tree(ws: Workspace, rel: str, level: int, max_depth: int, lines: list[str]) -> bool:
    """Append one indented line per entry under ``rel``; True when max_depth cut something."""
    cut, indent = False, "  " * (level + 1)
    for entry in ws.iter_dir(rel):
        if len(lines) > TREE_ENTRIES:
            break
        if entry.kind != "dir":
            lines.append(f"{indent}{entry.name}{'@' if entry.kind == 'symlink' else ''}")
            continue
        skipped = entry.name in SKIP_DIRS
        lines.append(f"{indent}{entry.name}/{' (not listed)' if skipped else ''}")
        if skipped:
            continue
        if level + 1 >= max_depth:
            cut = True
            continue
        try:
            cut |= _tree(ws, posixpath.join(rel, entry.name), level + 1, max_depth, lines)
        except (PathRefused, OSError):  # swapped or removed while we listed
            lines.append(f"{indent}  (could not be listed)")
    return cut


def write_file(args: dict[str, Any], ws: Workspace) -> str:
    data = args["content"].encode("utf-8")
    ws.write_bytes(args["path"], data)
    shown = ws.relpath(args["path"])
    return f"wrote {len(data)} bytes to {shown}{syntax.note(shown, args['content'])}"


TOOLS = [
    Tool(
        name="read_file",
        description="Read a text file (a long one is cut; start_line pages on).",
        params={
            "path": PATH,
            "max_bytes": {**integer("1 to 1000000 (default 64000).", 1, 1_000_000), "hidden": True},
            "start_line": integer("From 1.", 1, 10_000_000),
        },
        required=("path",),
        fn=read_file,
        risk="safe",
    ),
    Tool(
        name="list_files",
        description="List a directory.",
        params={"path": {"type": "string"}},
        fn=list_files,
        risk="safe",
    ),
    Tool(
        name="list_tree",
        description="Show the tree under a directory, skipping .git, caches and build output.",
        params={
            "path": {"type": "string"},
            "max_depth": integer("1 to 12 (default 4).", 1, 12),
        },
        fn=list_tree,
        risk="safe",
    ),
    Tool(
        name="write_file",
        description="Create or overwrite a whole file.",
        params={
            "path": PATH,
            "content": {
                "type": "string",
                "maxLength": WRITE_LIMIT,
            },
        },
        required=("path", "content"),
        fn=write_file,
        risk="edit",
        writes=True,
    ),
]
