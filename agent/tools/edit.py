"""Edit tools: exact find-and-replace in one file (edit_file) or across files (replace_in_files).

Both read UTF-8 text only and write through Workspace.write_bytes (atomic, no hard links; a symlink
that stays inside is written at its target: agent/safety/workspace.py states the one symlink rule
of every file tool). A failure changes nothing: replace_in_files checks every target before writing any, and
puts back what it wrote if a write still fails half way.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from agent.safety.display import shorten
from agent.safety.workspace import PathRefused, Workspace
from agent.tools import syntax
from agent.tools.args import MAX_SCANNED_FILES, PATH, candidate_files
from agent.tools.registry import Tool, ToolFailed

EDIT_LIMIT = 2_000_000  # bytes of a file edit tools will change
MAX_CHANGED_FILES = 200
SCAN_SECONDS = 10.0
TEXT_LIMIT = 200_000  # characters of old_text / new_text
LINES_SHOWN = 20  # of the lines where an ambiguous old_text occurs


def read_text_exact(ws: Workspace, path: str) -> str:
    """The whole file as text, or ToolFailed when it is missing, binary, not UTF-8 or too big."""
    entry = ws.stat(path)
    path = shorten(path)  # from here on only shown
    if entry is None:
        raise ToolFailed(f"file not found: {path}")
    if entry.kind == "dir":
        raise ToolFailed(f"{path} is a directory, not a file")
    data, truncated = ws.read_bytes(path, limit=EDIT_LIMIT)
    if truncated:
        raise ToolFailed(f"{path} is larger than {EDIT_LIMIT} bytes; edit it with a command instead")
    if b"\0" in data:
        raise ToolFailed(f"{path} is a binary file; edit tools change text files only")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolFailed(f"{path} is not UTF-8 text (bad byte at offset {exc.start}); it was not changed") from None


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _lines_of(text: str, old: str, most: int) -> list[int]:
    """The lines of the first `most` occurrences of `old`, in one pass: each count of newlines starts
    where the previous one ended (counting from the start each time grew as matches times size)."""
    lines: list[int] = []
    line, counted, at = 1, 0, text.find(old)
    while at >= 0 and len(lines) < most:
        line += text.count("\n", counted, at)
        lines.append(line)
        counted, at = at, text.find(old, at + len(old))
    return lines


def _fit_line_endings(text: str, old: str, new: str) -> tuple[str, str]:
    """A model writes \\n; a CRLF file has \\r\\n. Match the file's endings when that is unambiguous."""
    if old not in text and "\r\n" in text and "\r" not in old and "\n" in old:
        return old.replace("\n", "\r\n"), new.replace("\r\n", "\n").replace("\n", "\r\n")
    return old, new


def _not_found(path: str, old: str, text: str) -> str:
    """Why old_text was not found, with where something close to it is, so the model can fix it."""
    loose = r"\s+".join(re.escape(part) for part in old.split())
    near = re.search(loose, text) if loose else None
    if near:
        return (
            f"old_text was not found exactly in {path}, but it matches with different whitespace at line "
            f"{_line_of(text, near.start())}; copy the exact text, indentation included, from read_file"
        )
    first = old.strip().splitlines()[0] if old.strip() else ""
    if first and first in text:
        return (
            f"old_text was not found in {path}; its first line is at line {_line_of(text, text.index(first))} "
            "but the lines after it differ; read the file and copy the exact text"
        )
    return f"old_text was not found in {path}; read the file and copy the exact text to replace"


def edit_file(args: dict[str, Any], ws: Workspace) -> str:
    path, replace_all = args["path"], args.get("replace_all", False)
    if not args["old_text"]:
        raise ToolFailed("old_text is empty; give the exact text to replace (write_file creates a file)")
    text = read_text_exact(ws, path)
    old, new = _fit_line_endings(text, args["old_text"], args["new_text"])
    count = text.count(old)
    if count == 0:
        raise ToolFailed(_not_found(path, args["old_text"], text))
    if count > 1 and not replace_all:
        lines = ", ".join(map(str, _lines_of(text, old, LINES_SHOWN)))
        more = f" and {count - LINES_SHOWN} more" if count > LINES_SHOWN else ""
        raise ToolFailed(
            f"old_text occurs {count} times in {path} (lines {lines}{more}); include more of the "
            "surrounding text to pick one, or pass replace_all=true"
        )
    if old == new:
        return f"no change: old_text and new_text are the same ({path} was not written)"
    first = _line_of(text, text.index(old))
    changed = text.replace(old, new, -1 if replace_all else 1)
    ws.write_bytes(path, changed.encode("utf-8"), mkdirs=False)
    done, shown = count if replace_all else 1, ws.relpath(path)
    return f"edited {shown}: replaced {done} occurrence{'s' * (done != 1)} (first at line {first}){syntax.note(shown, changed)}"


