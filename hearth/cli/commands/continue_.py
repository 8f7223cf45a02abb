"""`hearth continue RUN "GOAL"`: queue a follow-up of an ended run (a request with `continues: RUN`).

The follow-up runs in the earlier run's workspace, its first message carrying the earlier goal,
summary and last messages (hearth/run/long/followup.py). A run that is unknown or still running is
refused here already; a gone workspace or profile is refused when the follow-up starts.
"""

from __future__ import annotations

import argparse
import os

from hearth.cli.queued import queue_request
from hearth.errors import UsageError
from hearth.settings import Settings

EPILOG = "exit codes: 0 queued (the id is printed), 2 unknown or running run, invalid request, or unusable queue"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("continue", help="queue a follow-up of an ended run, in its workspace", epilog=EPILOG)
    p.add_argument("run_id", metavar="RUN", help="the run to continue")
    p.add_argument("goal", help="what the agent should do now")
    p.add_argument("--id", help="the follow-up's id (default: a new one)")
    p.add_argument("--model", help="another model (default: the earlier run's)")
    p.add_argument("--mode", choices=("plan", "auto", "bypass"), help="default: the profile's, else auto")
    p.add_argument(
        "--max-iterations", "--max-iters", dest="max_iterations", type=int, help="default: the profile's, else 12"
    )
    p.add_argument("--json", action="store_true", help="print {id, path} as JSON")
    p.set_defaults(handler=continue_run)


def continue_run(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit.requests import run_status_readonly
    from hearth.audit.store import new_run_id

    status = run_status_readonly(settings.audit_path, args.run_id)
    if status is None and os.access(settings.audit_path, os.R_OK):  # else the run itself checks
        raise UsageError(f"no run {args.run_id!r} to continue; see: hearth runs")
    if status == "running":
        raise UsageError(f"run {args.run_id} is still running; continue it once it has ended")
    given = {"model": args.model, "mode": args.mode, "max_iterations": args.max_iterations}
    obj = {"id": args.id or new_run_id(), "goal": args.goal, "continues": args.run_id}
    obj.update({key: value for key, value in given.items() if value is not None})
    queue_request(obj, settings, as_json=args.json)
    return 0
