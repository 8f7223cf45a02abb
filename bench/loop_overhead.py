"""Loop overhead: a whole `hearth-loop` process of 12 iterations over the raw floor.

The floor is a plain script on the same interpreter making the same 12 `/api/chat` round trips
(the exact bodies hearth-loop sent, recorded by the fake server) with the same HTTP client hearth
uses (httpx); a second floor does it with the standard library alone, for reference. Each pair
of runs is interleaved (hearth, floor, hearth, floor, ...) and the ratio is taken pair by pair,
so a machine that slows down mid-way slows both sides of a pair; the median ratio is printed.

What the hearth side does: start, read settings, open the audit, check a fresh workspace in,
run 11 `list_files` calls and a final answer, record every step, exit. hearth's bytecode is
compiled first, as an installed package's is (so a checkout with PYTHONDONTWRITEBYTECODE set
does not time the compiler). Target: <= 1.25x the httpx floor (issue 31); the standard-library
ratio is printed beside it for reference (the upstream loop, standard library only, is about 2.3x).
"""

from __future__ import annotations

import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fake_ollama import FakeOllama, final_answer, tool_call

ITERATIONS = 12
PAIRS = int(os.environ.get("BENCH_PAIRS", "15"))
FLOOR = """\
import json, sys
import httpx
url, bodies = sys.argv[1], json.load(open(sys.argv[2]))
with httpx.Client(timeout=30) as client:
    for body in bodies:
        with client.stream("POST", url + "/api/chat", json=body) as response:
            for line in response.iter_lines():
                json.loads(line)
"""
STDLIB_FLOOR = """\
import http.client, json, sys, urllib.parse
url, bodies = urllib.parse.urlsplit(sys.argv[1]), json.load(open(sys.argv[2]))
conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
for body in bodies:
    conn.request("POST", "/api/chat", json.dumps(body), {"content-type": "application/json"})
    for line in conn.getresponse().read().splitlines():
        json.loads(line)
"""


def reply(body: dict[str, Any]) -> dict[str, Any]:
    """11 calls of a safe tool, then the answer: 12 model turns, whatever the history holds. Each call
    lists the same directory by another spelling of its path: the same call again would not be run
    (agent/repeats.py), and the run would end stuck."""
    done = sum(1 for m in body["messages"] if m["role"] == "tool")
    return tool_call("list_files", {"path": "." + "/." * done}) if done < ITERATIONS - 1 else final_answer("listed it")


def timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def main() -> None:
    for package in ("agent", "hearth"):
        compileall.compile_dir(ROOT / package, quiet=1)
    python = sys.executable
    loop = str(Path(python).with_name("hearth-loop"))
    with tempfile.TemporaryDirectory(prefix="hearth-bench-") as tmp, FakeOllama([reply], repeat_last=True) as fake:
        env = {
            **os.environ,
            "HEARTH_STATE_DIR": f"{tmp}/state",
            "HEARTH_CONFIG_DIR": f"{tmp}/config",
            "OLLAMA_HOST": fake.url,
        }
        hearth = [loop, "--model", "qwen2.5-coder", "--max-iters", str(ITERATIONS), "list the workspace"]
        timed(hearth, env)  # warm the disk cache, and record the bodies the floor replays
        bodies = Path(tmp, "bodies.json")
        bodies.write_text(json.dumps(fake.requests[-ITERATIONS:]))
        assert len(fake.requests) == ITERATIONS, f"hearth-loop made {len(fake.requests)} model calls"
        floor = [python, "-c", FLOOR, fake.url, str(bodies)]
        stdlib = [python, "-c", STDLIB_FLOOR, fake.url, str(bodies)]
        timed(floor, env), timed(stdlib, env)
        ratios, stdlib_ratios, seconds = [], [], []
        for _ in range(PAIRS):
            a, b, c = timed(hearth, env), timed(floor, env), timed(stdlib, env)
            ratios.append(a / b)
            stdlib_ratios.append(a / c)
            seconds.append((a, b, c))
    med = [statistics.median(s[i] for s in seconds) for i in range(3)]
    print(
        f"hearth-loop, {ITERATIONS} iterations: median {med[0] * 1000:.0f} ms; httpx floor {med[1] * 1000:.0f} ms; "
        f"stdlib floor {med[2] * 1000:.0f} ms ({PAIRS} interleaved runs each)"
    )
    print(f"ratio hearth-loop / httpx floor: {statistics.median(ratios):.2f} (target <= 1.25)")
    print(f"ratio hearth-loop / stdlib floor: {statistics.median(stdlib_ratios):.2f} (for reference)")


if __name__ == "__main__":
    main()
