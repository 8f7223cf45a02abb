"""CLI startup: `hearth --help` and `hearth enqueue --help` over a bare `python -c pass`.

The floor is the same interpreter starting and doing nothing (its `site`, the venv's `.pth`
files and all); the gap is what hearth loads before it can print a usage. Each round runs the
three whole processes interleaved (floor, `--help`, `enqueue --help`), the ratio is taken round
by round, so a machine that slows down mid-way slows both sides of a ratio; the median ratio is
printed. hearth's bytecode is compiled first, as an installed package's is (so a checkout with
PYTHONDONTWRITEBYTECODE set does not time the compiler). Target: <= 4x the floor for both.
"""

from __future__ import annotations

import compileall
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "30"))
TARGET = 4.0


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def main() -> None:
    for package in ("agent", "hearth"):
        compileall.compile_dir(ROOT / package, quiet=1)
    python = sys.executable
    hearth = str(Path(python).with_name("hearth"))
    floor = [python, "-c", "pass"]
    commands = {"hearth --help": [hearth, "--help"], "hearth enqueue --help": [hearth, "enqueue", "--help"]}
    for argv in (floor, *commands.values()):
        timed(argv)  # warm the disk cache
    seconds: dict[str, list[float]] = {name: [] for name in ("floor", *commands)}
    ratios: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(ROUNDS):
        base = timed(floor)
        seconds["floor"].append(base)
        for name, argv in commands.items():
            took = timed(argv)
            seconds[name].append(took)
            ratios[name].append(took / base)
    medians = ", ".join(f"{name} {statistics.median(s) * 1000:.0f} ms" for name, s in seconds.items())
    print(f"startup medians: {medians} ({ROUNDS} interleaved rounds)")
    for name, values in ratios.items():
        print(f"ratio {name} / python -c pass: {statistics.median(values):.2f} (target <= {TARGET:g})")


if __name__ == "__main__":
    main()
