"""`hearth steer RUN "text"`: a person's words to a working run, read by its model after the next
tool result (hearth/dispatch/steer.py)."""

from __future__ import annotations

import argparse

from hearth.render import print_json
from hearth.settings import Settings

STEER_EPILOG = (
    "The text reaches the model at the run's next boundary, after the next tool result, marked as "
    "coming from you, and is recorded as a steer step. A run waiting for an approval takes it with "
    "the decision. Who may approve the run's calls may steer it. "
    "exit codes: 0 left for the run, 1 the run has ended or you may not steer it, 2 no such run or an empty steer"
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "steer", help="tell a working run something; its model reads it after the next tool result", epilog=STEER_EPILOG
    )
    p.add_argument("run_id", help="the run to steer")
    p.add_argument("text", help="what the run's model should know")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=steer)


def steer(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.dispatch.steer import give_as
    from hearth.users.access import login_user

    given = give_as(settings, args.run_id, login_user(settings), args.text)
    if args.json:
        print_json({"run_id": args.run_id, "by": given.by, "at": given.at, "text": given.text})
    else:
        print(f"steer for run {args.run_id} left by {given.by}; its model reads it after the next tool result")
    return 0
