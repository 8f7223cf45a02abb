"""`hearth state` (what runs now, for the map) and `hearth report` (what the audit says)."""

from __future__ import annotations

import argparse

from hearth.render import print_json, table
from hearth.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    state = sub.add_parser("state", help="active runs with their live state, and what waits in the queue")
    state.add_argument("--json", action="store_true")
    state.set_defaults(handler=show_state)
    report = sub.add_parser("report", help="runs by status, model and source; tools, failures, p50/p95, tokens")
    report.add_argument("--since", metavar="DATE", help="a date (2026-01-31), a date-time, or a span back (7d, 24h)")
    shape = report.add_mutually_exclusive_group()
    shape.add_argument("--json", action="store_true")
    shape.add_argument("--markdown", action="store_true")
    report.set_defaults(handler=show_report)


def show_state(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.dispatch.settle import settle_dead_runs
    from hearth.report import active_runs

    settle_dead_runs(settings)  # so what is listed is alive
    state = active_runs(settings)
    if args.json:
        print_json(state)
        return 0
    if state["active"]:
        table(
            state["active"],
            ["id", "state", "alive", "agent_name", "model", "iteration", "tool", "detail"],
            widths={"detail": 50},
        )
    else:
        print("no active runs")
    print(f"{state['queued_count']} waiting in {settings.queue_dir}")
    if state["paused"]:
        print(f"hearth is {state['paused']['line']}: nothing starts until `hearth resume`")
    return 0


def show_report(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit.store import AuditStore
    from hearth.report import build_report, headline, markdown, parse_since, sections

    since = parse_since(args.since)
    # No audit yet is an empty report, not an error, and reading must not create the file.
    where = settings.audit_path if settings.audit_path.exists() else ":memory:"
    with AuditStore(where) as audit:
        report = build_report(audit, since)
    if args.json:
        print_json(report)
    elif args.markdown:
        print(markdown(report))
    else:
        print(headline(report))
        for title, columns, rows in sections(report):
            print(f"\n{title}")
            if rows:
                table(rows, columns, widths={"what": 100})
            else:
                print("  none")
    return 0
