"""`hearth budget`: today's token spend against the daily budgets, for the box and per agent."""

from __future__ import annotations

import argparse

from hearth.render import local_time, print_json, table
from hearth.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("budget", help="tokens spent today, the daily budgets, what is left and when they reset")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=show_budget)


def show_budget(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit.store import AuditStore
    from hearth.leash.budget import load_budget, local_now, overview

    budget = load_budget(settings.config_dir, settings.daily_tokens)
    # no audit yet is nothing spent, and reading must not create the file
    where = settings.audit_path if settings.audit_path.exists() else ":memory:"
    with AuditStore(where) as audit:
        view = overview(budget, audit, local_now())
    if args.json:
        print_json(view)
        return 0
    rows = [{"budget": "box", **view["box"]}] + [{"budget": f"agent {a['agent']}", **a} for a in view["agents"]]
    table([{k: _shown(v) for k, v in row.items()} for row in rows], ["budget", "limit", "spent", "remaining"])
    print(f"since {local_time(view['since'])}; resets at {local_time(view['resets_at'])}")
    return 0


def _shown(value: object) -> object:
    if value is None:
        return "none"
    return f"{value:,}" if isinstance(value, int) else value
