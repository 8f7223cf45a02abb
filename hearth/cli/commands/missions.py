"""`hearth missions`: the scheduled goals, their next and last runs; run one now, pause, resume."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime

from hearth.render import print_json, table
from hearth.settings import Settings

EPILOG = (
    "Missions are $HEARTH_CONFIG_DIR/missions/NAME.toml (on NixOS: services.hearth.schedules). "
    "A paused mission's timer records a skip instead of enqueuing. "
    "exit codes: 0 ok, 1 a mission file does not load (listed on stderr), 2 no such mission or a refused request"
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("missions", help="scheduled goals: list, run one now, pause, resume", epilog=EPILOG)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=list_missions)
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    for name, handler, text in (
        ("run", run_now, "enqueue the mission's request now (even while it is paused)"),
        ("pause", pause, "its timer records a skip instead of enqueuing, until resume"),
        ("resume", resume, "its timer enqueues again"),
        ("fire", fire_timer, "what its timer runs: enqueue, or record a skip while paused"),
    ):
        action = actions.add_parser(name, help=text)
        action.add_argument("name", help="the mission")
        action.add_argument("--json", action="store_true")
        action.set_defaults(handler=handler)


def list_missions(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.leash.missions import listing, load_missions

    rows = listing(settings, datetime.now())
    _, problems = load_missions(settings)
    if args.json:
        print_json({"missions": rows, "problems": [p.line() for p in problems]})
    elif rows:
        shown = [{**r, "next": _local(r["next"]), "paused": r["paused"] or "-", "last": _last(r)} for r in rows]
        table(shown, ["name", "schedule", "next", "last", "paused", "skipped", "agent", "goal"], widths={"goal": 40})
    else:
        print(f"no missions (add $HEARTH_CONFIG_DIR/missions/NAME.toml: {settings.config_dir / 'missions'})")
    for problem in problems:
        print(f"hearth missions: skipped {problem.line()}", file=sys.stderr)
    return 1 if problems else 0


def _local(when: object) -> object:
    """A timetable's time (this machine's, as its timers read it) with its zone, for the table."""
    if not isinstance(when, str):
        return when
    try:
        return datetime.fromisoformat(when).astimezone().isoformat()
    except ValueError:
        return when


def _last(row: dict[str, object]) -> str:
    if not row["last_run"]:
        return "never"
    return f"{row['last_status']} {row['last_run']} ({row['last_started']})"


def run_now(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit.approvals import operator_name
    from hearth.leash.missions import find_mission, fire

    mission = find_mission(settings, args.name)
    done = fire(settings, mission, source="cli", by=f"cli:{operator_name()}", now=datetime.now(), force=True)
    if args.json:
        print_json({"mission": args.name, "enqueued": done.id if done else None, "notes": done.notes if done else []})
        return 0
    print(done.id if done else f"mission {args.name} was not enqueued")
    for note in done.notes if done else []:
        print(f"hearth missions: {note}", file=sys.stderr)
    return 0


def pause(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit.approvals import operator_name
    from hearth.leash.missions import find_mission, pause_mission

    record = pause_mission(settings, find_mission(settings, args.name), by=f"cli:{operator_name()}")
    if args.json:
        print_json({"mission": args.name, "paused": record})
        return 0
    print(f"mission {args.name} is paused since {record['since']}, by {record['by']}")
    return 0


def resume(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.leash.missions import find_mission, resume_mission

    was = resume_mission(settings, find_mission(settings, args.name))
    if args.json:
        print_json({"mission": args.name, "resumed": bool(was)})
        return 0
    print(f"mission {args.name} resumed" if was else f"mission {args.name} was not paused")
    return 0


def fire_timer(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.leash.missions import find_mission, fire

    done = fire(settings, find_mission(settings, args.name), source="timer", by="timer", now=datetime.now())
    if args.json:
        print_json({"mission": args.name, "enqueued": done.id if done else None, "skipped": done is None})
        return 0
    print(done.id if done else f"mission {args.name} is paused: skipped")
    return 0
