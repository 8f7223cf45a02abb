"""`hearth spawn`: sweep dead runs, then start every request waiting in the queue (the path unit's job)."""

from __future__ import annotations

import argparse
import json
import signal
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agent.clock import utc_now
from hearth.cli.main import positive
from hearth.dispatch.launchers import launcher_for
from hearth.render import json_line, visible_line
from hearth.settings import Settings

if TYPE_CHECKING:
    from hearth.dispatch.spawner import Report, Spawner

SPAWN_EPILOG = (
    "exit codes: 0 every request was started, rejected or settled, 1 a run could not be "
    "launched (its request is in queue/failed/), 2 unusable state or queue directory"
)


def register(sub: argparse._SubParsersAction) -> None:
    spawn = sub.add_parser(
        "spawn", help="start every queued request (what hearth-spawn.service runs)", epilog=SPAWN_EPILOG
    )
    spawn.add_argument(
        "--local",
        action="store_true",
        help="run as local processes (the `local` launcher), whatever HEARTH_LAUNCHER says",
    )
    spawn.add_argument("--concurrency", type=positive, help="local runs at once (default $HEARTH_MAX_LOCAL_RUNS or 4)")
    spawn.add_argument("--json", action="store_true", help="print what happens as JSON lines")
    spawn.set_defaults(handler=spawn_requests)


def printer(json_lines: bool, *, stamped: bool = False, why: Callable[[str], str | None] | None = None) -> Report:
    """One line per thing that happens; `stamped` puts the time in front (local; UTC ISO in JSON),
    `why(run_id)` gives what a run that did not end well recorded (its status and error)."""

    def report(what: str, name: str, detail: str) -> None:
        unwell = (what == "settled" and detail != "done") or (what == "ended" and detail != "exit 0")
        if why and unwell:
            reason = why(name.removesuffix(".json"))
            detail = f"{detail}: {reason}" if reason else detail
        if json_lines:
            stamp = {"at": utc_now()} if stamped else {}
            print(json_line({"event": what, "name": name, "detail": detail, **stamp}), flush=True)
        else:
            at = time.strftime("%H:%M:%S ") if stamped else ""
            print(visible_line(f"{at}{what} {name}{': ' + detail if detail else ''}"), flush=True)

    return report


def summary(spawner: Spawner, json_lines: bool) -> None:
    counts = dict(sorted(spawner.counts.items()))
    if json_lines:
        print(json.dumps({"event": "summary", "counts": counts}), flush=True)
    else:
        print("spawn: " + (", ".join(f"{n} {what}" for what, n in counts.items()) or "nothing to do"), flush=True)


def _stop_on_sigterm() -> None:
    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)


def spawn_requests(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.dispatch.spawner import Spawner

    launcher = launcher_for(settings, "local" if args.local else None, concurrency=args.concurrency)
    _stop_on_sigterm()
    with Spawner(settings, launcher, report=printer(args.json)) as spawner:
        try:
            code = spawner.run()
        except KeyboardInterrupt:
            spawner.processes.shutdown()
            spawner.reap()
            code = 130
        summary(spawner, args.json)
    return code
