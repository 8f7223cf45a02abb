"""`hearth eval`: suites from the box's own runs, run against models, the matrix, the diff of two evals."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from hearth.errors import UsageError
from hearth.render import print_json, table
from hearth.settings import Settings

EPILOG = (
    "Suites are $HEARTH_CONFIG_DIR/evals/SUITE.toml (docs/evals.md). Every case runs as an ordinary queued, "
    "audited run (source eval), so the launcher, the walls and the budgets apply. "
    "exit codes: 0 ok, 1 a case failed (eval show, once every run is scored) or got worse (eval diff), "
    "2 bad input, a suite file that does not load, or no such run, suite or eval"
)
MAX_REPEAT = 20


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="evaluate models on suites made from recorded runs", epilog=EPILOG)
    p.add_argument("--json", action="store_true", help="the suites and recent evals as JSON")
    p.set_defaults(handler=overview)
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    add = actions.add_parser("add", help="make a case of a recorded run (its before checkpoint is the start)")
    add.add_argument("run", help="the recorded run")
    add.add_argument("--suite", required=True, help="the suite to add it to (made when missing)")
    add.add_argument("--name", default="", help="the case's name (default: from its label or goal)")
    add.add_argument("--json", action="store_true", help="the case added, as JSON")
    add.set_defaults(handler=add_case)
    run = actions.add_parser("run", help="queue every case for every model; `hearth eval show` reads the matrix")
    run.add_argument("suite")
    run.add_argument("--model", action="append", default=[], help="a model to run it with (repeatable)")
    run.add_argument("--profile", action="append", default=[], help="a profile variant (repeatable)")
    run.add_argument("--repeat", type=int, default=1, help=f"runs per case and model (1-{MAX_REPEAT})")
    run.add_argument("--alert-drop", type=float, default=None, help="alert when the pass rate falls by more")
    run.add_argument("--dry-run", action="store_true", help="say what would run and what it would cost")
    run.add_argument("--json", action="store_true", help="the eval id and its runs (or the plan) as JSON")
    run.set_defaults(handler=run_suite)
    show = actions.add_parser("show", help="the matrix of an eval (default: the latest)")
    show.add_argument("eval", nargs="?", default="", help="an eval id")
    show.add_argument("--suite", default="", help="the latest eval of this suite")
    shown = show.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true", help="the matrix as JSON")
    shown.add_argument("--markdown", action="store_true", help="a table for a pull request")
    show.set_defaults(handler=show_eval)
    compare = actions.add_parser("diff", help="compare two evals: the cases that got worse")
    compare.add_argument("a")
    compare.add_argument("b")
    compare.add_argument("--json", action="store_true", help="the changes as JSON")
    compare.set_defaults(handler=diff_evals)


def overview(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit.evals import eval_rows
    from hearth.audit.store import AuditStore
    from hearth.eval.suite import suite_names

    settings.writable_state_dir()
    with AuditStore(settings.audit_path) as audit:
        evals = eval_rows(audit, limit=20)
    suites = suite_names(settings.config_dir)
    if args.json:
        print_json({"suites": suites, "evals": evals})
        return 0
    print(f"suites: {', '.join(suites) or 'none'} (in {settings.config_dir / 'evals'})")
    shown = [{**e, "models": ", ".join(e["models"]), "pass_rate": _share(e["pass_rate"])} for e in evals]
    if shown:
        table(shown, ["id", "suite", "models", "repeat", "status", "pass_rate", "trigger", "created_at"])
    return 0


def add_case(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit.store import AuditStore
    from hearth.eval.cases import case_from_run
    from hearth.eval.suite import add_case as append

    settings.writable_state_dir()
    with AuditStore(settings.audit_path) as audit:
        case = case_from_run(audit, args.run, args.name)
    path = append(settings.config_dir, args.suite, case)
    if args.json:
        from hearth.eval.suite import case_spec

        print_json({"suite": args.suite, "path": str(path), "case": case_spec(case)})
        return 0
    print(f"added case {case.name} (from run {args.run}) to {path}")
    return 0


def run_suite(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit.approvals import operator_name
    from hearth.dispatch.launchers import heal
    from hearth.eval.launch import MAX_RUNS, plan_eval, start_eval
    from hearth.eval.suite import load_suite

    if not 1 <= args.repeat <= MAX_REPEAT:
        raise UsageError(f"--repeat {args.repeat} is out of range; use 1 to {MAX_REPEAT}")
    if args.alert_drop is not None and not 0 <= args.alert_drop < 1:
        raise UsageError(f"--alert-drop {args.alert_drop} is out of range; use a share such as 0.1")
    plan = plan_eval(load_suite(settings.config_dir, args.suite), args.model, args.profile, args.repeat)
    if len(plan.items) > MAX_RUNS:
        raise UsageError(
            f"{len(plan.items)} runs is more than one eval may queue ({MAX_RUNS}); use fewer repeats or models"
        )
    if args.dry_run:
        return _dry_run(plan, settings, args.json)
    notes = start_eval(
        plan, settings, by=f"cli:{operator_name()}", trigger="cli", alert_drop=args.alert_drop, heal=heal
    )
    if args.json:
        print_json({"eval": plan.eval_id, "runs": [i.run_id for i, _, _ in plan.items], "notes": notes})
    else:
        print(plan.eval_id)
        print(f"queued {len(plan.items)} runs; `hearth eval show {plan.eval_id}` shows the matrix", file=sys.stderr)
    for note in [] if args.json else notes:
        print(f"hearth eval: {note}", file=sys.stderr)
    return 0


def _dry_run(plan: Any, settings: Settings, as_json: bool) -> int:
    cost = plan.estimate(settings)
    rows = [
        {"run": i.run_id, "case": c.name, "model": v.label, "repeat": i.repeat, "profile": v.profile or c.profile}
        for i, c, v in plan.items
    ]
    if as_json:
        print_json({"eval": None, "would_run": rows, "cost": cost})
        return 0
    table(rows, ["case", "model", "profile", "repeat"])
    print(_cost_line(cost))
    return 0


def _cost_line(cost: dict[str, Any]) -> str:
    said = f"would queue {cost['runs']} runs; about {cost['estimated_tokens']:,} tokens"
    said += f" (as {cost['estimated_from']} of them cost when recorded)"
    if cost["capped_tokens"] is not None:
        said += f", at most {cost['capped_tokens']:,} by the cases' max_tokens"
    if cost["daily_budget"] is not None:
        said += f"; the daily token budget has {cost['daily_left']:,} of {cost['daily_budget']:,} left"
    else:
        said += "; no daily token budget is set"
    return said


def show_eval(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.eval.render import markdown, text
    from hearth.eval.view import load_matrix

    found = load_matrix(settings, args.eval, args.suite)
    if args.json:
        print_json(found.as_json())
    else:
        print(markdown(found) if args.markdown else text(found))
    done = found.pending == 0
    return 1 if done and any(c["passed"] < c["runs"] for c in found.cells.values()) else 0


def diff_evals(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.eval.render import diff_text
    from hearth.eval.results import diff
    from hearth.eval.view import load_matrix

    change = diff(load_matrix(settings, args.a), load_matrix(settings, args.b))
    if args.json:
        print_json(change)
    else:
        print(diff_text(change))
    return 1 if change["worse"] else 0


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"
