"""`hearth research`: queue a research run, see or edit its plan while it waits, read its report.

    hearth research "QUESTION" [limits]      a request with `research` through the queue's front door
    hearth research --plan RUN [--edit FILE] the plan as it stands (and its approval); --edit
                                             replaces it with FILE's JSON while it waits
    hearth research --report RUN             the report, in Markdown, rendered from the record

The plan is approved or denied as any approval is: `hearth approve ID`, the run page, an alert's link.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from hearth.cli.queued import queue_request
from hearth.errors import NotFound, UsageError
from hearth.render import print_json, visible_line
from hearth.settings import Settings

EPILOG = (
    "exit codes: 0 queued (the id is printed), shown or edited; 2 invalid request or plan, no such research "
    "run, a plan no longer waiting, or an unusable queue. The plan waits for approval: hearth approve ID."
)
LIMITS = ("max_searches", "max_pages", "max_sub_questions", "per_question", "max_rounds", "fetches_at_once")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("research", help="research a question, citing what it read (docs/research.md)", epilog=EPILOG)
    p.add_argument("question", nargs="?", help="what to find out")
    p.add_argument("--plan", metavar="RUN", help="show RUN's plan as it stands, and its approval")
    p.add_argument("--edit", metavar="FILE", help="with --plan: replace the plan with FILE's JSON (- reads stdin)")
    p.add_argument("--note", default="", help="with --edit: why, kept with the revision")
    p.add_argument("--report", metavar="RUN", help="print RUN's report (Markdown)")
    p.add_argument("--id", help="the run's id (default: a new one)")
    p.add_argument("--model", help="the model of its phases (default: the profile's, else $HEARTH_MODEL)")
    p.add_argument(
        "--agent-name", "--agent", dest="agent_name", metavar="NAME", help="agent profile (default: default)"
    )
    p.add_argument("--egress", action="append", metavar="HOST", help="a host it may reach; repeat for more")
    p.add_argument("--max-tokens", type=int, metavar="N", help="tokens it may spend (a fifth kept for the synthesis)")
    p.add_argument("--timeout", type=int, metavar="SECONDS", help="time it may work (default 3600)")
    p.add_argument("--max-searches", type=int, metavar="N", help="searches it may make (1-50, default 6)")
    p.add_argument("--max-pages", type=int, metavar="N", help="pages it may read (1-100, default 10)")
    p.add_argument(
        "--max-sub-questions", type=int, metavar="N", help="sub-questions its plan may have (1-8, default 4)"
    )
    p.add_argument(
        "--per-question", type=int, metavar="N", help="evidence that answers a sub-question (1-10, default 2)"
    )
    p.add_argument("--max-rounds", type=int, metavar="N", help="rounds of searching and reading (1-10, default 4)")
    p.add_argument("--fetches-at-once", type=int, metavar="N", help="pages read at the same time (1-8, default 3)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=research)


def research(args: argparse.Namespace, settings: Settings) -> int:
    if args.edit is not None and not args.plan:
        raise UsageError("--edit goes with --plan RUN: the run whose plan it replaces")
    asked = [name for name in ("question", "plan", "report") if getattr(args, name)]
    if len(asked) != 1:
        raise UsageError(
            'give one of: a question, --plan RUN or --report RUN; e.g. hearth research "What changed in 3.13?"'
        )
    if args.plan:
        return _edit(args, settings) if args.edit is not None else _show_plan(args, settings)
    if args.report:
        return _report(args, settings)
    return _queue(args, settings)


def _queue(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit.store import new_run_id

    limits = {name: getattr(args, name) for name in LIMITS if getattr(args, name) is not None}
    obj: dict[str, Any] = {"id": args.id or new_run_id(), "goal": args.question, "research": limits}
    given = {"model": args.model, "agent_name": args.agent_name, "egress": args.egress}
    given |= {"max_tokens": args.max_tokens, "timeout_s": args.timeout}
    obj.update({key: value for key, value in given.items() if value is not None})
    submitted = queue_request(obj, settings, as_json=args.json)
    for note in submitted.notes:
        print(f"hearth research: {note}", file=sys.stderr)
    if not args.json:
        print(f"its plan will wait for approval: hearth research --plan {submitted.id}", file=sys.stderr)
    return 0


def _readable(settings: Settings, run_id: str) -> Any:
    from hearth.audit.store import AuditStore

    if not settings.audit_path.exists():
        raise NotFound(f"no research run {run_id!r}: nothing has run yet")
    return AuditStore.read_only(settings.audit_path)


def _show_plan(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit import approvals, research, runs
    from hearth.research.plan import TOOL, shown_plans

    with _readable(settings, args.plan) as audit:
        row = runs.row(audit, args.plan)
        if row is None or row.get("kind") != "research":
            raise NotFound(f"no research run {args.plan!r}; see: hearth runs")
        revisions = shown_plans(research.plans(audit, args.plan))
        asked = [a for a in approvals.of_run(audit, args.plan) if a["tool"] == TOOL]
    approval = asked[-1] if asked else None
    if args.json:
        print_json({"run": args.plan, "status": row["status"], "approval": approval, "revisions": revisions})
        return 0
    if not revisions:
        print(f"run {args.plan} ({row['status']}) has no plan yet")
        return 0
    last = revisions[-1]
    print(visible_line(f"run {args.plan} ({row['status']}): plan revision {last['revision']}, by {last['by']}"))
    for n, sub in enumerate(last["plan"]["sub_questions"], 1):
        print(visible_line(f"{n}. {sub['question']}"))
        for query in sub["queries"]:
            print(visible_line(f"   search: {query}"))
    print(_approval_line(approval, args.plan))
    return 0


def _approval_line(approval: dict[str, Any] | None, run_id: str) -> str:
    if approval is None:
        return "not yet asked for approval"
    if approval["status"] == "pending":
        return (
            f"waiting for approval {approval['id']}: hearth approve {approval['id']}   or: hearth deny {approval['id']}\n"
            f"edit it first with: hearth research --plan {run_id} --edit plan.json"
        )
    return visible_line(f"{approval['status']} by {approval['decided_by'] or 'nobody'}")


def _edit(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit import approvals
    from hearth.research.plan import parsed, revise
    from hearth.users.access import login_user

    try:
        text = sys.stdin.read() if args.edit == "-" else Path(args.edit).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {args.edit}: {exc.strerror or exc}") from None
    by = f"cli:{approvals.operator_name()}"
    revision = revise(settings, args.plan, parsed(text), by, args.note, user=login_user(settings))
    if args.json:
        print_json({"run": args.plan, "revision": revision, "by": by})
        return 0
    print(
        f"run {args.plan}'s plan is now revision {revision}, by {by}; approve it to go ahead: hearth research --plan {args.plan}"
    )
    return 0


def _report(args: argparse.Namespace, settings: Settings) -> int:
    import dataclasses

    from hearth.research.report import build, markdown

    with _readable(settings, args.report) as audit:
        built = build(audit, args.report)
    if built is None:
        raise NotFound(f"no research run {args.report!r}; see: hearth runs")
    if args.json:
        print_json(dataclasses.asdict(built))
        return 0
    sys.stdout.write(markdown(built))
    return 0
