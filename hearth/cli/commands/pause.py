"""`hearth pause` and `hearth resume`: hold every new start (requests wait in the queue), or let them go."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from hearth.render import print_json
from hearth.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("pause", help="start nothing new: requests wait in the queue until `hearth resume`")
    p.add_argument("--reason", default="", help="why, shown with the pause")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=pause_starts)
    r = sub.add_parser("resume", help="end a pause: waiting requests start")
    r.add_argument("--json", action="store_true")
    r.set_defaults(handler=resume_starts)


def pause_starts(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit.approvals import operator_name
    from hearth.dispatch.pause import pause, paused
    from hearth.users.access import login_user, require

    require(login_user(settings), "pause")
    before = paused(settings)
    held = pause(settings, by=f"cli:{operator_name()}", reason=args.reason)
    if args.json:
        print_json({"paused": asdict(held), "already": before is not None})
        return 0
    print(f"hearth was already {held.line()}" if before else f"hearth is {held.line()}")
    print("requests wait in the queue; running runs go on (hearth stop --all stops them)")
    return 0


def resume_starts(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.dispatch.pause import resume
    from hearth.users.access import login_user, require

    require(login_user(settings), "pause")
    was = resume(settings)
    if args.json:
        print_json({"resumed": was is not None, "was": asdict(was) if was else None})
        return 0
    print(f"resumed (was {was.line()})" if was else "hearth was not paused")
    return 0
