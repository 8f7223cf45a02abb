"""`hearth alerts` (the destinations and the last alerts sent) and `hearth alerts test`."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from hearth.render import print_json, table
from hearth.settings import Settings

if TYPE_CHECKING:
    from hearth.leash.alerts import Destination


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("alerts", help="alert destinations ($HEARTH_CONFIG_DIR/alerts.toml) and the last alerts")
    p.add_argument("action", nargs="?", choices=("list", "test"), default="list", help="test: send a test message")
    p.add_argument("--limit", type=int, default=20, help="how many recent alerts (default 20)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=alerts)


def alerts(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit import alerts as alert_rows
    from hearth.audit.store import AuditStore
    from hearth.leash.alerts import load_destinations, redacted

    destinations = load_destinations(settings.config_dir)
    if args.action == "test":
        return _test(args, settings, destinations)
    where = settings.audit_path if settings.audit_path.exists() else ":memory:"
    with AuditStore(where) as audit:
        recent = alert_rows.recent(audit, args.limit, bodies=True)
    # a URL can hold a token, a topic or a password: shown as the Alerts page shows it
    shown = [
        {"name": d.name, "events": ",".join(d.events), "local": d.local, "url": redacted(d.url)} for d in destinations
    ]
    if args.json:
        print_json({"destinations": shown, "recent": recent})
        return 0
    if shown:
        table(shown, ["name", "events", "local", "url"], widths={"url": 60})
    else:
        print(f"no alert destinations (add {settings.config_dir / 'alerts.toml'})")
    if recent:
        print()
        table(recent, ["at", "event", "run_id", "destination", "status", "attempts", "error"], widths={"error": 60})
    return 0


def _test(args: argparse.Namespace, settings: Settings, destinations: list[Destination]) -> int:
    import socket

    from hearth.leash.alerts import Alert, send_now

    if not destinations:
        print(f"no alert destinations to test (add {settings.config_dir / 'alerts.toml'})")
        return 1
    alert = Alert("test", "hearth: test alert", f"A test alert from hearth on {socket.gethostname()}.")
    results = send_now(settings, alert, destinations)
    if args.json:
        print_json(results)
    for row in results if not args.json else []:
        print(f"{row['destination']}: {row['status']}" + (f" ({row['error']})" if row["error"] else ""))
    return 0 if all(row["status"] == "sent" for row in results) else 1
