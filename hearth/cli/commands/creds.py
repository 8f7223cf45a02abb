"""`hearth creds set|list|rm`: credentials used by name; a value is read from stdin, never argv."""

from __future__ import annotations

import argparse
import getpass
import sys

from hearth.errors import UsageError
from hearth.render import print_json, table
from hearth.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    creds = sub.add_parser("creds", help="manage credentials that runs use by name (cred:NAME)")
    verbs = creds.add_subparsers(dest="verb", metavar="VERB", required=True)
    put = verbs.add_parser(
        "set",
        help="set a credential; the value is read from stdin",
        description="Set NAME, bound to the hosts it may be sent to. The value is read "
        "from stdin (a prompt without echo on a terminal), never from the command line.",
    )
    put.add_argument("name", help="letters, digits, '_', '-', '.'; starts with a letter")
    put.add_argument(
        "--host",
        action="append",
        default=[],
        required=True,
        help="a host (or *.domain) the value may be sent to; repeatable",
    )
    put.add_argument(
        "--systemd",
        action="store_true",
        help="the value comes from $CREDENTIALS_DIRECTORY/NAME (LoadCredential=); read no value",
    )
    put.add_argument("--json", action="store_true")
    put.set_defaults(handler=set_credential)
    listing = verbs.add_parser("list", help="list credentials (names, hosts, where the value comes from)")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=list_credentials)
    remove = verbs.add_parser("rm", help="remove a credential from the store")
    remove.add_argument("name")
    remove.add_argument("--json", action="store_true")
    remove.set_defaults(handler=remove_credential)


def read_value(name: str) -> str:
    if sys.stdin is None:
        raise UsageError(f"no value for {name}: pipe it on stdin")
    if sys.stdin.isatty():
        return getpass.getpass(f"value of {name} (not echoed): ")
    value = sys.stdin.read()
    if not value.strip():
        raise UsageError(f"no value for {name} on stdin; pipe it in, e.g. hearth creds set {name} --host H < file")
    return value


def set_credential(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.credentials import check_hosts, usage_name
    from hearth.run.services import credential_store

    usage_name(args.name)  # the name and hosts first: nobody types a secret for a command that will refuse it
    hosts = check_hosts(args.host)
    settings.writable_state_dir()
    store = credential_store(settings)
    store.set(args.name, args.host, None if args.systemd else read_value(args.name))
    where = "$CREDENTIALS_DIRECTORY" if args.systemd else str(store.path)
    if args.json:
        print_json({"name": args.name, "hosts": hosts, "source": where})
    else:
        print(f"set {args.name} (value from {where}), may be sent to: {', '.join(hosts)}")
    return 0


def list_credentials(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.run.services import credential_store

    rows = credential_store(settings).entries()
    if args.json:
        print_json(rows)
    elif not rows:
        print("no credentials; add one with: hearth creds set NAME --host HOST < value-file")
    else:
        table([{**r, "hosts": ", ".join(r["hosts"])} for r in rows], ["name", "hosts", "source", "updated_at"])
    return 0


def remove_credential(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.run.services import credential_store

    credential_store(settings).remove(args.name)
    print_json({"removed": args.name}) if args.json else print(f"removed {args.name}")
    return 0
