"""`hearth channels`: run the chat channels channels.toml configures (`hearth-channels.service`
on NixOS and from `hearth install --systemd`), and `hearth channels status`: each channel's state,
its last error and its deliveries not yet acknowledged.

Who may talk to hearth there is `hearth users link NAME telegram ID` or `hearth users link NAME email
ADDRESS` (docs/channels.md).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from typing import Any

from hearth.render import print_json, table
from hearth.settings import Settings

EPILOG = "exit codes: 0 stopped by SIGTERM or SIGINT, or status shown; 2 channels.toml is wrong or configures none"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("channels", help="run the chat channels (Telegram, e-mail); status: their state", epilog=EPILOG)
    p.set_defaults(handler=channels, json=False, channels_action="run")
    actions = p.add_subparsers(dest="channels_action", metavar="ACTION")
    actions.add_parser("run", help="run every configured channel until stopped (the default)")
    status = actions.add_parser("status", help="each channel's state, last error and deliveries still owed")
    status.add_argument("--json", action="store_true", help="print JSON")


def channels(args: argparse.Namespace, settings: Settings) -> int:
    if args.channels_action == "status":
        return _status(args, settings)
    return _run(settings)


def _run(settings: Settings) -> int:
    from hearth.audit.store import AuditStore
    from hearth.channels.config import FILE, load_channels
    from hearth.channels.service import serve
    from hearth.errors import UsageError

    configs = load_channels(settings.config_dir)
    if not configs:
        raise UsageError(f"no channel is configured: add [telegram] or [email] to {settings.config_dir / FILE}")
    settings.writable_state_dir()
    AuditStore(settings.audit_path).close()  # migrated before the loops read it

    async def main() -> None:
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stopping.set)
        print(f"hearth channels: running {', '.join(c.name for c in configs)}", flush=True)
        await serve(settings, configs, stopping)

    asyncio.run(main())
    return 0


def _status(args: argparse.Namespace, settings: Settings) -> int:
    shown = status_rows(settings)
    if args.json:
        print_json(shown)
    elif not shown:
        print("no channel has run yet (hearth channels; see docs/channels.md)")
    else:
        table(shown, ["channel", "state", "since", "last_error", "owed", "missing"], widths={"last_error": 60})
    return 0


def status_rows(settings: Settings) -> list[dict[str, Any]]:
    """Each channel's state and what it still owes (pending or failed deliveries) or gave up on."""
    from hearth.audit import channels as rows
    from hearth.audit.store import AuditStore

    if not settings.audit_path.exists():
        return []
    audit = AuditStore.read_only(settings.audit_path)
    try:
        return [{**row, "missing": len(row["missing"])} for row in rows.status(audit)]
    finally:
        audit.close()
