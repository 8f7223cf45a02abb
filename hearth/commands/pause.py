"""`hearth pause` and `hearth resume`: hold every new start (requests wait in the queue), or let them go."""

from __future__ import annotations

import argparse

from hearth.audit.approvals import operator_name
from hearth.dispatch.pause import pause, paused, resume
from hearth.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("pause", help="start nothing new: requests wait in the queue until `hearth resume`")
    p.add_argument("--reason", default="", help="why, shown with the pause")
    p.set_defaults(handler=pause_starts)
    r = sub.add_parser("resume", help="end a pause: waiting requests start")
    r.set_defaults(handler=resume_starts)


def pause_starts(args: argparse.Namespace, settings: Settings) -> int:
    before = paused(settings)
    held = pause(settings, by=f"cli:{operator_name()}", reason=args.reason)
    print(f"hearth was already {held.line()}" if before else f"hearth is {held.line()}")
    print("requests wait in the queue; running runs go on (hearth stop --all stops them)")
    return 0


def resume_starts(args: argparse.Namespace, settings: Settings) -> int:
    was = resume(settings)
    print(f"resumed (was {was.line()})" if was else "hearth was not paused")
    return 0
