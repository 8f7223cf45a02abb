"""The fleet on one machine: a real redis-server on loopback, a hub (`hearth serve --watch`,
HEARTH_LAUNCHER=celery) and two workers (`hearth worker`, two runs at once each), each worker with
its own fake Ollama (tests/fleet_support.py). Measured in this one run:

- request accepted at the hub -> run started on a worker: from the file landing in the hub's queue
  to the run's `started_at` (the worker's stamp; one clock, one machine), one request at a time.
  Target: p50 < 150 ms on loopback.
- throughput: BATCH short requests across the two workers against the same BATCH on one box
  (`hearth watch --concurrency 2`, the local launcher), from the first file to the last run done;
  the two are run one after the other, then again in the other order, and the ratio is of the sums.
  Target: >= 1.7x. Measured twice:
  * with the model as the bottleneck, as a fleet is for: each box's Ollama (its GPU) answers one
    request at a time and takes MODEL_S (default 0.25 s, a short reply of a small model) for each,
    so the one box has one such model and the fleet two. This is the target's number.
  * with a model that answers at once: hearth's own work alone, where both sides share the same
    cores of this one machine (a run is mostly its process's start-up), so two "boxes" here can
    only be as fast as the cores the one box already uses; printed beside the CPU count, not a target.
- event lag at the hub: for every step of the batch's runs, the hub's write of it against the
  worker's stamp of it (`fleet_events.lag_ms`). Target: p95 < 250 ms.

    python bench/fleet.py [--batch 200] [--starts 20] [--model-s 0.25]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:] = [str(HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != HERE]

from hearth.audit import fleet, runs
from hearth.audit.reader import AuditReader
from tests.cli_support import start_watch, stop_watch
from tests.fake_ollama import FakeOllama, final_answer
from tests.fleet_support import REDIS, Hub, Redis, Worker, request
from tests.queue_support import drop, wait_for


def stamp(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def audit_of(state: Path) -> AuditReader:
    return AuditReader(state / "audit.db")


def done(state: Path, ids: list[str]) -> bool:
    try:
        found = runs.statuses(audit_of(state), ids)
    except Exception:
        return False
    return list(found.values()).count("done") == len(ids)


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
    return fleet.fleet_run(audit_of(hub.state), run_id) or {}


def gpu(seconds: float) -> object:
    """A fake model's reply as one GPU gives it: one request at a time, each taking `seconds`."""
    busy = threading.Lock()

    def reply(body: dict) -> dict:
        with busy:
            time.sleep(seconds)
        return final_answer("done")

    return reply


def both_orders(hub: Hub, root: Path, box: FakeOllama, tag: str, batch: int) -> tuple[float, float]:
    """(the fleet's seconds, the one box's) for `batch` runs each, run fleet-box then box-fleet."""
    half = max(1, batch // 2)
    fleet_s = fleet_batch(hub, f"f{tag}a", half)
    box_s = one_box_batch(root, box, f"b{tag}a", half)
    box_s += one_box_batch(root, box, f"b{tag}b", batch - half)
    fleet_s += fleet_batch(hub, f"f{tag}b", batch - half)
    return fleet_s, box_s


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--model-s", type=float, default=0.25, help="a model reply's time on its GPU")
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
            fleet_cpu, box_cpu = both_orders(hub, root, fakes[2], "c", args.batch)
            for fake in fakes:
                fake.script[:] = [gpu(args.model_s)]  # each box's own GPU from here on
            fleet_gpu, box_gpu = both_orders(hub, root, fakes[2], "g", args.batch)
            lags = fleet.lags(audit_of(hub.state), "StepRecorded", "f")
            by_worker = runs.per_worker(audit_of(hub.state), "f")
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
    print(f"accepted -> claimed by a worker: p50 {statistics.median(taken):.0f} ms, p95 {percentile(taken, 95):.0f} ms")
    print(
        f"{args.batch} runs, each box's model {args.model_s:.2f} s a reply, one at a time: two workers "
        f"{fleet_gpu:.1f} s, one box {box_gpu:.1f} s: {box_gpu / fleet_gpu:.2f}x (target >= 1.7)"
    )
    print(
        f"{args.batch} runs, a model that answers at once (hearth's own work, both sides on these "
        f"{os.cpu_count()} CPUs): two workers {fleet_cpu:.1f} s, one box {box_cpu:.1f} s: {box_cpu / fleet_cpu:.2f}x"
    )
    print("  runs per worker: " + ", ".join(f"{worker} {n}" for worker, n in by_worker.items()))
    print(
        f"event lag at the hub: p50 {statistics.median(lags):.0f} ms, p95 {percentile(lags, 95):.0f} ms (target p95 < 250)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
