"""Resume: how fast a suspended run goes on once decided, and what going on costs it per turn.

One `hearth watch` (the local launcher: runs forked from its fork server) over a fresh state
directory and the fake Ollama. Each sample queues a run whose first call needs approval; it
suspends (HEARTH_SUSPEND_AFTER_S=0: status `waiting`, no process); the bench then decides it as
`hearth approve` does (the decision written, the run woken) and times:

    decision -> next model request   from just before the decision is written to the moment the
                                     fake server receives the resumed run's next /api/chat
                                     (target: under 300 ms with the local launcher, issue 22)

Then the per-turn cost: a run of TURNS `list_files` turns after it went on, against the same
turns of a run that never suspended, in pairs (resumed, plain, resumed, plain ...), each turn
timed between the server's receipts of consecutive requests; the median of the pairs' ratios
(target: within 5%, i.e. <= 1.05).
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hearth.audit import approvals
from hearth.audit.store import AuditStore
from hearth.leash.decisions import By, decide
from hearth.queue.directory import Queue
from hearth.queue.request import Request
from hearth.settings import Settings
from hearth.users.access import shell_owner
from tests.fake_ollama import FakeOllama, final_answer, tool_call

OWNER = shell_owner("bench")  # the benchmark holds the state, as an owner at the shell does
SAMPLES = int(os.environ.get("BENCH_SAMPLES", "9"))
TURNS = int(os.environ.get("BENCH_TURNS", "30"))


class Stamped(FakeOllama):
    """The fake Ollama, noting when each request arrived (monotonic) and for which run."""

    def __init__(self) -> None:
        super().__init__([], repeat_last=False)
        self.arrivals: list[tuple[float, str]] = []
        self.cond = threading.Condition()

    def next_item(self, body: dict[str, Any]) -> Any:
        goal = body["messages"][1]["content"]
        with self.cond:
            self.arrivals.append((time.monotonic(), goal))
            self.cond.notify_all()
        return super().next_item(body)

    def wait_arrivals(self, goal: str, count: int, timeout: float = 60.0) -> list[float]:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                seen = [t for t, g in self.arrivals if goal in g]
                if len(seen) >= count:
                    return seen
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{goal}: {len(seen)} of {count} requests")
                self.cond.wait(left)


def status(settings: Settings, run_id: str) -> str:
    try:
        with AuditStore(settings.audit_path) as audit:
            run = audit.run(run_id)
    except Exception:
        return ""
    return str(run["status"]) if run else ""


def until(check: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met")
        time.sleep(0.005)


def pending_of(settings: Settings, run_id: str) -> str:
    with AuditStore(settings.audit_path) as audit:
        found = [a.id for a in approvals.listing(audit) if a.run_id == run_id]
    return found[0] if found else ""


def one(settings: Settings, fake: Stamped, queue: Queue, n: int, *, suspend: bool) -> tuple[float, float]:
    """(decision -> next request seconds, median seconds per turn after it) for one run."""
    run_id, goal = f"r{n}-{'s' if suspend else 'p'}", f"goal {n} {'s' if suspend else 'p'}"
    first = tool_call("run_command", {"command": "true"}) if suspend else tool_call("list_files", {})
    fake.add(first, *[tool_call("list_files", {"path": "."}) for _ in range(TURNS)], final_answer("done"))
    queue.enqueue(Request(id=run_id, goal=goal, mode="auto", max_iterations=TURNS + 4))
    latency = 0.0
    if suspend:
        until(lambda: status(settings, run_id) == "waiting")
        approval = pending_of(settings, run_id)
        started = time.monotonic()
        decide(settings, approval, "approve", By("bench", "resume"), user=OWNER)  # and wakes the run
        latency = fake.wait_arrivals(goal, 2)[1] - started
    times = fake.wait_arrivals(goal, TURNS + 2)
    until(lambda: status(settings, run_id) == "done")
    gaps = [b - a for a, b in zip(times[1:], times[2:], strict=False)]
    return latency, statistics.median(gaps)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp, Stamped() as fake:
        env = {
            **os.environ,
            "HEARTH_STATE_DIR": f"{tmp}/state",
            "HEARTH_CONFIG_DIR": f"{tmp}/config",
            "OLLAMA_HOST": fake.url,
            "HEARTH_SUSPEND_AFTER_S": "0",
            "HEARTH_SANDBOX": os.environ.get("HEARTH_SANDBOX", "none"),
            "PYTHONPATH": str(ROOT),
        }
        settings = Settings.from_env(env)
        settings.writable_state_dir()
        queue = Queue(settings.queue_dir).ensure()
        watch = subprocess.Popen(
            [sys.executable, "-m", "hearth.cli.main", "watch"], env=env, cwd=ROOT, stdout=subprocess.DEVNULL
        )
        try:
            one(settings, fake, queue, 0, suspend=False)  # warm: the fork server, the page cache
            latencies, ratios = [], []
            for n in range(1, SAMPLES + 1):
                latency, resumed_turn = one(settings, fake, queue, n, suspend=True)
                _, plain_turn = one(settings, fake, queue, n, suspend=False)
                latencies.append(latency)
                ratios.append(resumed_turn / plain_turn)
        finally:
            watch.send_signal(signal.SIGTERM)
            watch.wait(60)
    print(
        f"decision -> resumed run's next model request: median {statistics.median(latencies) * 1000:.0f} ms, "
        f"max {max(latencies) * 1000:.0f} ms over {SAMPLES} runs (target < 300 ms)"
    )
    print(
        f"per-turn time, resumed / never suspended: median ratio {statistics.median(ratios):.3f} "
        f"over {SAMPLES} pairs of {TURNS} turns (target <= 1.05)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
