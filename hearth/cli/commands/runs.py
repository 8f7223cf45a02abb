"""`hearth runs` (the last runs, filtered, or followed) and `hearth show [ID]` (one run, step by step;
a marathon with its legs and the judge's reasons, a swarm as a tree; `--chain`: a chain of follow-ups
as one conversation).

Both settle dead runs first (dispatch/settle.py): what they show as running is running.
`--follow` polls the audit (every FOLLOW_EVERY_S) like `journalctl -f`: `hearth show --follow`
until the run ends, with the run's exit code; `hearth runs --follow` until Ctrl-C.
How one run is printed (header, legs, tree, chain, checkpoints, walls, steps) is hearth/cli/runview.py.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any

from hearth.cli.main import positive
from hearth.errors import NotFound
from hearth.render import ago, duration, json_line, local_time, print_json, table, visible_line
from hearth.settings import Settings

if TYPE_CHECKING:
    from hearth.audit.store import AuditStore

FOLLOW_EVERY_S = 0.5
SHOW_EPILOG = (
    "exit codes: 0 shown, 2 no such run (or a prefix of several: they are listed); with --follow, "
    "the run's own exit code once it ends (0 done, 1 failed, 2 rejected, 3 iteration limit, "
    "4 model unavailable, 5 denied, 6 tripped, 7 budget exceeded, 130 interrupted)"
)


def register(sub: argparse._SubParsersAction) -> None:
    runs = sub.add_parser("runs", help="list the most recent runs (filter, search, follow)")
    runs.add_argument("--limit", type=positive, default=20, help="how many (default 20)")
    runs.add_argument(
        "--status", type=run_status, help="only runs with this status (running, waiting, done, failed, interrupted ...)"
    )
    runs.add_argument("--agent-name", "--agent", dest="agent_name", metavar="NAME", help="only this agent's runs")
    runs.add_argument("--model", help="only runs on this model")
    runs.add_argument("--source", help="only runs from this source (cli, queue, command-center, timer ...)")
    runs.add_argument("--worker", help="on a hub: only runs of this worker of its fleet (docs/fleet.md)")
    runs.add_argument("--since", metavar="WHEN", help="a date (2026-01-31), a date-time, or a span back (7d, 24h)")
    runs.add_argument("--search", metavar="TEXT", help="only runs whose goal or summary holds every word")
    runs.add_argument("--follow", "-f", action="store_true", help="then show new runs and changes until Ctrl-C")
    runs.add_argument("--json", action="store_true")
    runs.set_defaults(handler=list_runs)
    show = sub.add_parser("show", help="replay one run step by step (default: the latest)", epilog=SHOW_EPILOG)
    show.add_argument("run_id", nargs="?", help="a run id or a unique prefix of one (default: the latest run)")
    show.add_argument("--follow", "-f", action="store_true", help="keep showing its steps until it ends")
    show.add_argument("--chain", action="store_true", help="the run's chain of follow-ups as one conversation")
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=show_run)


def run_status(text: str) -> str:
    """A status a run can have; anything else is answered with the one likely meant and the list."""
    import difflib

    from hearth.run.exits import RUN_STATUSES

    if text in RUN_STATUSES:
        return text
    near = difflib.get_close_matches(text, RUN_STATUSES, n=1)
    hint = f"did you mean {near[0]}? " if near else ""
    raise argparse.ArgumentTypeError(f"no run has the status {text!r}; {hint}the statuses: {', '.join(RUN_STATUSES)}")


def open_audit(settings: Settings) -> AuditStore:
    """The audit, with dead runs settled; NotFound when nothing has run yet."""
    import sqlite3

    from hearth.audit.store import AuditStore
    from hearth.dispatch.settle import settle_dead

    if not settings.audit_path.exists():
        raise NotFound(
            f"no audit database at {settings.audit_path}; nothing has run yet "
            "(give --state-dir DIR or set HEARTH_STATE_DIR to where runs were recorded)"
        )
    try:
        audit = AuditStore(settings.audit_path)
    except sqlite3.OperationalError:  # a reader who may not write it (a submitter): read, settle nothing
        return AuditStore.read_only(settings.audit_path)
    settle_dead(audit, settings)
    return audit


def _filters(args: argparse.Namespace) -> dict[str, Any]:
    from hearth.report import parse_since

    where = {k: getattr(args, k) for k in ("status", "agent_name", "model", "source", "worker") if getattr(args, k)}
    return {**where, "since": parse_since(args.since), "search": args.search}


def list_runs(args: argparse.Namespace, settings: Settings) -> int:
    filters = _filters(args)
    with open_audit(settings) as audit:
        rows = audit.runs(limit=args.limit, **filters)
        if args.json and not args.follow:
            print_json(rows)
        elif args.json:
            for row in reversed(rows):
                print(json_line(row), flush=True)
        elif rows:
            table([_row(r) for r in rows], RUN_COLUMNS, widths={"goal": 50, "label": 20})
        else:
            given = any(v for v in filters.values())
            print("no runs match these filters" if given else "no runs recorded yet")
        if args.follow:
            _follow_runs(audit, settings, args, filters, rows)
    return 0


RUN_COLUMNS = ["id", "status", "label", "agent", "model", "source", "iters", "started", "took", "link", "goal"]


def _row(run: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": run["id"],
        "status": run["status"],
        "label": run.get("label") or "",
        "agent": run["agent_name"],
        "model": f"{run['model']} on {run['worker']}" if run.get("worker") else run["model"],
        "source": run["source"],
        "iters": run["iterations"],
        "started": ago(run["started_at"]),
        "took": duration(run["duration_ms"]) if run["duration_ms"] is not None else "-",
        "link": run.get("kind") or (f"{run['link']} of {run['parent_run']}" if run.get("parent_run") else ""),
        "goal": run["goal"],
    }


def _follow_runs(
    audit: AuditStore, settings: Settings, args: argparse.Namespace, filters: dict[str, Any], rows: list[Any]
) -> None:
    """New runs and status changes, one line each, as they happen (until Ctrl-C)."""
    from hearth.dispatch.settle import settle_dead

    seen = {r["id"]: r["status"] for r in rows}
    while True:
        time.sleep(FOLLOW_EVERY_S)
        settle_dead(audit, settings)
        for run in reversed(audit.runs(limit=max(args.limit, 50), **filters)):
            if seen.get(run["id"]) == run["status"]:
                continue
            seen[run["id"]] = run["status"]
            if args.json:
                print(json_line(run), flush=True)
            else:
                when = local_time(run["ended_at"] or run["started_at"])
                goal = " ".join((run["goal"] or "").split())[:60]
                print(visible_line(f"{when}  {run['id']}  {run['status']:<17} {goal}"), flush=True)


def find_run(audit: AuditStore, prefix: str | None) -> dict[str, Any]:
    """The run an id, a unique prefix or nothing (the latest) names; NotFound listing the candidates."""
    if prefix is None:
        latest = audit.runs(limit=1)
        if not latest:
            raise NotFound("no runs recorded yet")
        return latest[0]
    run = audit.find_run(prefix)
    if run is not None:
        return run
    candidates = audit.run_ids_starting(prefix)
    if candidates:
        more = "" if len(candidates) < 10 else ", ..."
        raise NotFound(
            f"run id prefix {prefix!r} matches several runs: {', '.join(candidates)}{more}; give more of the id"
        )
    raise NotFound(f"no run with id {prefix!r}; see: hearth runs")


def show_run(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.cli.runview import print_checkpoints, print_run, print_walls, show_chain, step_line
    from hearth.timeline import in_order

    with open_audit(settings) as audit:
        run = find_run(audit, args.run_id)
        if args.chain:
            return show_chain(follow_up_chain(audit, run), args.json)
        steps = audit.steps(run["id"])
        linked = audit.linked(run["id"])
        checkpoints = audit.checkpoints(run["id"])
        connections, tripwires = audit.connections(run["id"]), audit.tripwires(run["id"])
        if args.follow:
            return _follow_run(audit, settings, run, steps, args.json)
    if args.json:
        walls = {"connections": connections, "tripwires": tripwires}
        print_json({"run": run, "steps": steps, "checkpoints": checkpoints, "linked": linked, **walls})
        return 0
    print_run(run, linked, steps)
    print_checkpoints(checkpoints, run["workspace"])
    print_walls(connections, tripwires)
    for step in in_order(steps):  # as they happened: a decided call after its approval (hearth/timeline.py)
        print(step_line(step))
    return 0


def _follow_run(
    audit: AuditStore, settings: Settings, run: dict[str, Any], steps: list[dict[str, Any]], json_lines: bool
) -> int:
    """Each step once it is complete (a tool also when it starts), until the run's status is final."""
    from hearth.cli.runview import step_line
    from hearth.dispatch.settle import settle_dead
    from hearth.run.exits import exit_code  # the run's exit codes, only when following one

    if not json_lines:
        print(visible_line(f"run {run['id']}  {run['status']}  agent={run['agent_name']} model={run['model']}"))
        if run.get("worker"):
            print(visible_line(f"worker: {run['worker']} (a box of this hub's fleet)"))
        print(visible_line(f"goal: {run['goal']}"), flush=True)
    shown: dict[int, str | None] = {}
    while True:
        for step in steps:
            state = step.get("verdict")
            if shown.get(step["seq"], "-") == state:
                continue
            shown[step["seq"]] = state
            live = run["status"] == "running"
            print(json_line({"event": "step", **step}) if json_lines else step_line(step, live), flush=True)
        if run["status"] != "running":
            break
        time.sleep(FOLLOW_EVERY_S)
        settle_dead(audit, settings)
        run = audit.run(run["id"]) or run
        steps = audit.steps(run["id"])
    if json_lines:
        print(json_line({"event": "run", **run}), flush=True)
    else:
        text = run.get("summary") if run["status"] == "done" else run.get("error")
        print(visible_line(f"== {run['status']}: {text or '-'}"), flush=True)
    return exit_code(run["status"])


def follow_up_chain(audit: AuditStore, run: dict[str, Any]) -> list[dict[str, Any]]:
    """The follow-ups this run belongs to, oldest first: up through its parents, down through its follow-ups."""
    chain = [run]
    while chain[0].get("link") == "follow-up" and chain[0].get("parent_run") and len(chain) < 1000:
        parent = audit.run(chain[0]["parent_run"])
        if parent is None:
            break
        chain.insert(0, parent)
    while len(chain) < 1000:
        after = [r for r in audit.linked(chain[-1]["id"]) if r.get("link") == "follow-up"]
        if not after:
            break
        chain.append(after[0])
    return chain
