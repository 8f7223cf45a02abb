"""Chores on a real model: hearth against the plain tool-calling loop, on the same model and tools.

Each chore of bench/chorekit/chores.toml (a fixture, a goal word for word, a check run in hearth's
command sandbox) runs through hearth (`hearth-loop` as a process with its own state directory, its
figures from the audit) and through the plain loop a user would write in an afternoon
(bench/chorekit/plain.py: the OpenAI tool-calling API spoken to the server directly). Both reach
the server through a tap (bench/chorekit/tap.py) that times every model call and reads what the
server says of its prompt cache.

Printed per chore and side: passed, turns, tokens, wall time, time to first token (the first
call's: the whole prompt), and the prompt tokens the server evaluated per call after the first
(with the prompt's size beside it: when the prefix is reused, only the new messages are
evaluated); then each side's pass rate and totals. `--json` prints the same as one document, to
compare before and after a change (`--show FILE` prints a saved one as the table).

    HEARTH_REAL_MODEL_HOST=openai+http://127.0.0.1:11501 HEARTH_REAL_MODEL=qwen2.5-coder:0.5b \\
        python bench/chores.py [--chores a,b] [--repeat N] [--side hearth|plain|both] [--json]

The host is llama-server (or any OpenAI-compatible server) as `openai+http://HOST:PORT`, or an
Ollama API as `http://HOST:PORT` (the plain loop then needs `--plain-host`, an OpenAI endpoint
serving the same model). Without a host it says so in one line and exits 0 (`make bench`).
Expect minutes per chore on a CPU. There is no target: the figures are compared run to run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:] = [str(HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != HERE]

import httpx

from bench.chorekit.book import Chore, Limits, load, pick
from bench.chorekit.figures import SIDES, Run, summary
from bench.chorekit.hearth_side import HearthSide, split_host
from bench.chorekit.plain import PlainSide
from bench.chorekit.tap import Tap

HOW = (
    "set HEARTH_REAL_MODEL_HOST (openai+http://127.0.0.1:11501 for llama-server, http://HOST:PORT for an "
    "Ollama API) and HEARTH_REAL_MODEL; DEVELOPERS.md (the real tier) says how to serve one"
)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--host", default=os.environ.get("HEARTH_REAL_MODEL_HOST"), help="default $HEARTH_REAL_MODEL_HOST"
    )
    parser.add_argument("--model", default=os.environ.get("HEARTH_REAL_MODEL"), help="default $HEARTH_REAL_MODEL")
    parser.add_argument(
        "--plain-host", help="the plain loop's OpenAI endpoint, http://HOST:PORT (default: --host's, when openai+)"
    )
    parser.add_argument("--chores", help="comma-separated chore names (default: all)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each chore on each side (default 1)")
    parser.add_argument("--side", choices=(*SIDES, "both"), default="both")
    parser.add_argument("--max-iters", type=int, default=12, help="iteration cap of both loops (default 12, hearth's)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds a run may take (default 1800)")
    parser.add_argument(
        "--reply-tokens",
        type=int,
        help="the most tokens of one reply, both loops (default: hearth's setting; the plain loop none)",
    )
    parser.add_argument("--keep", type=Path, help="keep each run's workspace and state under this directory")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    parser.add_argument(
        "--show", type=Path, metavar="FILE", help="print a saved --json output as the table, run nothing"
    )
    parser.add_argument("--list", action="store_true", help="list the chores and their goals, run nothing")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    # stopped from outside (a CI time limit): unwind, so the run under way is stopped with it
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    chores = pick(load(), args.chores)
    if args.list:
        for chore in chores:
            print(f"{chore.name:20} {chore.goal}")
        return 0
    if args.show:
        print(table(json.loads(args.show.read_text())))
        return 0
    if not args.host or not args.model:
        print(f"chores: skipped: no real model server; {HOW}")
        return 0
    kind, url = split_host(args.host)
    plain_url = args.plain_host or (url if kind == "openai" else None)
    problem = unreachable(url) or (plain_url and args.side != "hearth" and unreachable(plain_url))
    if problem:
        print(f"chores: {problem}", file=sys.stderr)
        return 1
    report = bench(args, chores, url, plain_url)
    print(json.dumps(report, indent=1) if args.json else table(report))
    return 0


def unreachable(url: str) -> str | None:
    """Why nothing answers at `url`, or None when something does."""
    try:
        httpx.get(url, timeout=10)
    except httpx.HTTPError as exc:
        return f"no model server answers at {url}: {exc}; start one ({HOW})"
    return None


def bench(args: argparse.Namespace, chores: list[Chore], url: str, plain_url: str | None) -> dict[str, Any]:
    runs: list[Run] = []
    limits = Limits(args.max_iters, args.timeout, args.reply_tokens)
    with Tap(url) as tap, Tap(plain_url or url) as plain_tap:
        sides: list[HearthSide | PlainSide] = []
        if args.side in ("hearth", "both"):
            sides.append(HearthSide(args.host, args.model, tap, limits))
        if args.side in ("plain", "both") and plain_url:
            sides.append(PlainSide(args.model, plain_tap, limits))
        elif args.side in ("plain", "both"):
            print("chores: the plain loop is skipped: it needs an OpenAI endpoint (--plain-host)", file=sys.stderr)
        for chore in chores:
            for rep in range(1, args.repeat + 1):
                for side in sides:  # interleaved: a machine that slows down slows both sides
                    runs.append(one(side, chore, rep, args.keep))
    return {
        "model": args.model,
        "host": args.host,
        "plain_host": plain_url,
        "max_iters": args.max_iters,
        "timeout_s": args.timeout,
        "reply_tokens": args.reply_tokens,
        "repeat": args.repeat,
        "runs": [run.row() for run in runs],
        "sides": {
            side: summary([r for r in runs if r.side == side]) for side in SIDES if any(r.side == side for r in runs)
        },
    }


def one(side: HearthSide | PlainSide, chore: Chore, rep: int, keep: Path | None) -> Run:
    scratch = Path(tempfile.mkdtemp(prefix=f"chore-{side.side}-{chore.name}-"))
    try:
        run = side.run(chore, rep, scratch)
    finally:
        if keep:
            shutil.copytree(scratch, keep / f"{side.side}-{chore.name}-{rep}", symlinks=True, dirs_exist_ok=True)
        shutil.rmtree(scratch, ignore_errors=True)
    mark = "PASS" if run.passed else "fail"
    print(
        f"chores: {side.side:6} {chore.name:20} #{rep} {mark} {run.status} turns {run.turns} {run.wall_s:.0f}s",
        file=sys.stderr,
    )
    return run


# --- the table ---------------------------------------------------------------------------------


def table(report: dict[str, Any]) -> str:
    runs = report["runs"]
    sides = [s for s in SIDES if s in report["sides"]]
    names = list(dict.fromkeys(r["chore"] for r in runs))
    lines = [
        f"chores on {report['model']} ({report['host']}), {report['repeat']} run(s) each, "
        f"cap {report['max_iters']} turns and {report.get('timeout_s', '?')}s a run"
    ]
    header = f"{'chore':20}" + "".join(
        f" | {s + ': pass':13} {'turns':>5} {'tokens':>7} {'wall':>6} {'ttft':>6} {'eval/call (of)':>15}" for s in sides
    )
    lines += [header, "-" * len(header)]
    for name in names:
        cells = [_cells([r for r in runs if r["chore"] == name and r["side"] == side]) for side in sides]
        lines.append(f"{name:20}" + "".join(cells))
    lines.append("")
    for side in sides:
        s = report["sides"][side]
        lines.append(
            f"{side:6} passed {s['passed']}/{s['runs']} ({100 * (s['pass_rate'] or 0):.0f}%), the check alone "
            f"{s.get('checked', '?')}  tokens {s['tokens_in']} in / "
            f"{s['tokens_out']} out  wall {s['wall_s']:.0f}s (median {s['wall_s_median']}s)  ttft median {s['ttft_s_median']}s  "
            f"evaluated per call after the first, median {s['evaluated_after_first_median']}  ends {s['statuses']}"
        )
    return "\n".join(lines)


def _cells(runs: list[dict[str, Any]]) -> str:
    if not runs:
        return f" | {'-':13} {'':>5} {'':>7} {'':>6} {'':>6} {'':>15}"
    passed = f"{sum(r['passed'] for r in runs)}/{len(runs)}"
    turns = _med([r["turns"] for r in runs])
    tokens = _med([r["tokens_in"] + r["tokens_out"] for r in runs])
    wall, ttft = _med([r["wall_s"] for r in runs]), _med([r["ttft_s"] for r in runs if r["ttft_s"] is not None])
    evaluated = _med([r["evaluated_after_first"] for r in runs if r["evaluated_after_first"] is not None])
    of = _med([r["prompt_after_first"] for r in runs if r["prompt_after_first"] is not None])
    status = runs[0]["status"] if len(runs) == 1 else ""
    return (
        f" | {passed + ' ' + status[:9]:13} {_fmt(turns):>5} {_fmt(tokens):>7} {_fmt(wall, 's'):>6} {_fmt(ttft, 's'):>6} "
        f"{_fmt(evaluated) + ' (' + _fmt(of) + ')':>15}"
    )


def _med(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _fmt(value: float | None, unit: str = "") -> str:
    return "-" if value is None else f"{value:.0f}{unit}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
