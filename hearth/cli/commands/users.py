"""`hearth users`: who may use this hearth, and what each may do in which agent profile.

    hearth users add NAME ROLE        a user (owner, operator or viewer) and their sign-in token, shown once
    hearth users list                 every user: role, memberships, tokens, chat identities
    hearth users grant NAME PROFILE RIGHT    an operator may launch (and stop) or approve in PROFILE (* every)
    hearth users revoke NAME PROFILE RIGHT
    hearth users disable|enable NAME  a disabled user can do nothing, through any door
    hearth users rm NAME              the user, their tokens, memberships and identities (what they did stays)
    hearth users token NAME           another sign-in token
    hearth users link|unlink NAME CHANNEL ADDRESS   a Telegram user id or e-mail address is theirs
    hearth users apply FILE           make the users match a declaration (services.hearth.users,
                                      install.toml's [users]): docs/users.md

Changing users is an owner's: the CLI acts as HEARTH_USER, else as the user named as the login,
else as the owner at the shell (hearth/users/access.py).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from hearth.render import print_json, table
from hearth.settings import Settings

if TYPE_CHECKING:
    from hearth.audit.store import AuditStore

EPILOG = (
    "exit codes: 0 done, 1 refused (not an owner, or the last owner), 2 a bad name, role, right, profile or "
    "address, no such user, or a bad declaration (apply: nothing is changed)"
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("users", help="users, their roles, memberships, tokens and chat identities", epilog=EPILOG)
    actions = p.add_subparsers(dest="users_action", metavar="ACTION")
    add = actions.add_parser("add", help="make a user and print their sign-in token once", epilog=EPILOG)
    add.add_argument("name")
    add.add_argument("role", choices=("owner", "operator", "viewer"))
    add.add_argument("--default-profile", default="default", help="the profile their chats run under")
    add.add_argument("--json", action="store_true")
    actions.add_parser("list", help="every user").add_argument("--json", action="store_true")
    for verb, text in (("grant", "give an operator a right in a profile"), ("revoke", "take a right back")):
        q = actions.add_parser(verb, help=text, epilog=EPILOG)
        q.add_argument("name")
        q.add_argument("profile", help="an agent profile, or * for every profile")
        q.add_argument("right", choices=("launch", "approve"))
        q.add_argument("--json", action="store_true")
    for verb, text in (
        ("disable", "refuse everything the user does, until enabled"),
        ("enable", "let a disabled user back in"),
        ("rm", "remove a user (what they did stays recorded)"),
        ("token", "print another sign-in token for the user, once"),
    ):
        q = actions.add_parser(verb, help=text, epilog=EPILOG)
        q.add_argument("name")
        q.add_argument("--json", action="store_true")
    for verb, text in (("link", "map a chat identity to the user"), ("unlink", "remove a chat identity")):
        q = actions.add_parser(verb, help=text, epilog=EPILOG)
        q.add_argument("name")
        q.add_argument("channel", choices=("telegram", "email"))
        q.add_argument("address", help="a Telegram user id (digits), or an e-mail address")
        q.add_argument("--json", action="store_true")
    q = actions.add_parser(
        "apply", help="make the users match a declaration file (TOML or .json); a second apply changes nothing"
    )
    q.add_argument("file", type=Path, help="the declaration: [users.NAME] tables (docs/users.md)")
    q.add_argument("--dry-run", action="store_true", help="print what would change, change nothing")
    q.add_argument("--json", action="store_true")
    p.set_defaults(handler=users, json=False)


def users(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit.approvals import operator_name
    from hearth.audit.store import AuditStore
    from hearth.users.access import cli_user, require

    settings.writable_state_dir()
    with AuditStore(settings.audit_path) as audit:
        me = cli_user(audit, operator_name())
        if args.users_action in (None, "list"):
            return _list(args, audit)
        require(me, "manage")
        return ACTIONS[args.users_action](args, audit, me.name)


def _list(args: argparse.Namespace, audit: AuditStore) -> int:
    from hearth.users.roster import listing

    shown = [
        {
            "name": u.user.name,
            "role": u.user.role,
            "disabled": u.user.disabled,
            "rights": ", ".join(f"{right} in {profile}" for profile, right in sorted(u.user.rights)) or "-",
            "default_profile": u.user.default_profile,
            "tokens": "configured" if u.user.built_in else u.tokens,
            "identities": ", ".join(u.identities) or "-",
            "created_by": u.created_by,
        }
        for u in listing(audit)
    ]
    if args.json:
        print_json(shown)
    else:
        table(shown, ["name", "role", "disabled", "rights", "default_profile", "tokens", "identities", "created_by"])
    return 0


def _add(args: argparse.Namespace, audit: AuditStore, by: str) -> int:
    from hearth.users.roster import add

    token = add(audit, args.name, args.role, by=by, default_profile=args.default_profile)
    return _token_out(args, token)


def _token(args: argparse.Namespace, audit: AuditStore, by: str) -> int:
    from hearth.users.roster import new_token

    return _token_out(args, new_token(audit, args.name, by=by))


def _token_out(args: argparse.Namespace, token: str) -> int:
    if args.json:
        print_json({"name": args.name, "token": token})
    else:
        print(token)
        print(f"hearth users: {args.name}'s sign-in token is shown once; hearth keeps only its hash", flush=True)
    return 0


def _grant(args: argparse.Namespace, audit: AuditStore, by: str) -> int:
    from hearth.users.roster import grant

    made = grant(audit, args.name, args.profile, args.right, by=by)
    said = "granted" if made else "had already"
    return _done(args, f"{args.name} {said}: {args.right} in {args.profile}")


def _revoke(args: argparse.Namespace, audit: AuditStore, by: str) -> int:
    from hearth.users.roster import revoke

    revoke(audit, args.name, args.profile, args.right)
    return _done(args, f"{args.name} no longer has {args.right} in {args.profile}")


def _disable(args: argparse.Namespace, audit: AuditStore, by: str) -> int:
    from hearth.users.roster import set_disabled

    set_disabled(audit, args.name, args.users_action == "disable")
    return _done(args, f"{args.name} is {args.users_action}d")


def _rm(args: argparse.Namespace, audit: AuditStore, by: str) -> int:
    from hearth.users.roster import remove

    remove(audit, args.name)
    return _done(args, f"removed user {args.name}")


def _apply(args: argparse.Namespace, audit: AuditStore, by: str) -> int:
    from hearth.users import declared, sync

    changes = sync.plan(audit, declared.read(args.file), args.file)
    if not args.dry_run:
        sync.apply(audit, changes, args.file)
    lines = [c.line for c in changes]
    if args.json:
        print_json({"file": str(args.file), "dry_run": args.dry_run, "changes": lines})
    elif not lines:
        print(f"users match {args.file}: nothing to change")
    else:
        print("\n".join(("would " if args.dry_run else "") + line for line in lines))
    return 0


def _link(args: argparse.Namespace, audit: AuditStore, by: str) -> int:
    from hearth.users.roster import link, unlink

    if args.users_action == "link":
        address = link(audit, args.name, args.channel, args.address, by=by)
        return _done(args, f"{args.channel}:{address} is {args.name}")
    unlink(audit, args.name, args.channel, args.address)
    return _done(args, f"{args.channel}:{args.address} is no longer {args.name}")


def _done(args: argparse.Namespace, line: str) -> int:
    print_json({"done": line}) if args.json else print(line)
    return 0


ACTIONS: dict[str, Callable[[argparse.Namespace, AuditStore, str], int]] = {
    "add": _add,
    "token": _token,
    "grant": _grant,
    "revoke": _revoke,
    "disable": _disable,
    "enable": _disable,
    "rm": _rm,
    "link": _link,
    "unlink": _link,
    "apply": _apply,
}
