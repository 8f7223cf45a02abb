"""`hearth keys add|list|rm`: the keys of the OpenAI-compatible door (`/v1` on `hearth serve`).

A key is printed once, when it is made; hearth keeps only its SHA-256 (hearth/doors/keys.py).
"""

from __future__ import annotations

import argparse
import getpass
from typing import TYPE_CHECKING

from hearth.render import print_json, table
from hearth.settings import Settings

if TYPE_CHECKING:
    from hearth.audit.store import AuditStore

EPILOG = "exit codes: 0 done, 2 a bad or taken name, an unknown profile, or a key that does not exist"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("keys", help="keys of the OpenAI-compatible /v1 door: add, list, rm", epilog=EPILOG)
    actions = p.add_subparsers(dest="keys_action")
    add = actions.add_parser("add", help="make a key and print it once (only its hash is kept)")
    add.add_argument("name", help="the key's name; its runs are recorded with source api:NAME")
    add.add_argument(
        "--agent-name",
        "--agent",
        dest="agent",
        action="append",
        default=[],
        metavar="PROFILE",
        help="a profile it may use; repeat (default: any)",
    )
    add.add_argument("--budget", type=int, default=0, metavar="TOKENS", help="tokens a day (UTC) for its runs; 0 none")
    add.add_argument("--rate", type=int, default=0, metavar="N", help="calls a minute; 0 none")
    add.add_argument("--user", default="", help="whose rights its calls have (default: yours, or operator)")
    add.add_argument("--json", action="store_true", help="print {name, key} as JSON")
    listing = actions.add_parser("list", help="every key: its profiles, budget, rate and today's tokens")
    listing.add_argument("--json", action="store_true", help="print the keys as JSON")
    rm = actions.add_parser("rm", help="remove a key: calls with it are refused from now on")
    rm.add_argument("name")
    rm.add_argument("--json", action="store_true", help="print {removed: NAME} as JSON")
    p.set_defaults(handler=keys, json=False)


def keys(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit.store import AuditStore
    from hearth.users.access import login_user, require

    settings.writable_state_dir()
    me = login_user(settings)
    with AuditStore(settings.audit_path) as audit:
        if args.keys_action in ("add", "rm"):
            require(me, "manage")
        if args.keys_action == "add":
            return _add(args, settings, audit)
        if args.keys_action == "rm":
            from hearth.doors.keys import remove

            remove(audit, args.name)
            print_json({"removed": args.name}) if args.json else print(f"removed key {args.name}")
            return 0
        return _list(args, audit)


def _add(args: argparse.Namespace, settings: Settings, audit: AuditStore) -> int:
    from hearth.doors.keys import Key, add
    from hearth.run.profiles import load_profile
    from hearth.users.access import user_named
    from hearth.users.roster import existing

    for agent in args.agent:
        load_profile(settings.config_dir, agent)  # an unknown profile: refused now, listing them
    login = getpass.getuser()
    owner = args.user or (login if user_named(audit, login) else "operator")
    existing(audit, owner)  # an unknown user: refused now
    key = Key(args.name, tuple(args.agent), args.budget, args.rate, created_by=login, user=owner)
    secret = add(audit, key)
    if args.json:
        print_json({"name": key.name, "key": secret})
    else:
        print(secret)
        print(f"hearth keys: the key {key.name} is shown once; keep it (hearth keeps only its hash)", flush=True)
    return 0


def _list(args: argparse.Namespace, audit: AuditStore) -> int:
    from hearth.doors.keys import listing, spent_today

    rows = [
        {
            "name": k.name,
            "agents": ", ".join(k.agents) or "any",
            "budget": k.budget_tokens or "none",
            "spent_today": spent_today(audit, k),
            "rate": f"{k.rate_per_min}/min" if k.rate_per_min else "none",
            "created_at": k.created_at,
            "created_by": k.created_by,
            "user": k.user,
        }
        for k in listing(audit)
    ]
    if args.json:
        print_json(rows)
    elif not rows:
        print("no keys (make one: hearth keys add NAME)")
    else:
        table(rows, ["name", "user", "agents", "budget", "spent_today", "rate", "created_at", "created_by"])
    return 0
