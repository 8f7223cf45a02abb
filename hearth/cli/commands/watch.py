"""`hearth watch`: watch the queue and run what lands in it locally (hosts without systemd)."""

from __future__ import annotations

import argparse
import signal
import sys
from datetime import datetime
from typing import TYPE_CHECKING

from hearth.cli.commands.spawn import positive, printer, summary
from hearth.dispatch.launchers import here_or_fleet, launcher_for
from hearth.settings import Settings

if TYPE_CHECKING:
    from hearth.dispatch.spawner import Spawner


def register(sub: argparse._SubParsersAction) -> None:
    watch = sub.add_parser("watch", help="watch the queue and run requests locally (hosts without systemd)")
    watch.add_argument("--concurrency", type=positive, help="runs at once (default $HEARTH_MAX_LOCAL_RUNS or 4)")
    watch.add_argument("--json", action="store_true", help="print what happens as JSON lines")
    watch.set_defaults(handler=watch_queue)


def watch_queue(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.dispatch.spawner import Spawner
    from hearth.dispatch.watch import Watch
    from hearth.knowledge import Backlog
    from hearth.leash.missions import Timetable

    launcher = launcher_for(settings, here_or_fleet(settings), concurrency=args.concurrency)
    with Spawner(settings, launcher) as spawner:
        report = printer(args.json, stamped=True, why=lambda run_id: _reason(spawner, run_id))
        spawner.report = report
        missions = Timetable(settings, datetime.now())
        for problem in missions.problems:
            report("mission_skipped", problem.path.name, problem.reason)
        watch = Watch(spawner, missions=missions)
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: watch.stop())
        print(
            f"hearth watch: watching {spawner.queue.root} ({spawner.processes.free_slots()} runs at once); stop with Ctrl-C",
            file=sys.stderr,
            flush=True,
        )
        backlog = Backlog(settings).start()  # chunks stored while the embedder was away get vectors
        try:
            watch.run()
        finally:
            backlog.stop()
        summary(spawner, args.json)
    return 0


def _reason(spawner: Spawner, run_id: str) -> str | None:
    """`rejected: unknown agent profile ...`: the status a run recorded and its error's first line."""
    run = spawner.audit.run(run_id)
    if run is None or run["status"] in ("running", "done"):
        return None
    text = (run.get("error") or "").strip()
    return f"{run['status']}: {text.splitlines()[0][:300]}" if text else run["status"]
