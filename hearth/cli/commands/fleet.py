"""`hearth fleet add|list|rm` on a hub, and `hearth worker` on each box that runs its requests.

A worker's token is printed once, when it is made; the hub keeps only its SHA-256
(hearth/remote/hub.py). docs/fleet.md is the set-up of a hub and its workers.
"""

from __future__ import annotations

import argparse
import getpass
import sys
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from agent.clock import stamp
from hearth.render import ago, print_json, table
from hearth.settings import Settings

if TYPE_CHECKING:
    from hearth.remote.hub import Worker

EPILOG = "exit codes: 0 done, 2 a bad or taken name, or a worker that does not exist"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fleet", help="a hub's workers (runs on other boxes): add, list, labels, rm", epilog=EPILOG)
    actions = p.add_subparsers(dest="fleet_action")
    add = actions.add_parser("add", help="make a worker's token and print it once (only its hash is kept)")
    add.add_argument("name", help="the worker's name (its HEARTH_FLEET_NAME)")
    add.add_argument("--label", action="append", default=[], help="a label requests may name; repeat")
    add.add_argument("--json", action="store_true", help="print {name, token} as JSON")
    listing = actions.add_parser("list", help="every worker: last seen, its models, its runs")
    listing.add_argument("--json", action="store_true", help="print the workers as JSON")
    labels = actions.add_parser(
        "labels", help="set a worker's labels (it takes what they name from its next heartbeat)"
    )
    labels.add_argument("name")
    labels.add_argument(
        "--label", action="append", default=[], help="a label requests may name; repeat; none clears them"
    )
    labels.add_argument("--json", action="store_true", help="print {name, labels} as JSON")
    rm = actions.add_parser("rm", help="remove a worker: its token is refused from now on")
    rm.add_argument("name")
    rm.add_argument("--json", action="store_true", help="print {removed: NAME} as JSON")
    p.set_defaults(handler=fleet, json=False)
    w = sub.add_parser(
        "worker",
        help="run a hub's requests on this box (HEARTH_FLEET_HUB, _NAME, _TOKEN_FILE, _BROKER: docs/fleet.md)",
    )
    w.set_defaults(handler=worker)


def fleet(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit.store import AuditStore
    from hearth.remote import hub

    settings.writable_state_dir()
    with AuditStore(settings.audit_path) as audit:
        if args.fleet_action == "add":
            return _add(args, settings, hub.add_worker(audit, args.name, args.label, getpass.getuser()))
        if args.fleet_action == "labels":
            given = hub.set_labels(audit, args.name, args.label)
            shown = ", ".join(given) or "none"
            print_json({"name": args.name, "labels": list(given)}) if args.json else print(
                f"{args.name}: labels {shown}"
            )
            return 0
        if args.fleet_action == "rm":
            hub.remove_worker(audit, args.name)
            print_json({"removed": args.name}) if args.json else print(f"removed worker {args.name}")
            return 0
        workers = hub.workers(audit)
    return _listed(args, workers)


def _add(args: argparse.Namespace, settings: Settings, token: str) -> int:
    """The new worker's token, shown once; a warning when this box is no hub."""
    from hearth.dispatch.launchers import door_for

    if door_for(settings) is None:
        print(
            f"hearth fleet: this box is no hub (HEARTH_LAUNCHER={settings.launcher} runs no request on other "
            "machines): the worker "
            "is added, but no request reaches it until this box runs as one (docs/fleet.md)",
            file=sys.stderr,
        )
    if args.json:
        print_json({"name": args.name, "token": token})
    else:
        print(token)
        print(f"hearth fleet: the token of {args.name} is shown once; put it in its HEARTH_FLEET_TOKEN_FILE")
    return 0


def _listed(args: argparse.Namespace, workers: list[Worker]) -> int:
    """`hearth fleet list`: every worker as JSON or a table."""
    from hearth.remote import hub

    now = time.time()
    if args.json:
        print_json(
            [
                {
                    "name": w.name,
                    "labels": list(w.labels),
                    "models": list(w.models),
                    "runs": list(w.running),
                    "seen_s_ago": None if w.seen_at is None else round(now - w.seen_at, 1),
                    "up": w.seen_within(hub.lost_after(), now),
                }
                for w in workers
            ]
        )
        return 0
    if not workers:
        print("no workers; `hearth fleet add NAME` makes one")
        return 0
    rows = [
        {
            "worker": w.name,
            "state": "up" if w.seen_within(hub.lost_after(), now) else "never seen" if w.seen_at is None else "silent",
            "seen": "-" if w.seen_at is None else ago(stamp(datetime.fromtimestamp(w.seen_at, UTC))),
            "labels": ",".join(w.labels) or "-",
            "models": ",".join(w.models) or "-",
            "runs": ",".join(w.running) or "-",
        }
        for w in workers
    ]
    table(rows, ["worker", "state", "seen", "labels", "models", "runs"])
    return 0


def worker(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.fleet.worker import main

    settings.writable_state_dir()
    return main(settings)
