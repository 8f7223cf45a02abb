"""`hearth heartbeat` (wake a role now, or every role) and `hearth roles` (list them, switch one off or on)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from hearth.render import print_json, table
from hearth.settings import Settings

if TYPE_CHECKING:
    from hearth.roles.heartbeat import Fired

HEARTBEAT_EPILOG = (
    "A role is a profile with home = true; its heartbeat queues one turn that continues the role's "
    "heartbeat conversation in its home, a strategic review when asked or when due (docs/roles.md). "
    "A switched-off role's heartbeat is skipped and recorded. "
    "exit codes: 0 queued (or skipped, said on stderr), 1 a role could not be fired (--all: listed on stderr), "
    "2 not a role, or the queue refused the request"
)
ROLES_EPILOG = (
    "Roles are $HEARTH_CONFIG_DIR/agents/NAME/agent.toml with home = true; their homes are under "
    "<state>/roles/. A role switched off (enabled = false, or hearth roles disable) runs nothing: its "
    "heartbeats skip and its requests are refused with the reason. exit codes: 0 ok, 1 a profile does not "
    "load (listed on stderr), 2 not a role"
)


def register(sub: argparse._SubParsersAction) -> None:
    beat = sub.add_parser("heartbeat", help="wake a role now: one upkeep turn (or --all)", epilog=HEARTBEAT_EPILOG)
    beat.add_argument("role", nargs="?", help="the role (a profile with home = true)")
    beat.add_argument("--all", action="store_true", help="one heartbeat of every role that has a heartbeat")
    beat.add_argument("--strategic-review", action="store_true", help="take the strategic-review prompt now")
    beat.add_argument("--json", action="store_true")
    beat.set_defaults(handler=heartbeat_now)
    roles = sub.add_parser("roles", help="the roles: list, disable, enable", epilog=ROLES_EPILOG)
    roles.add_argument("--json", action="store_true")
    roles.set_defaults(handler=list_roles)
    actions = roles.add_subparsers(dest="action", metavar="ACTION")
    off = actions.add_parser("disable", help="switch a role off: no heartbeats, its requests refused")
    off.add_argument("name", help="the role")
    off.add_argument("--reason", default="", help="why, for the record and the refusals")
    off.add_argument("--json", action="store_true")
    off.set_defaults(handler=disable)
    on = actions.add_parser("enable", help="switch a role back on")
    on.add_argument("name", help="the role")
    on.add_argument("--json", action="store_true")
    on.set_defaults(handler=enable)


def heartbeat_now(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit.approvals import operator_name
    from hearth.errors import UsageError
    from hearth.roles.heartbeat import fire, roles, sweep
    from hearth.users.access import login_user, require

    if bool(args.role) == bool(args.all):
        raise UsageError("name one role, or give --all for every role with a heartbeat")
    if args.all and args.strategic_review:
        raise UsageError("--strategic-review is for one role; name it instead of --all")
    user, by = login_user(settings), f"cli:{operator_name()}"
    for name in [args.role] if args.role else [p.name for p in roles(settings)[0]]:
        require(user, "launch", name)
    problems: list[str] = []
    if args.role:
        fired = [fire(settings, args.role, by=by, source="cli", review=args.strategic_review)]
    else:
        fired, problems = sweep(settings, by=by, source="cli")
    _show(fired, problems, args.json)
    return 1 if problems else 0


def _show(fired: list[Fired], problems: list[str], as_json: bool) -> None:
    if as_json:
        rows = [{"role": f.role, "kind": f.kind or None, "why": f.why, "request": f.request or None} for f in fired]
        print_json({"fired": rows, "problems": problems})
    for f in fired:
        if not as_json:
            print(f.request or f"{f.role}: skipped")
        print(f"hearth heartbeat: {f.role}: {f.kind + ': ' if f.kind else ''}{f.why}", file=sys.stderr)
    for problem in problems:
        print(f"hearth heartbeat: not fired: {problem}", file=sys.stderr)


def list_roles(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.roles.heartbeat import roles
    from hearth.roles.home import home_of
    from hearth.roles.switch import off_reason

    found, problems = roles(settings)
    rows = [
        {
            "name": p.name,
            "heartbeat": p.heartbeat or None,
            "enabled": not off_reason(settings, p.name, p.enabled),
            "off": off_reason(settings, p.name, p.enabled) or None,
            "home": str(home_of(settings, p.name)),
        }
        for p in found
    ]
    if args.json:
        print_json({"roles": rows, "problems": problems})
    elif rows:
        table([{**r, "heartbeat": r["heartbeat"] or "-", "off": r["off"] or "-"} for r in rows], list(rows[0]))
    else:
        print(f"no roles (add home = true to a profile's agent.toml under {settings.config_dir / 'agents'})")
    for problem in problems:
        print(f"hearth roles: skipped {problem}", file=sys.stderr)
    return 1 if problems else 0


def disable(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit.approvals import operator_name
    from hearth.roles import switch
    from hearth.roles.heartbeat import record_switch, role_profile
    from hearth.users.access import login_user, require

    role_profile(settings, args.name)
    require(login_user(settings), "pause", args.name)
    by = f"cli:{operator_name()}"
    record = switch.disable(settings, args.name, by=by, reason=args.reason)
    record_switch(settings, args.name, by, f"disabled{': ' + args.reason if args.reason else ''}")
    if args.json:
        print_json({"role": args.name, "enabled": False, **record})
    else:
        print(f"role {args.name} is switched off (by {record['by']} at {record['since']})")
    return 0


def enable(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit.approvals import operator_name
    from hearth.roles import switch
    from hearth.roles.heartbeat import record_switch, role_profile
    from hearth.users.access import login_user, require

    profile = role_profile(settings, args.name)
    require(login_user(settings), "pause", args.name)
    was = switch.enable(settings, args.name)
    record_switch(settings, args.name, f"cli:{operator_name()}", "enabled")
    still = "" if profile.enabled else "; it stays off: its agent.toml says enabled = false"
    if args.json:
        print_json({"role": args.name, "enabled": profile.enabled, "was_off": was is not None})
    else:
        print(f"role {args.name} is switched on{' (it was not off)' if was is None else ''}{still}")
    return 0
