"""The queue path: latency from a request landing to its run starting, and throughput of trivial runs.

All against one fake Ollama (a scripted model answering at once), measured in this one run:

- landing -> start under `hearth watch`: requests dropped one at a time; a run has started when
  its audit row exists (`runs.started_at`, written by the run's own process);
- throughput: 100 one-turn runs through `hearth spawn --local`, against the same 100 goals run
  in this process with `run_goal` and no queue at all (the ratio is what the queue, a process
  per run and the file moves cost);
- a cold `hearth agent` (a fresh interpreter per run, as each systemd unit starts) for scale.
"""

from __future__ import annotations

import io
import math
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hearth.audit import runs
from hearth.audit.reader import AuditReader
from hearth.queue.directory import Queue
from hearth.queue.request import Request
from hearth.run.goal import GoalRequest
from hearth.run.runner import run_goal
from hearth.settings import Settings
from tests.fake_ollama import FakeOllama, final_answer

ROOT = Path(__file__).resolve().parent.parent
LANDINGS = 40
RUNS = 100
COLD = 10
CONCURRENCY = 4


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p * len(ordered)) - 1)]


def hearth(*args: str, env: dict[str, str]) -> list[str]:
    return [sys.executable, "-m", "hearth.cli.main", *args]


def environment(state: Path, fake: FakeOllama) -> dict[str, str]:
    return {
        **os.environ,
        "HEARTH_STATE_DIR": str(state),
        "OLLAMA_HOST": fake.url,
        "PYTHONPATH": str(ROOT),
        "HEARTH_LAUNCHER": "local",
    }


def started_at(state: Path) -> dict[str, float]:
    try:
        rows = runs.start_times(AuditReader(state / "audit.db"))
    except sqlite3.OperationalError:  # the first run is still creating the tables
        return {}
    return {rid: datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp() for rid, at in rows.items()}


def wait_until(check: object, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise SystemExit("bench: timed out")
        time.sleep(0.005)


def landing_latency(tmp: Path, fake: FakeOllama) -> list[float]:
    state = tmp / "watch"
    env = environment(state, fake)
    queue = Queue(state / "queue").ensure()
    watch = subprocess.Popen(
        hearth("watch", "--concurrency", str(CONCURRENCY), env=env),
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    landed: dict[str, float] = {}
    try:
        queue.enqueue(Request(id="warm-up", goal="g"))  # the fork server starts on the first run
        wait_until(lambda: (state / "audit.db").exists() and "warm-up" in started_at(state))
        for i in range(LANDINGS):
            rid = f"land-{i:03}"
            queue.enqueue(Request(id=rid, goal="g"))
            landed[rid] = time.time()
            wait_until(lambda rid=rid: rid in started_at(state))
            time.sleep(0.02)
    finally:
        watch.send_signal(signal.SIGTERM)
        watch.wait(60)
    starts = started_at(state)
    return [(starts[rid] - at) * 1000 for rid, at in landed.items()]


def queue_throughput(tmp: Path, fake: FakeOllama) -> float:
    state = tmp / "spawn"
    queue = Queue(state / "queue").ensure()
    for i in range(RUNS):
        queue.enqueue(Request(id=f"run-{i:03}", goal=f"trivial goal {i}"))
    env = environment(state, fake)
    began = time.perf_counter()
    subprocess.run(
        hearth("spawn", "--local", "--concurrency", str(CONCURRENCY), env=env),
        env=env,
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return RUNS / (time.perf_counter() - began)


def in_process_throughput(tmp: Path, fake: FakeOllama) -> float:
    settings = Settings(
        state_dir=tmp / "inproc", config_dir=tmp / "config", model_host=fake.url, model="qwen2.5-coder", sandbox="auto"
    )
    began = time.perf_counter()
    for i in range(RUNS):
        run_goal(GoalRequest(goal=f"trivial goal {i}", model="qwen2.5-coder"), settings, out=io.StringIO())
    return RUNS / (time.perf_counter() - began)


def cold_agent_ms(tmp: Path, fake: FakeOllama) -> list[float]:
    state = tmp / "cold"
    queue = Queue(state / "queue").ensure()
    env = environment(state, fake)
    times = []
    for i in range(COLD):
        queue.enqueue(Request(id=f"cold-{i}", goal="g"))
        queue.claim(f"cold-{i}.json")
        began = time.perf_counter()
        subprocess.run(hearth("agent", f"cold-{i}", env=env), env=env, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        times.append((time.perf_counter() - began) * 1000)
    return times


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch, FakeOllama([final_answer("done")], repeat_last=True) as fake:
        tmp = Path(scratch)
        latency = landing_latency(tmp, fake)
        queued = queue_throughput(tmp, fake)
        inproc = in_process_throughput(tmp, fake)
        cold = cold_agent_ms(tmp, fake)
    print(
        f"watch: landing -> run start over {len(latency)} requests: "
        f"p50 {percentile(latency, 0.5):.1f} ms, p95 {percentile(latency, 0.95):.1f} ms"
    )
    print(f"spawn --local (concurrency {CONCURRENCY}): {RUNS} one-turn runs at {queued:.1f} runs/s")
    print(f"in-process run_goal, no queue: the same {RUNS} goals at {inproc:.1f} runs/s")
    print(f"ratio queue/in-process: {queued / inproc:.2f}")
    print(
        f"cold `hearth agent` (a fresh interpreter per run, as each systemd unit starts): "
        f"p50 {percentile(cold, 0.5):.0f} ms, p95 {percentile(cold, 0.95):.0f} ms per run"
    )


if __name__ == "__main__":
    main()
