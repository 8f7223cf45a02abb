"""The command center on an audit of 1,000 runs and one of 100,000: each page and API against its
floor, each at 100,000 against itself at 1,000, and the live stream's delay with 20 clients.

Both audits are served at once by the real app on loopback ports, and every measurement is paired
and interleaved (a round times the floor, the page and its SQL, at both sizes, one after another),
so a loaded machine slows both sides of each ratio alike.

- floor: an empty request to the same server (/api/session) plus the SQL the page ran, replayed
  bare on a read-only connection. The SQL is what the page's own reader executed (a trace of its
  connections while the page was fetched once), so the floor is the page's, not a guess at it.
  Target: page / floor <= 3x.
- growth: the page's time at 100,000 runs over its time at 1,000. Target: <= 1.5x (indexes and
  pagination, not full scans).
- SSE: a run's state file rewritten as a run does, 20 clients on /api/events: the delay from the
  write to the event at each client. Target: p95 < 250 ms.

Run: .venv/bin/python bench/web.py (about a minute; the 100,000-run seed is one transaction).
"""

from __future__ import annotations

import json
import math
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

# bench/ itself must not be on the path: bench/queue.py would shadow the standard library's queue
HERE = Path(__file__).resolve().parent
sys.path[:] = [str(HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != HERE]

import httpx

from agent.clock import stamp
from hearth.audit.store import AuditStore
from hearth.run.state import StateFile
from hearth.settings import Settings
from hearth.web.reader import Reader
from tests.web_support import Center

SIZES = (1_000, 100_000)
STEPS = 100
ROUNDS = 12
CLIENTS = 20
EVENTS = 30
PAGES = (
    "/",
    "/runs",
    "/runs?status=failed",
    "/runs?page=10",
    "/runs/long-00000",
    "/approvals",
    "/report",
    "/proposals",
    "/api/state",
    "/api/runs",
    "/api/runs/long-00000",
    "/api/approvals",
    "/api/report",
    "/metrics",
)
STATUSES = ("done", "done", "failed", "iteration_limit")


def seed(state_dir: Path, count: int) -> None:
    """`count` finished runs over the last 100 days and one run of STEPS steps, written with
    executemany in one transaction (the store's migrations make the schema first)."""
    state_dir.mkdir(parents=True)
    with AuditStore(state_dir / "audit.db"):
        pass
    now = time.time()
    rows = []
    for i in range(count):
        started = stamp_of(now - (i * 100 * 86400 / count))
        rows.append(
            (f"seed-{i:06d}", STATUSES[i % 4], ["builder", "notes"][i % 2], ["qwen2.5-coder:7b", "llama3.1"][i % 2],
             f"goal number {i} about {'tests' if i % 3 == 0 else 'docs'}", "auto", ["cli", "timer"][i % 2],
             started, started, 3, 100, 20, 1000 + i % 500)
        )  # fmt: skip
    rows.append(("long-00000", "done", "builder", "m", "the long one", "auto", "cli", stamp_of(now), stamp_of(now),
                 STEPS, 100, 20, 5000))  # fmt: skip
    columns = (
        "id status agent_name model goal mode source started_at ended_at iterations tokens_in tokens_out duration_ms"
    )
    step = "run_id seq kind iteration tool arguments output ok verdict at"
    steps = [
        ("long-00000", seq, "tool", seq, "read_file", "{}", "x" * 200, 1, "run", stamp_of(now))
        for seq in range(1, STEPS + 1)
    ]
    with AuditStore(state_dir / "audit.db") as audit:
        audit.insert_runs(columns.split(), rows)
        audit.insert_steps(step.split(), steps)
        audit.analyze()


def stamp_of(seconds: float) -> str:
    from datetime import UTC, datetime

    return stamp(datetime.fromtimestamp(seconds, UTC))


class Traced:
    """The SQL the app's reader runs, as executed (values expanded), while `recording` is on."""

    def __init__(self) -> None:
        self.recording = False
        self.statements: list[str] = []
        self._open = Reader._conn
        self._traced: set[int] = set()

    def install(self) -> None:
        traced = self

        def conn(reader: Reader) -> sqlite3.Connection | None:
            made = traced._open(reader)
            if made is not None and id(made) not in traced._traced:
                made.set_trace_callback(traced._seen)
                traced._traced.add(id(made))
            return made

        Reader._conn = conn  # type: ignore[method-assign]

    def _seen(self, sql: str) -> None:
        if self.recording and not sql.lstrip().lower().startswith(("pragma", "begin", "commit")):
            self.statements.append(sql)

    @contextmanager
    def record(self) -> Iterator[list[str]]:
        self.statements, self.recording = [], True
        try:
            yield self.statements
        finally:
            self.recording = False


def p50(values: list[float]) -> float:
    return percentile(values, 0.5)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p * len(ordered)) - 1)] if ordered else float("nan")


def clock(action: Callable[[], object]) -> float:
    began = time.perf_counter()
    action()
    return (time.perf_counter() - began) * 1000


def fetch(client: httpx.Client, path: str) -> Callable[[], object]:
    def get() -> object:
        answer = client.get(path)
        assert answer.status_code == 200, (path, answer.status_code, answer.text[-500:])
        return answer.content

    return get


