"""`hearth stop RUN` and `hearth stop --all`: stop runs wherever they are (hearth/dispatch/stop.py)."""

from __future__ import annotations

import argparse

from hearth.dispatch.launchers import STOP_GRACE_S
from hearth.errors import UsageError
from hearth.render import print_json
from hearth.settings import Settings

STOP_EPILOG = (
    "A running run gets SIGTERM (its unit is stopped under systemd), then SIGKILL after the grace; "
    "it is recorded interrupted with who stopped it, its pending approvals are cancelled and its "
    "request is kept in queue/failed/. A request still waiting never starts. "
    "exit codes: 0 stopped, 1 the run had ended already or could not be stopped, 2 no such run"
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "stop", help="stop a run (or --all): recorded interrupted with who stopped it", epilog=STOP_EPILOG
    )
    p.add_argument("run_id", nargs="?", help="the run (or waiting request) to stop")
    p.add_argument("--all", action="store_true", help="every claimed or running run")
    p.add_argument(
        "--grace", type=float, default=STOP_GRACE_S, help=f"seconds before SIGKILL (default {STOP_GRACE_S:g})"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=stop)


def stop(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit.approvals import operator_name
    from hearth.dispatch.stop import stop_all_as, stop_as, stopped_line
    from hearth.users.access import login_user

    if bool(args.run_id) == bool(args.all):
        raise UsageError("name one run to stop, or --all")
    by, me = f"cli:{operator_name()}", login_user(settings)
    if args.all:
        stopped = stop_all_as(settings, me, by=by, grace_s=args.grace)
    else:
        stopped = [stop_as(settings, args.run_id, me, by=by, grace_s=args.grace)]
    if args.json:
        print_json([s.__dict__ for s in stopped])
    elif not stopped:
        print("no run was active")
    for item in stopped if not args.json else []:
        print(stopped_line(item))
    return 0
