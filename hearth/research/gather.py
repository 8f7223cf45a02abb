"""What a research run takes from outside: searches and page reads, through the run's own guard.

A search is web_search's (`found`: ddgs, or the operator's search endpoint); a read is web_fetch's
(`fetch_page`: the guard checks every hop, the body is capped, HTML read by trafilatura). Both run
with the run's services (its network guard with its egress list, its redactor), so a research run
reaches exactly what a run of the same request could; no credential is offered to either. A page's
text is redacted, then normalised into its snapshot (hearth/research/text.py) with its SHA-256.

Pages of one round are read at the same time, at most `at_once`, in worker threads that only read
the network: what the guard records meanwhile (a refusal, a dropped header) waits in `Heard` and
is written by the run's own thread, as everything it records.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from agent.safety.workspace import Workspace
from agent.tools.registry import ToolFailed
from hearth.research.text import normalise

MAX_SNAPSHOT_CHARS = 200_000  # of a page's text kept (a book is not a page)
SEARCH_RESULTS = 8
FETCH_TIMEOUT_S = 30


@dataclass(frozen=True)
class Found:
    url: str
    title: str
    snippet: str


@dataclass(frozen=True)
class Snapshot:
    url: str  # where the page was read (after redirects)
    title: str
    kind: str  # html | text | json
    text: str  # normalised
    sha256: str


class Heard:
    """The guard's decisions made in worker threads, held until the run's thread writes them."""

    def __init__(self, write: Callable[[str, dict[str, Any]], None]) -> None:
        self.write, self.owner = write, threading.get_ident()
        self._held: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()

    def __call__(self, kind: str, detail: dict[str, Any]) -> None:
        if threading.get_ident() == self.owner:
            self.write(kind, detail)
            return
        with self._lock:
            self._held.append((kind, detail))

    def flush(self) -> None:
        with self._lock:
            held, self._held = self._held, []
        for kind, detail in held:
            self.write(kind, detail)


def search(ws: Workspace, query: str) -> list[Found]:
    """What one search found; ToolFailed with the reason."""
    from agent.tools.websearch import found

    results = found(ws, query, SEARCH_RESULTS)
    shaped = (_found(r) for r in results if isinstance(r, dict))
    return [f for f in shaped if f is not None]


def _found(result: dict[str, Any]) -> Found | None:
    url = result.get("href") or result.get("url")
    if not isinstance(url, str) or not url.strip():
        return None
    title = " ".join(str(result.get("title") or "").split())[:300]
    return Found(url.strip(), title, " ".join(str(result.get("body") or "").split())[:600])


def read(ws: Workspace, url: str) -> Snapshot:
    """One page read and kept as a snapshot; ToolFailed with the reason."""
    from agent.tools.web import fetch_page

    page = fetch_page({"url": url, "timeout_s": FETCH_TIMEOUT_S}, ws)
    text = normalise(ws.services.redact(page.text))[:MAX_SNAPSHOT_CHARS]
    if not text:
        raise ToolFailed(f"{page.url} has no readable text")
    digest = hashlib.sha256(text.encode()).hexdigest()
    return Snapshot(page.url, " ".join(page.title.split())[:300], page.kind, text, digest)


def read_all(
    ws: Workspace, urls: list[tuple[str, str]], at_once: int, start: Callable[[str], None]
) -> Iterator[tuple[str, Snapshot | str]]:
    """Each (key, url)'s page read, at most `at_once` at a time, as each ends: (key, its snapshot
    or why not). `start(key)` is called in this thread just before a read begins (its step is recorded)."""
    waiting = list(urls)
    going: dict[Future[Snapshot], str] = {}
    pool = ThreadPoolExecutor(max_workers=max(1, at_once), thread_name_prefix="research-read")
    try:
        while waiting or going:
            while waiting and len(going) < max(1, at_once):
                key, url = waiting.pop(0)
                start(key)
                going[pool.submit(read, ws, url)] = key
            ended, _ = wait(going, return_when=FIRST_COMPLETED)
            for future in ended:
                yield going.pop(future), _outcome(future)
    finally:  # a stop does not wait for a read in flight: the run records its end at once
        pool.shutdown(wait=False, cancel_futures=True)


def _outcome(future: Future[Snapshot]) -> Snapshot | str:
    try:
        return future.result()
    except ToolFailed as exc:
        return str(exc)
    except Exception as exc:  # a page that breaks the reader is that page's failure, not the run's
        return f"the page could not be read: {type(exc).__name__}: {exc}"
