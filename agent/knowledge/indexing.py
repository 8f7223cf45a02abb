"""Indexing a directory of the workspace into the knowledge base, incrementally.

The walk goes through the Workspace (so containment holds), never through a symlink, and skips
version-control and dependency directories (`.git`, `node_modules`, virtualenvs: any directory
holding a `pyvenv.cfg`, and the usual names), files over 1 MB and binary files. A directory's
documents form a collection named by its absolute path (and glob): indexing it again compares
each file's content hash with the stored one, rewrites only what changed, and drops the
documents of files that are gone.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from agent.knowledge.store import KnowledgeStore, document_hash
from agent.safety.workspace import Entry, PathRefused, Workspace

MAX_FILE_BYTES = 1_000_000
MAX_FILES = 20_000  # per call; past it the index stops, and keeps what it had for files not reached
BATCH = 200  # files per write transaction: other runs' writes wait at most this long
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".direnv",
        ".cache",
    }
)


@dataclass
class IndexReport:
    files: int = 0
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: int = 0
    chunks_added: int = 0
    chunks_removed: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    stopped: bool = False  # `limit` reached: nothing was removed, files past it were not looked at
    limit: int = MAX_FILES  # the files this call could read (fewer when the run's allowance is nearly spent)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def summary(self, where: str) -> str:
        skipped = ", ".join(f"{n} {why}" for why, n in sorted(self.skipped.items())) or "none"
        stopped = f"; stopped at {self.limit} files (index a subdirectory or pass a glob)" if self.stopped else ""
        return (
            f"indexed {where}: {self.files} text files ({self.new} new, {self.changed} changed, "
            f"{self.unchanged} unchanged), {self.removed} removed; chunks {self.chunks_added} added, "
            f"{self.chunks_removed} removed; skipped: {skipped}{stopped}"
        )


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A shell glob over relative paths: `*` and `?` stay inside one directory, `**/` spans any.

    A pattern without a slash matches the file name at any depth (`*.py`), as .gitignore does.
    """
    if "/" not in pattern:
        pattern = "**/" + pattern
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            out.append({"*": "[^/]*", "?": "[^/]"}.get(pattern[i], re.escape(pattern[i])))
            i += 1
    return re.compile("".join(out) + r"\Z")


def walk_text_files(ws: Workspace, top: str, report: IndexReport) -> Iterator[tuple[str, Entry]]:
    """(workspace-relative path, entry) of every candidate file under top, skipping as documented."""
    entries = ws.iter_dir(top)
    if any(e.name == "pyvenv.cfg" for e in entries) and top != ".":
        report.skip("virtualenv dirs")
        return
    for entry in entries:
        rel = entry.name if top == "." else f"{top}/{entry.name}"
        if entry.kind == "dir":
            if entry.name in SKIP_DIRS:
                report.skip("skipped dirs")
            else:
                yield from walk_text_files(ws, rel, report)
        elif entry.kind == "symlink":
            report.skip("symlinks")
        elif entry.kind != "file":
            report.skip("special files")
        elif entry.size > MAX_FILE_BYTES:
            report.skip("over 1 MB")
        else:
            yield rel, entry


def index_directory(
    store: KnowledgeStore,
    ws: Workspace,
    path: str,
    *,
    glob: str | None = None,
    scope: str = "global",
    max_files: int | None = None,
) -> IndexReport:
    """Index (or re-index) one workspace directory; see the module docstring. `max_files` lowers
    the per-call cap (what is left of a run's allowance)."""
    limit = MAX_FILES if max_files is None else min(max_files, MAX_FILES)
    top, base = _directory(ws, path)
    collection = str(base) + (f" ({glob})" if glob else "")
    matcher = glob_regex(glob) if glob else None
    known = store.collection_hashes(collection, scope)
    report, seen, batch = IndexReport(), set(), []
    for rel, _ in walk_text_files(ws, top, report):
        inside = rel if top == "." else posixpath.relpath(rel, top)
        if matcher and not matcher.match(inside):
            continue
        if report.files >= limit:
            report.stopped, report.limit = True, limit
            break
        item = _read(ws, rel, report)
        if item is None:
            continue
        source = str(ws.root / rel)
        seen.add(source)
        report.files += 1
        if known.get(source) == document_hash(rel, item):
            report.unchanged += 1
            continue
        batch.append((source, rel, item))
        if len(batch) >= BATCH:
            _store(store, batch, known, collection, scope, report)
    _store(store, batch, known, collection, scope, report, gone=set() if report.stopped else set(known) - seen)
    if report.chunks_added:
        store.embed_pending()  # within its bound; what is left is embedded later (hearth kb embed, watch)
    return report


def _directory(ws: Workspace, path: str) -> tuple[str, Path]:
    """The directory to index, relative to the workspace and in full; PathRefused for anything else."""
    top = ws.relpath(path)
    if (entry := ws.stat(top)) is None or entry.kind != "dir":
        raise PathRefused(f"{path!r} is not a directory in the workspace")
    return top, ws.root / top if top != "." else ws.root


def _read(ws: Workspace, rel: str, report: IndexReport) -> str | None:
    try:
        text, _ = ws.read_text(rel, limit=MAX_FILE_BYTES)
    except PathRefused:
        report.skip("binary files")
        return None
    except OSError:
        report.skip("unreadable files")
        return None
    if "\ufffd" in text[:4096] and text[:4096].count("\ufffd") > 8:
        report.skip("binary files")  # not UTF-8 text, whatever its bytes are
        return None
    return text


def _store(
    store: KnowledgeStore,
    batch: list[tuple[str, str, str]],
    known: dict[str, str],
    collection: str,
    scope: str,
    report: IndexReport,
    gone: set[str] | None = None,
) -> None:
    with store.writing():
        for source, title, text in batch:
            stored = store.put(text, title, source, scope, "file", collection)
            report.new += source not in known
            report.changed += source in known
            report.chunks_added += stored.added
            report.chunks_removed += stored.removed
        if gone:
            report.removed += store.remove_sources(sorted(gone), scope)
    batch.clear()