def replay(conn: sqlite3.Connection, statements: list[str]) -> Callable[[], object]:
    def run() -> object:
        return [conn.execute(sql).fetchall() for sql in statements]

    return run


def pages(centers: dict[int, Center], traced: Traced, dirs: dict[int, Path]) -> list[str]:
    clients = {n: c.client() for n, c in centers.items()}
    conns = {n: sqlite3.connect(f"file:{dirs[n] / 'audit.db'}?mode=ro", uri=True) for n in centers}
    sql: dict[tuple[int, str], list[str]] = {}
    for n, client in clients.items():
        for path in PAGES:
            fetch(client, path)()  # warm: imports, caches, the page cache of the file
            with traced.record() as seen:
                fetch(client, path)()
            sql[n, path] = list(seen)
    times: dict[tuple[str, int, str], list[float]] = {}
    for _ in range(ROUNDS):
        for path in PAGES:
            for n in SIZES:
                times.setdefault(("floor", n, path), []).append(clock(fetch(clients[n], "/api/session")))
                times.setdefault(("page", n, path), []).append(clock(fetch(clients[n], path)))
                times.setdefault(("sql", n, path), []).append(clock(replay(conns[n], sql[n, path])))
    lines, misses = [], []
    for path in PAGES:
        over = {
            n: p50(times["page", n, path]) / (p50(times["floor", n, path]) + p50(times["sql", n, path])) for n in SIZES
        }
        growth = p50(times["page", SIZES[1], path]) / p50(times["page", SIZES[0], path])
        big = SIZES[1]
        ok = over[big] <= 3 and growth <= 1.5
        misses += [] if ok else [path]
        lines.append(
            f"{path:<22} 1k p50 {p50(times['page', SIZES[0], path]):7.2f} ms  100k p50 {p50(times['page', big, path]):7.2f} ms"
            f" | SQL {len(sql[big, path]):2d} stmts {p50(times['sql', big, path]):6.2f} ms"
            f" | over floor 1k {over[SIZES[0]]:4.2f}x 100k {over[big]:4.2f}x (<= 3x)"
            f" | 100k/1k {growth:4.2f}x (<= 1.5x){'' if ok else '  MISS'}"
        )
    for conn in conns.values():
        conn.close()
    lines.append(f"pages over a target: {', '.join(misses) or 'none'}")
    return lines


def sse(center: Center, state_dir: Path) -> list[float]:
    """CLIENTS streams open; EVENTS state changes written; the delay of each at each client."""
    arrived: list[dict[str, float]] = [{} for _ in range(CLIENTS)]
    ready = threading.Barrier(CLIENTS + 1, timeout=30)

    done = threading.Event()

    def listen(mine: dict[str, float]) -> None:
        with httpx.Client(base_url=center.url, timeout=30) as client, client.stream("GET", "/api/events") as stream:
            ready.wait()
            for text in stream.iter_lines():
                if text.startswith("data: ") and "bench-" in text:
                    for run in json.loads(text[6:])["active"]:
                        mine.setdefault(run.get("detail") or "", time.perf_counter())
                if len(mine) >= EVENTS or done.is_set():
                    return

    readers = [threading.Thread(target=listen, args=(a,), daemon=True) for a in arrived]
    for reader in readers:
        reader.start()
    ready.wait()
    state = StateFile(state_dir / "state", "bench-run", agent_name="bench", model="m")
    written = {}
    for i in range(EVENTS):
        detail = f"bench-{i}"
        written[detail] = time.perf_counter()
        state.update("thinking", detail, i)
        time.sleep(0.15)  # the pace of a run's state changes, not a synchronisation
    state.update("thinking", "bench-end", EVENTS)  # a last event wakes a client that missed one
    time.sleep(0.5)
    done.set()
    state.update("thinking", "bench-after", EVENTS + 1)
    for reader in readers:
        reader.join(15)
    state.remove()
    return [(mine[d] - written[d]) * 1000 for mine in arrived for d in written if d in mine]


def say(text: str) -> None:
    print(text, flush=True)


def main() -> None:
    traced = Traced()
    traced.install()
    with tempfile.TemporaryDirectory() as scratch, ExitStack() as stack:
        dirs = {n: Path(scratch) / f"audit-{n}" / "state" for n in SIZES}
        centers = {}
        for n in SIZES:
            began = time.perf_counter()
            seed(dirs[n], n)
            (dirs[n] / "state").mkdir()
            say(f"seeded {n:,} runs and one of {STEPS} steps in {time.perf_counter() - began:.1f} s")
            env = {"HEARTH_STATE_DIR": str(dirs[n]), "HEARTH_CONFIG_DIR": str(Path(scratch) / f"config-{n}")}
            centers[n] = stack.enter_context(Center(Settings.from_env(env)))
        for text in pages(centers, traced, dirs):
            say(text)
        delays = sse(centers[SIZES[1]], dirs[SIZES[1]])
    print(
        f"state change -> SSE event, {CLIENTS} clients x {EVENTS} changes ({len(delays)} seen) at 100k runs: "
        f"p50 {p50(delays):.1f} ms, p95 {percentile(delays, 0.95):.1f} ms (target p95 < 250 ms)"
    )


if __name__ == "__main__":
    main()
