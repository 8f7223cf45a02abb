"""10,000 files in the queue, hostile and valid mixed: how long one spawner pass and the command
center's overview, /api/state and /api/queue take, measured in this one run.

    python bench/queue_flood.py [FILES]      (default 10,000)

The flood: a third valid requests, the rest hostile (not JSON, a byte-order mark, schema errors,
symlinks, fifos, directories, world-writable files, hard links, fresh temp names). The spawner
passes run against a launcher that accepts every start and runs nothing (what is timed is a
pass's own work: look, claim, read, check, record, reject), with no slot limit, so a pass is only
bounded by what the spawner itself bounds; passes go on until the flood is gone, and the first,
the median and the longest are printed. Then the queue is flooded again and the command center
is served on a loopback port over it; each page is fetched a few times, p50 and max printed.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# bench/ itself must not be on the path: bench/queue.py would shadow the standard library's queue
HERE = Path(__file__).resolve().parent
sys.path[:] = [str(HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != HERE]

FILES = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
FETCHES = 5


class Accepting:
    """A launcher that takes every start and runs nothing: the pass's own cost, no agents."""

    def __init__(self) -> None:
        self.started: list[str] = []

    def start(self, request_id: str) -> None:
        self.started.append(request_id)

    def free_slots(self) -> int | None:
        return None

    def wait(self, fds: Sequence[int], timeout: float | None) -> None:
        return None

    def reap(self) -> list[tuple[str, int | None]]:
        return []

    def running(self) -> list[str]:
        return []

    def alive(self, run_id: str) -> bool:
        return False

    def stop(self, run_id: str, grace_s: float) -> str:
        return "never started"

    def shutdown(self) -> None:
        return None

    def heal(self) -> list[str]:
        return []

    def live(self) -> list[dict[str, Any]]:
        return []


def flood(queue: Path, count: int, start: int = 0) -> dict[str, int]:
    """`count` files in `queue`, a third valid; how many of each kind."""
    kinds: dict[str, int] = {}
    old = time.time() - 3600  # past every settle and stale window: each is looked at, not waited for
    for i in range(start, start + count):
        kind = ("valid", "valid", "valid", "junk", "bom", "schema", "link", "fifo", "dir", "writable", "hardlink")[
            i % 11
        ]
        name = f"f{i:06d}.json"
        path = queue / name
        body = json.dumps({"id": f"f{i:06d}", "goal": f"flood request {i}"}).encode()
        if kind == "valid":
            path.write_bytes(body)
        elif kind == "junk":
            path.write_bytes(b"{not json at all " + os.urandom(16).hex().encode())
        elif kind == "bom":
            path.write_bytes(b"\xef\xbb\xbf" + body)
        elif kind == "schema":
            path.write_bytes(json.dumps({"id": f"f{i:06d}", "goal": 7, "mode": "root"}).encode())
        elif kind == "link":
            os.symlink("/etc/passwd", path)
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "dir":
            path.mkdir()
        elif kind == "writable":
            path.write_bytes(body)
            path.chmod(0o666)
        else:
            path.write_bytes(body)
            os.link(path, queue / f"f{i:06d}.copy")
        if kind not in ("link",):
            os.utime(path, (old, old), follow_symlinks=False)
        kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


def spawner_passes(settings: Any) -> tuple[list[float], int, int]:
    """Passes until the queue holds nothing a pass would take: each pass's time, names taken, runs started."""
    from hearth.dispatch.spawner import Spawner

    launcher = Accepting()
    times, moved = [], 0
    with Spawner(settings, launcher) as spawner:
        while True:
            began = time.perf_counter()
            step = spawner.drain()
            times.append(time.perf_counter() - began)
            moved += step.took
            if step.retry_in is None or len(times) > 10 * FILES:
                break
    return times, moved, len(launcher.started)


def pages(settings: Any) -> dict[str, list[float]]:
    from tests.web_support import Center

    times: dict[str, list[float]] = {"/": [], "/api/state": [], "/api/queue": []}
    with Center(settings) as center, center.client() as client:
        for _ in range(FETCHES):
            for path in times:
                began = time.perf_counter()
                answer = client.get(path)
                times[path].append(time.perf_counter() - began)
                assert answer.status_code == 200, (path, answer.status_code)
        sizes = {path: len(client.get(path).content) for path in times}
    print("  page bytes: " + ", ".join(f"{p} {n:,}" for p, n in sizes.items()))
    return times


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HEARTH_STATE_DIR"] = str(Path(tmp) / "state")
        os.environ["HEARTH_CONFIG_DIR"] = str(Path(tmp) / "config")
        os.environ.pop("HEARTH_TOKENS", None)
        from hearth.queue.directory import Queue
        from hearth.settings import Settings

        settings = Settings.from_env()
        queue = Queue(settings.queue_dir).ensure()
        kinds = flood(queue.root, FILES)
        waiting = len(os.listdir(queue.root)) - 4
        print(f"queue flood: {waiting:,} names in the queue ({', '.join(f'{k} {n}' for k, n in kinds.items())})")
        times, moved, started = spawner_passes(settings)
        left = len(os.listdir(queue.root)) - 4
        print(
            f"  spawner: {len(times)} passes, first {times[0]:.2f} s, p50 {statistics.median(times):.2f} s, "
            f"max {max(times):.2f} s, {sum(times):.1f} s in all; {moved:,} names taken ({started:,} started), "
            f"{left:,} left waiting"
        )
        for name in os.listdir(queue.claimed):  # nothing ran them: the pages are timed over the queue alone
            os.unlink(queue.claimed / name)
        flood(queue.root, FILES, start=FILES)  # a full queue again for the command center
        print(f"  command center over {len(os.listdir(queue.root)) - 4:,} waiting names:")
        for path, seconds in pages(settings).items():
            print(f"  {path:<12} p50 {statistics.median(seconds) * 1000:8.1f} ms   max {max(seconds) * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
