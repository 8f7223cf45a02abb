"""Helpers the tool kinds share, so no kind imports another: argument specs, path kinds, the
files a search or an edit walks, and the run's knowledge store and network guard."""

from __future__ import annotations

import fnmatch
import posixpath
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agent.safety.display import shorten
from agent.safety.workspace import Workspace
from agent.tools.registry import ToolFailed

if TYPE_CHECKING:
    from agent.knowledge.store import KnowledgeStore
    from agent.net.guard import NetGuard

PATH = {"type": "string"}  # the system prompt says once that every path is relative to the workspace
SCOPES = ("global", "agent")
SCOPE = {
    "type": "string",
    "enum": list(SCOPES),
    "description": "global: every agent; agent: only this one.",
}
# not worth a model's context, and often huge: VCS data, dependencies, caches, build output
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".eggs",
        "build",
        "dist",
        "target",
        ".tmp",
    }
)


# files one search or many-file edit looks at: past it the walk stops and the result says so
MAX_SCANNED_FILES = 5_000


def integer(description: str, low: int, high: int) -> dict[str, Any]:
    """An integer parameter whose bounds the gate enforces (the description says them in words)."""
    return {"type": "integer", "minimum": low, "maximum": high, "description": description}


def kind_of(ws: Workspace, path: str) -> str | None:
    """'file', 'dir' or 'other' at ``path``, following symlinks that stay inside; None when missing.

    A symlink leading out raises PathRefused, like any other use of it would.
    """
    entry = ws.stat(path)
    if entry is None or entry.kind != "symlink":
        return entry.kind if entry else None
    try:
        ws.iter_dir(path)
        return "dir"
    except NotADirectoryError:
        return "file"
    except FileNotFoundError:
        return None


def require_dir(ws: Workspace, path: str) -> str:
    kind = kind_of(ws, path)
    if kind is None:
        raise ToolFailed(f"directory not found: {shorten(path)}")
    if kind != "dir":
        raise ToolFailed(f"{shorten(path)} is not a directory")
    return path


def candidate_files(ws: Workspace, start: str, glob: str) -> Iterator[str]:
    """Regular files under ``start`` (or ``start`` itself) whose name or path matches ``glob``."""
    kind = kind_of(ws, start)
    if kind is None:
        raise ToolFailed(f"path not found: {shorten(start)}")
    if kind == "file":
        yield ws.relpath(start)
        return
    if kind != "dir":
        raise ToolFailed(f"{shorten(start)} is not a file or directory")
    for rel, found in ws.walk(start, skip_dirs=SKIP_DIRS):
        if found.kind == "file" and (not glob or glob_matches(rel, glob)):
            yield rel


def glob_matches(rel: str, glob: str) -> bool:
    target = rel if "/" in glob else posixpath.basename(rel)
    return fnmatch.fnmatchcase(target, glob)


# per run: a run may fill the shared knowledge base only so much (every later run recalls from it)
MAX_KB_DOCUMENTS_PER_RUN = 50  # documents stored by kb_add and fetch_to_kb together
MAX_INDEXED_FILES_PER_RUN = 20_000  # files index_dir may read into it, over all its calls


def count_use(ws: Workspace, counter: str, cap: int, what: str, n: int = 1) -> None:
    """`n` more of a run's allowance `counter`; ToolFailed, before anything is stored, past `cap`."""
    used = ws.services.counts.get(counter, 0)
    if used + n > cap:
        raise ToolFailed(f"{what} already ran {cap} times in this run, its limit; nothing was stored")
    ws.services.counts[counter] = used + n


def within_run(timeout: float, deadline: float | None, undone: str) -> float:
    """A tool's timeout cut to what is left of the run's time limit; ToolFailed (saying what was
    `undone`: "the command was not started") once nothing is left."""
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise ToolFailed(f"the run's time limit has been reached; {undone}")
    return min(timeout, left)


def store_of(ws: Workspace) -> KnowledgeStore:
    from agent.knowledge.store import run_store

    store = run_store(ws.services)
    if store is None:
        raise ToolFailed("no knowledge base is configured for this run")
    return store


def scope_arg(args: dict[str, Any], ws: Workspace, default: str) -> str:
    return f"agent:{ws.services.agent_name}" if args.get("scope", default) == "agent" else "global"


def guard_of(ws: Workspace) -> NetGuard:
    """The run's network guard, else the default one (public addresses only, system DNS)."""
    from agent.net.guard import run_guard

    return run_guard(ws.services)
