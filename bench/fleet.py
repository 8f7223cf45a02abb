"""The fleet on one machine: a real redis-server on loopback, a hub (`hearth serve --watch`,
HEARTH_LAUNCHER=celery) and two workers (`hearth worker`, two runs at once each), each worker with
its own fake Ollama that answers at once (tests/fleet_support.py). Measured in this one run:

- request accepted at the hub -> run started on a worker: from the file landing in the hub's queue
  to the run's `started_at` (the worker's stamp; one clock, one machine), one request at a time.
  Target: p50 < 150 ms on loopback.
- throughput: BATCH short requests across the two workers against the same BATCH on one box
  (`hearth watch --concurrency 2`, the local launcher), from the first file to the last run done;
  the two are run one after the other, then again in the other order, and the ratio is of the sums.
  Target: >= 1.7x. On one machine both sides share its cores: a run is mostly its interpreter's
  start-up, so the two workers can only be as fast as the cores the one box already uses; the
  printed CPU count says how far apart the boxes really are here.
- event lag at the hub: for every step of the batch's runs, the hub's write of it against the
  worker's stamp of it (`fleet_events.lag_ms`). Target: p95 < 250 ms.

    python bench/fleet.py [--batch 200] [--starts 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:] = [str(HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != HERE]

from tests.cli_support import start_watch, stop_watch
from tests.fake_ollama import FakeOllama, final_answer
from tests.fleet_support import REDIS, Hub, Redis, Worker, request
from tests.queue_support import drop, rows, wait_for


def stamp(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def done(state: Path, ids: list[str]) -> bool:
    try:
        found = rows(
            state,
            f"select count(*) as n from runs where status = 'done' and id in ({','.join('?' * len(ids))})",
            *ids,
        )
    except Exception:
        return False
    return found[0]["n"] == len(ids)


def fleet_batch(hub: Hub, prefix: str, count: int) -> float:
    ids = [f"{prefix}-{i:04d}" for i in range(count)]
    began = time.monotonic()
    for run_id in ids:
        drop(hub.state / "queue", f"{run_id}.json", request(run_id))
    wait_for(lambda: done(hub.state, ids), 1800, f"{count} runs on the fleet")
    return time.monotonic() - began


def one_box_batch(root: Path, fake: FakeOllama, prefix: str, count: int) -> float:
    state = root / f"box-{prefix}"
    env = {"HEARTH_STATE_DIR": str(state), "OLLAMA_HOST": fake.url, "HEARTH_SANDBOX": "none",
           "HEARTH_CONFIG_DIR": str(root / "box-config")}  # fmt: skip
    watch = start_watch(env, "--concurrency", "2")
    ids = [f"{prefix}-{i:04d}" for i in range(count)]
    try:
        began = time.monotonic()
        for run_id in ids:
            drop(state / "queue", f"{run_id}.json", request(run_id))
        wait_for(lambda: done(state, ids), 1800, f"{count} runs on one box")
        return time.monotonic() - began
    finally:
        stop_watch(watch)


def hub_row(hub: Hub, run_id: str) -> dict:
    return rows(hub.state, "select * from fleet_runs where run_id = ?", run_id)[0]


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--starts", type=int, default=20)
    args = parser.parse_args()
    if REDIS is None:
        print("bench/fleet.py: redis-server is not installed (scripts/bootstrap.sh installs it)")
        return 1
    with tempfile.TemporaryDirectory(prefix="hearth-bench-fleet-") as tmp:
        root = Path(tmp)
        redis = Redis(root / "redis").start()
        fakes = [FakeOllama([final_answer("done")], repeat_last=True).__enter__() for _ in range(3)]
        hub = Hub(root, redis).start()
        workers = [
            Worker(
                root, f"w{i}", hub.add_worker(f"w{i}"), redis, hub, fakes[i].url, HEARTH_FLEET_CONCURRENCY="2"
            ).start()
            for i in range(2)
        ]
        try:
            starts, taken = [], []
            for i in range(args.starts):
                run_id = f"start-{i:03d}"
                accepted = time.time()
                drop(hub.state / "queue", f"{run_id}.json", request(run_id))
                run = wait_for(lambda: hub.run(run_id), 60, "the run to start")  # noqa: B023
                starts.append((stamp(run["started_at"]) - accepted) * 1000)
                claimed = hub_row(hub, run_id)["claimed_at"]
                taken.append((claimed - accepted) * 1000)
                wait_for(lambda: done(hub.state, [run_id]), 60, "the run to end")  # noqa: B023
            half = max(1, args.batch // 2)
            fleet_s = fleet_batch(hub, "fa", half)
            box_s = one_box_batch(root, fakes[2], "ba", half)
            box_s += one_box_batch(root, fakes[2], "bb", args.batch - half)
            fleet_s += fleet_batch(hub, "fb", args.batch - half)
            lags = [
                r["lag_ms"]
                for r in rows(
                    hub.state, "select lag_ms from fleet_events where kind = 'StepRecorded' and run_id like 'f%'"
                )
            ]
            by_worker = rows(hub.state, "select worker, count(*) as n from runs where id like 'f%' group by worker")
        finally:
            for worker in workers:
                worker.stop()
            hub.stop()
            redis.stop()
            for fake in fakes:
                fake.__exit__(None, None, None)
    print(f"machine: {os.cpu_count()} CPUs; batch {args.batch}, starts {args.starts}")
    print(
        f"accepted -> started on a worker: p50 {statistics.median(starts):.0f} ms, p95 {percentile(starts, 95):.0f} ms (target p50 < 150)"
    )
    print(
        f"{args.batch} runs: two workers {fleet_s:.1f} s, one box {box_s:.1f} s: {box_s / fleet_s:.2f}x (target >= 1.7)"
    )
    print("  runs per worker: " + ", ".join(f"{r['worker']} {r['n']}" for r in by_worker))
    print(
        f"event lag at the hub: p50 {statistics.median(lags):.0f} ms, p95 {percentile(lags, 95):.0f} ms (target p95 < 250)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
