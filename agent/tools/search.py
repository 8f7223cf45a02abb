"""search_files: plain text or a regular expression across the workspace, bounded in time, files and output.

A regular expression runs on the `regex` package, whose matching takes a timeout: the whole call
may spend at most REGEX_SECONDS matching, so a pathological pattern such as `(a|aa)+$` is stopped
there (the stdlib `re` would backtrack for hours and can only be interrupted by a signal, in the
main thread). Plain text is escaped first and matches in linear time.
"""

from __future__ import annotations

import contextlib
import re
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from agent.safety.workspace import PathRefused, Workspace
from agent.tools.args import MAX_SCANNED_FILES, candidate_files, integer
from agent.tools.registry import Tool, ToolFailed

SEARCH_SECONDS = 10.0  # the whole walk
REGEX_SECONDS = 2.0  # of matching a regular expression, summed over the call
FILE_LIMIT = 2_000_000  # bytes searched per file
TOTAL_LIMIT = 64_000_000  # bytes searched per call
LINE_SHOWN = 200
_BINARY_SNIFF = 8192


class _OutOfTime(Exception):
    pass


class _Matcher:
    """One compiled pattern; a regular expression is matched within what is left of its budget."""

    def __init__(self, compiled: Any, timed: bool) -> None:
        self.compiled = compiled
        self.deadline = time.monotonic() + REGEX_SECONDS if timed else None

    def __call__(self, line: str) -> bool:
        if self.deadline is None:
            return self.compiled.search(line) is not None
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise _OutOfTime(f"the regular expression used up its {REGEX_SECONDS:g}s; simplify the pattern")
        try:
            return self.compiled.search(line, timeout=left) is not None
        except TimeoutError:
            raise _OutOfTime(f"the regular expression used up its {REGEX_SECONDS:g}s; simplify the pattern") from None


@dataclass
class _Search:
    matcher: _Matcher
    max_results: int
    deadline: float
    results: list[str] = field(default_factory=list)
    files: int = 0  # searched
    seen: int = 0  # walked to, searched or skipped
    scanned: int = 0  # bytes
    skipped: dict[str, int] = field(default_factory=dict)
    stopped: str = ""


def search_files(args: dict[str, Any], ws: Workspace) -> str:
    search = _Search(_matcher(args), args.get("max_results", 100), time.monotonic() + SEARCH_SECONDS)
    start = args.get("path") or "."
    try:
        with _time_limit(SEARCH_SECONDS):
            for rel in candidate_files(ws, start, args.get("glob") or ""):
                if _search_one(ws, rel, search):
                    break
    except _OutOfTime as out:
        search.stopped = (
            f"stopped: {out}" if str(out) else f"stopped after {SEARCH_SECONDS:g}s; narrow the path, glob or pattern"
        )
    return _report(search, args["pattern"], ws.relpath(start))


def _matcher(args: dict[str, Any]) -> _Matcher:
    pattern = args["pattern"]
    if not pattern:
        raise ToolFailed("pattern is empty; give the text or regular expression to look for")
    if not args.get("regex"):
        return _Matcher(re.compile(re.escape(pattern), re.IGNORECASE if args.get("ignore_case") else 0), timed=False)
    import regex  # only when a regular expression is asked for

    try:
        return _Matcher(regex.compile(pattern, regex.IGNORECASE if args.get("ignore_case") else 0), timed=True)
    except regex.error as exc:
        raise ToolFailed(
            f"pattern is not a valid regular expression ({exc}); pass regex=false for plain text"
        ) from None


def _search_one(ws: Workspace, rel: str, search: _Search) -> bool:
    """Search one file; True when the search must stop (enough results, time or bytes spent)."""
    if time.monotonic() > search.deadline:
        raise _OutOfTime()
    search.seen += 1
    if search.seen > MAX_SCANNED_FILES:
        search.stopped = f"stopped after {MAX_SCANNED_FILES} files; narrow the path or glob"
        return True
    try:
        data, truncated = ws.read_bytes(rel, limit=FILE_LIMIT)
    except (PathRefused, OSError):  # replaced or removed since the walk listed it
        return _skip(search, "unreadable")
    if b"\0" in data[:_BINARY_SNIFF]:
        return _skip(search, "binary")
    if truncated:
        _skip(search, f"cut at {FILE_LIMIT} bytes")
    search.files += 1
    search.scanned += len(data)
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        if search.matcher(line):
            search.results.append(f"{rel}:{number}: {_shown(line)}")
            if len(search.results) >= search.max_results:
                search.stopped = f"stopped at {search.max_results} matches; narrow the pattern, path or glob"
                return True
    if search.scanned >= TOTAL_LIMIT:
        search.stopped = f"stopped after searching {TOTAL_LIMIT} bytes; narrow the path or glob"
        return True
    return False


def _skip(search: _Search, why: str) -> bool:
    search.skipped[why] = search.skipped.get(why, 0) + 1
    return False


def _shown(line: str) -> str:
    text = line.strip()
    return text if len(text) <= LINE_SHOWN else text[:LINE_SHOWN] + "..."


def _report(search: _Search, pattern: str, where: str) -> str:
    lines = list(search.results)
    if not lines:
        lines.append(f"no matches for {pattern!r} under {where} ({search.files} files searched)")
    notes = [search.stopped] if search.stopped else []
    notes += [f"{count} file(s) skipped: {why}" for why, count in sorted(search.skipped.items())]
    return "\n".join(lines + [f"[search_files: {note}]" for note in notes])


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Interrupt a runaway regular expression: re checks for signals while it backtracks.

    Only the main thread can take signals; elsewhere the per-file deadline is the only bound.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def out_of_time(signum: int, frame: Any) -> None:
        raise _OutOfTime()

    previous = signal.signal(signal.SIGALRM, out_of_time)
    old_delay, old_interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    started = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if old_delay:  # someone else's alarm keeps running, minus the time we took
            signal.setitimer(signal.ITIMER_REAL, max(old_delay - (time.monotonic() - started), 1e-3), old_interval)


TOOLS = [
    Tool(
        name="search_files",
        description="Find text in files.",
        params={
            "pattern": {
                "type": "string",
                "maxLength": 1000,
            },
            "path": {"type": "string"},
            "glob": {"type": "string", "description": "e.g. *.py"},
            "regex": {"type": "boolean", "hidden": True},
            "ignore_case": {"type": "boolean", "hidden": True},
            "max_results": {**integer("1 to 500 (default 100).", 1, 500), "hidden": True},
        },
        required=("pattern",),
        fn=search_files,
        risk="safe",
    ),
]
