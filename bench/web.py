"""The command center on a 10,000-run audit: page and API latency against the bare SQL behind each,
and the delay from a live state change to its event at a connected client.

All measured in this one run, against the real app served on a loopback port:

- the runs list (page 1 of 10,000), a run of 100 steps, and the report over every run: p50/p95 of
  the page and of its /api twin, as a ratio to the same SQL statements run bare (one open
  read-only connection, rows fetched into Python). Target: <= 3x. Also printed: the ratio to the
  empty HTTP round trip (/api/session) plus that SQL, which is what the page's own work costs.
- a run's state file rewritten as a run does (StateFile.update) while a client holds
  /api/events open: time from the write to the event arriving. Target: p95 < 250 ms.
"""

from __future__ import annotations

import json
import math
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# bench/ itself must not be on the path: bench/queue.py would shadow the standard library's queue
HERE = Path(__file__).resolve().parent
sys.path[:] = [str(HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != HERE]

import httpx

from hearth.report import report_statements
from hearth.run.state import StateFile
from hearth.settings import Settings
from tests.web_support import Center, seed_runs

RUNS = 10_000
STEPS = 100
REPEAT = 40
EVENTS = 40
LIST_SQL = [
    ("select count(*) as n from runs", []),
    (
        "select id, status, agent_name, model, source, mode, requested_by, iterations, tokens_in, tokens_out, "
        "duration_ms, started_at, ended_at, substr(goal, 1, 240) as goal from runs order by started_at desc, "
        "rowid desc limit 50 offset 0",
        [],
    ),
]
RUN_SQL = [
    ("select * from runs where id = ?", ["long-00000"]),
    ("select * from steps where run_id = ? order by seq", ["long-00000"]),
    ("select * from checkpoints where run_id = ? order by id", ["long-00000"]),
    ("select * from approvals where run_id = ? order by requested_at", ["long-00000"]),
]
# what the report page runs: the report's own statements (hearth/report.py), then the rest of it
REPORT_SQL: list[tuple[str, Any]] = [
    *report_statements(""),
    (
        "select s.tool as tool, count(*) as calls, sum(s.ok = 1) as ok, sum(s.ok = 0 and s.verdict not in "
        "('denied')) as failed, sum(s.verdict = 'denied') as denied, sum(s.verdict = 'approved') as approved "
        "from steps s join runs r on r.id = s.run_id where s.kind = 'tool' and r.started_at >= ? group by s.tool",
        [""],
    ),
    (
        "select s.tool as tool, s.output as output from steps s join runs r on r.id = s.run_id "
        "where s.kind = 'tool' and s.verdict = 'denied' and r.started_at >= ?",
        [""],
    ),
    ("select host, count(*) from connections where at >= ? group by host", [""]),
    ("select * from tripwires where at >= ?", [""]),
    (
        "select substr(started_at, 1, 10) as day, status, count(*) as runs, coalesce(sum(tokens_in), 0), "
        "coalesce(sum(tokens_out), 0) from runs where started_at >= ? group by day, status order by day",
        [""],
    ),
]


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p * len(ordered)) - 1)]


def timed(action: Callable[[], object]) -> list[float]:
    action()  # warm: the first call pays for imports and the page cache
    times = []
    for _ in range(REPEAT):
        began = time.perf_counter()
        action()
        times.append((time.perf_counter() - began) * 1000)
    return times


def bare(conn: sqlite3.Connection, statements: list[tuple[str, Any]]) -> Callable[[], object]:
    def run() -> object:
        return [conn.execute(sql, params).fetchall() for sql, params in statements]

    return run


def get(client: httpx.Client, path: str) -> Callable[[], object]:
    def fetch() -> object:
        answer = client.get(path)
        assert answer.status_code == 200, (path, answer.status_code, answer.text[-2000:])
        return answer.content

    return fetch


def line(name: str, page: list[float], sql: list[float], floor: list[float]) -> str:
    """The page against the bare SQL (the target's ratio), and against the HTTP floor plus that SQL:
    what the page itself adds, since no page can answer faster than an empty HTTP round trip."""
    p50, p95 = percentile(page, 0.5), percentile(page, 0.95)
    s50, s95 = percentile(sql, 0.5), percentile(sql, 0.95)
    f50 = percentile(floor, 0.5) + s50
    return (
        f"{name:<28} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms | bare SQL p50 {s50:6.2f} ms p95 {s95:6.2f} ms "
        f"| ratio p50 {p50 / s50:5.2f}x  p95 {p95 / s95:5.2f}x | over floor+SQL p50 {p50 / f50:5.2f}x"
    )


def latencies(center: Center, state_dir: Path) -> None:
    conn = sqlite3.connect(f"file:{state_dir / 'audit.db'}?mode=ro", uri=True)
    client = center.client()
    floor = timed(get(client, "/api/session"))
    print(
        f"{'HTTP floor /api/session':<28} p50 {percentile(floor, 0.5):7.2f} ms  p95 {percentile(floor, 0.95):7.2f} ms (no SQL)"
    )
    for name, statements, paths in (
        ("runs list (10,000 runs)", LIST_SQL, ("/runs", "/api/runs")),
        (f"run page ({STEPS} steps)", RUN_SQL, ("/runs/long-00000", "/api/runs/long-00000")),
        ("report (every run)", REPORT_SQL, ("/report?since=", "/api/report")),
    ):
        sql = timed(bare(conn, statements))
        for path in paths:
            print(line(f"{name} {path.split('?')[0]}", timed(get(client, path)), sql, floor))
    conn.close()


def event_delays(center: Center, state_dir: Path) -> list[float]:
    """Write a state change, note when; the reader thread notes when its event arrived."""
    arrived: dict[str, float] = {}
    ready = threading.Event()

    def listen() -> None:
        with httpx.Client(base_url=center.url, timeout=30) as client, client.stream("GET", "/api/events") as stream:
            ready.set()
            for text in stream.iter_lines():
                if text.startswith("data: ") and "bench-" in text:
                    for run in json.loads(text[6:])["active"]:
                        arrived.setdefault(run.get("detail") or "", time.perf_counter())
                if len(arrived) >= EVENTS:
                    return

    reader = threading.Thread(target=listen, daemon=True)
    reader.start()
    ready.wait(10)
    time.sleep(0.3)
    state = StateFile(state_dir / "state", "bench-run", agent_name="bench", model="m")
    written = {}
    for i in range(EVENTS):
        detail = f"bench-{i}"
        written[detail] = time.perf_counter()
        state.update("thinking", detail, i)
        time.sleep(0.12)
    reader.join(10)
    state.remove()
    return [(arrived[d] - written[d]) * 1000 for d in written if d in arrived]


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        state_dir = Path(scratch) / "state"
        began = time.perf_counter()
        seed_runs(state_dir, RUNS)
        seed_runs(state_dir, 1, prefix="long", steps=STEPS)
        (state_dir / "state").mkdir()
        print(f"seeded {RUNS:,} runs and one of {STEPS} steps in {time.perf_counter() - began:.1f} s")
        settings = Settings.from_env({"HEARTH_STATE_DIR": str(state_dir), "HEARTH_CONFIG_DIR": scratch})
        with Center(settings) as center:
            latencies(center, state_dir)
            delays = event_delays(center, state_dir)
    print(
        f"state change -> SSE event at a client, {len(delays)} of {EVENTS} changes: "
        f"p50 {percentile(delays, 0.5):.1f} ms, p95 {percentile(delays, 0.95):.1f} ms (target p95 < 250 ms)"
    )


if __name__ == "__main__":
    main()
