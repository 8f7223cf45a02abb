"""`hearth agent ID`: run one claimed request (what the `hearth-agent@ID` unit runs)."""

from __future__ import annotations

import argparse

from hearth.settings import Settings

AGENT_EPILOG = (
    "exit codes: 0 done, 1 failed, 2 rejected / not claimed / already running, "
    "3 iteration limit (a marathon: leg_limit, no_progress), 4 model unavailable, 5 denied, 6 tripped, 7 budget exceeded, 130 interrupted, 70 internal error"
)


def register(sub: argparse._SubParsersAction) -> None:
    agent = sub.add_parser("agent", help="run one claimed request (what hearth-agent@ID runs)", epilog=AGENT_EPILOG)
    agent.add_argument("request_id", metavar="ID")
    agent.add_argument("--json", action="store_true", help="print the run's events as JSON lines")
    agent.set_defaults(handler=run_agent)


def run_agent(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.dispatch.claimed import run_claimed

    return run_claimed(args.request_id, settings, json_lines=args.json)
