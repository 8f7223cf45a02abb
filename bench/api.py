"""The OpenAI-compatible door: what `/v1/chat/completions` adds over the same goal through
`hearth enqueue` + `hearth spawn --local`, and how soon a streamed answer starts.

All against one fake Ollama (a scripted model answering at once), measured in this one run:

- the door: a non-streaming completion against the real app served on loopback, its run started
  by a `hearth watch` as `hearth serve --watch` would; the time from the request to the answer;
- the baseline: `hearth enqueue GOAL` then `hearth spawn --local` over a state directory of its
  own (no watch there to claim it), from the first command to the run's row saying done;
- paired and interleaved (door, baseline, door, ...), so the machine's load falls on both alike;
  the ratio is the median of the pairs' ratios. Target: <= 1.2x. The baseline pays two cold
  interpreters and a cold run process, the door a warm watch; so also printed, the door against the
  same goal dropped straight into the watched queue: what the door itself adds;
- time to the first streamed chunk: from the response's headers (the request accepted) to its
  first `data:` line, and from the request sent. Target: < 100 ms after accepted.
"""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# bench/ itself must not be on the path: bench/queue.py would shadow the standard library's queue
HERE = Path(__file__).resolve().parent
sys.path[:] = [str(HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != HERE]

import httpx

from hearth.audit import runs
from hearth.audit.reader import AuditReader
from hearth.audit.store import AuditStore
from hearth.doors.keys import Key, add
from hearth.queue.directory import Queue
from hearth.queue.request import Request
from hearth.settings import Settings
from tests.fake_ollama import FakeOllama, final_answer
from tests.web_support import Center

ROOT = HERE.parent
PAIRS = 8
STREAMS = 10


def environment(state: Path, config: Path, fake: FakeOllama) -> dict[str, str]:
    return {
        **os.environ,
        "HEARTH_STATE_DIR": str(state),
        "HEARTH_CONFIG_DIR": str(config),
        "OLLAMA_HOST": fake.url,
        "PYTHONPATH": str(ROOT),
        "HEARTH_LAUNCHER": "local",
    }


def hearth(*args: str) -> list[str]:
    return [sys.executable, "-m", "hearth.cli.main", *args]


def status(state: Path, run_id: str) -> str | None:
    try:
        return runs.status(AuditReader(state / "audit.db"), run_id)
    except sqlite3.OperationalError:
        return None


def baseline_s(state: Path, env: dict[str, str], n: int) -> float:
    run_id = f"cli-{n:03}"
    began = time.perf_counter()
    subprocess.run(
        hearth("enqueue", "say hello", "--id", run_id), env=env, cwd=ROOT, check=True, stdout=subprocess.DEVNULL
    )
    subprocess.run(hearth("spawn", "--local"), env=env, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    while status(state, run_id) != "done":
        time.sleep(0.005)
    return time.perf_counter() - began


def queued_s(state: Path, n: int) -> float:
    """The same goal dropped into the watched queue (what the door does inside), until done."""
    run_id = f"q-{n:03}"
    began = time.perf_counter()
    Queue(state / "queue").enqueue(Request(id=run_id, goal="say hello"))
    while status(state, run_id) != "done":
        time.sleep(0.005)
    return time.perf_counter() - began


def door_s(url: str, key: str) -> float:
    body = {"model": "default", "messages": [{"role": "user", "content": "say hello"}]}
    began = time.perf_counter()
    answer = httpx.post(
        f"{url}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=120
    )
    answer.raise_for_status()
    return time.perf_counter() - began


def first_chunk_ms(url: str, key: str) -> tuple[float, float]:
    """(after the request was accepted, after it was sent) to the first streamed chunk, in ms."""
    body = {"model": "default", "messages": [{"role": "user", "content": "say hello"}], "stream": True}
    sent = time.perf_counter()
    with httpx.stream(
        "POST", f"{url}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=120
    ) as answer:
        accepted = time.perf_counter()
        lines = answer.iter_lines()
        first = next(line for line in lines if line.startswith("data:"))
        got = time.perf_counter()
        assert first and [line for line in lines if line][-1] == "data: [DONE]"
    return (got - accepted) * 1000, (got - sent) * 1000


def main() -> None:
    logging.disable(logging.INFO)  # the clients' and the SDK's own lines are not the bench's
    tmp = Path(tempfile.mkdtemp(prefix="hearth-bench-api-"))
    state, config = tmp / "state", tmp / "config"
    script = [final_answer("hello")] * (2 * PAIRS + STREAMS + 4)
    with FakeOllama(script) as fake:
        env = environment(state, config, fake)
        # the baseline's own state: the door's `hearth watch` must not claim what `hearth spawn` is timed on
        solo = environment(tmp / "cli-state", config, fake)
        os.environ.update(
            {k: env[k] for k in ("HEARTH_STATE_DIR", "HEARTH_CONFIG_DIR", "OLLAMA_HOST", "HEARTH_LAUNCHER")}
        )
        state.mkdir(parents=True)
        with AuditStore(state / "audit.db") as audit:
            key = add(audit, Key("bench", (), 0, 0))
        with Center(Settings.from_env()) as center:
            watch = subprocess.Popen(
                hearth("watch"), env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            try:
                door_s(center.url, key)  # warm-up: the watch's first run, imports, the audit's tables
                baseline_s(tmp / "cli-state", solo, 999)
                triples = [
                    (door_s(center.url, key), baseline_s(tmp / "cli-state", solo, i), queued_s(state, i))
                    for i in range(PAIRS)
                ]
                chunks = [first_chunk_ms(center.url, key) for _ in range(STREAMS)]
            finally:
                watch.send_signal(signal.SIGTERM)
                watch.wait(60)
    door = statistics.median(d for d, _, _ in triples)
    base = statistics.median(b for _, b, _ in triples)
    ratio = statistics.median(d / b for d, b, _ in triples)
    queued = statistics.median(q for _, _, q in triples)
    own = statistics.median(d / q for d, _, q in triples)
    print(f"/v1/chat/completions: median {door * 1000:.0f} ms per one-turn run ({PAIRS} runs)")
    print(f"hearth enqueue + hearth spawn --local: median {base * 1000:.0f} ms for the same goal ({PAIRS} runs)")
    print(f"ratio door/enqueue+spawn (median of {PAIRS} interleaved pairs): {ratio:.2f}x (target <= 1.2x)")
    print(f"the same goal dropped straight into the watched queue: median {queued * 1000:.0f} ms")
    print(f"ratio door/watched queue, the door's own cost (median of {PAIRS} pairs): {own:.2f}x")
    accepted = statistics.median(a for a, _ in chunks)
    sent = statistics.median(s for _, s in chunks)
    print(
        f"first streamed chunk: median {accepted:.1f} ms after the request was accepted "
        f"(max {max(a for a, _ in chunks):.1f}), {sent:.1f} ms after it was sent ({STREAMS} streams; target < 100 ms)"
    )


if __name__ == "__main__":
    main()