@dataclass
class _Change:
    path: str
    before: str
    after: str
    count: int


def replace_in_files(args: dict[str, Any], ws: Workspace) -> str:
    old, new = args["old_text"], args["new_text"]
    if not old:
        raise ToolFailed("old_text is empty; give the exact text to replace")
    if old == new:
        raise ToolFailed("old_text and new_text are the same; nothing would change")
    start = args.get("path") or "."
    changes, skipped, scanned = _plan(ws, start, args.get("glob") or "", old, new)
    if not changes:
        raise ToolFailed(f"no file under {start} contains old_text ({scanned} files searched); nothing changed")
    for change in changes:  # every target checked before anything is written
        try:
            ws.check_replaceable(change.path)
        except PathRefused as exc:
            raise ToolFailed(f"{exc}; nothing changed") from None
    _apply(ws, changes)
    total = sum(c.count for c in changes)
    lines = [f"replaced {total} occurrence{'s' * (total != 1)} in {len(changes)} file{'s' * (len(changes) != 1)}:"]
    lines += [f"  {c.path}: {c.count}" for c in changes]
    lines += [f"[replace_in_files: {n} file(s) skipped: {why}]" for why, n in sorted(skipped.items())]
    return "\n".join(lines)


def _plan(ws: Workspace, start: str, glob: str, old: str, new: str) -> tuple[list[_Change], dict[str, int], int]:
    """The changes to make, the files skipped (and why), and how many files were searched."""
    changes: list[_Change] = []
    skipped: dict[str, int] = {}
    scanned, deadline = 0, time.monotonic() + SCAN_SECONDS
    for rel in candidate_files(ws, start, glob):
        scanned += 1
        if scanned > MAX_SCANNED_FILES or time.monotonic() > deadline:
            raise ToolFailed(
                f"more than {MAX_SCANNED_FILES} files or {SCAN_SECONDS:.0f}s under {start}; "
                "narrow the path or glob (nothing changed)"
            )
        try:
            text = read_text_exact(ws, rel)
        except (ToolFailed, PathRefused, OSError) as why:
            if old.encode() in _peek(ws, rel):
                skipped[_reason(why)] = skipped.get(_reason(why), 0) + 1
            continue
        fitted_old, fitted_new = _fit_line_endings(text, old, new)
        if fitted_old in text:
            changes.append(_Change(rel, text, text.replace(fitted_old, fitted_new), text.count(fitted_old)))
    if len(changes) > MAX_CHANGED_FILES:
        raise ToolFailed(
            f"old_text is in {len(changes)} files, more than {MAX_CHANGED_FILES} at once; "
            "narrow the path or glob (nothing changed)"
        )
    return changes, skipped, scanned


def _peek(ws: Workspace, rel: str) -> bytes:
    try:
        return ws.read_bytes(rel, limit=EDIT_LIMIT)[0]
    except (PathRefused, OSError):
        return b""


def _reason(error: Exception) -> str:
    text = str(error)
    for why in ("binary", "not UTF-8", "larger than"):
        if why in text:
            return {"larger than": f"larger than {EDIT_LIMIT} bytes"}.get(why, why)
    return "unreadable"


def _apply(ws: Workspace, changes: list[_Change]) -> None:
    written: list[_Change] = []
    try:
        for change in changes:
            ws.write_bytes(change.path, change.after.encode("utf-8"), mkdirs=False)
            written.append(change)
    except (PathRefused, OSError) as exc:
        for change in reversed(written):  # put back what was already written: all or nothing
            ws.write_bytes(change.path, change.before.encode("utf-8"), mkdirs=False)
        raise ToolFailed(
            f"writing {change.path} failed ({exc}); the {len(written)} file(s) already "
            "written were restored, nothing changed"
        ) from None


_TEXT = {"type": "string", "maxLength": TEXT_LIMIT}

TOOLS = [
    Tool(
        name="edit_file",
        description="Replace exact text in a file (old_text must occur once).",
        params={
            "path": PATH,
            "old_text": _TEXT,
            "new_text": _TEXT,
            "replace_all": {"type": "boolean", "hidden": True},  # the refusal of a text found twice names it
        },
        required=("path", "old_text", "new_text"),
        fn=edit_file,
        risk="edit",
        writes=True,
    ),
    Tool(
        name="replace_in_files",
        description="Replace exact text in every matching file under a directory.",
        params={
            "old_text": _TEXT,
            "new_text": _TEXT,
            "path": {"type": "string"},
            "glob": {"type": "string", "description": "e.g. *.py"},
        },
        required=("old_text", "new_text"),
        fn=replace_in_files,
        risk="edit",
        writes=True,
    ),
]
