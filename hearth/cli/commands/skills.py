"""`hearth skills`: the skills on the box and their states, a skill's check, a skill learned from a run."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from hearth.errors import UsageError
from hearth.render import print_json, table, visible_line
from hearth.settings import Settings

EPILOG = (
    "A skill is $HEARTH_CONFIG_DIR/skills/NAME/SKILL.md, or a profile's own in agents/PROFILE/skills/ "
    "(docs/skills.md). It is offered to runs only while its last check passed on its present content. "
    "exit codes: 0 ok (check --wait: passed), 1 check --wait: failed or still running, "
    "2 bad input, a broken SKILL.md, or no such skill, suite, run or proposal"
)
MAX_REPEAT = 20
LISTED = ["key", "state", "suite", "with", "without", "last_checked", "description"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("skills", help="skills: their states, their checks, a skill learned from a run", epilog=EPILOG)
    p.add_argument("--json", action="store_true", help="every skill and its state as JSON")
    p.set_defaults(handler=list_skills)
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    listing = actions.add_parser("list", help="every skill, its state and its last check's pass rates")
    listing.add_argument("--json", action="store_true", help="as JSON")
    listing.set_defaults(handler=list_skills)
    show = actions.add_parser("show", help="one skill and its checks")
    show.add_argument("skill", help="NAME, or PROFILE/NAME for a profile's own")
    show.add_argument("--json", action="store_true", help="as JSON")
    show.set_defaults(handler=show_skill)
    check = actions.add_parser("check", help="run the skill's eval suite with and without it; record both rates")
    check.add_argument("skill", help="NAME, or PROFILE/NAME for a profile's own")
    check.add_argument("--model", action="append", default=[], help="a model to check it with (repeatable)")
    check.add_argument("--repeat", type=int, default=1, help=f"runs per case (1-{MAX_REPEAT})")
    check.add_argument("--wait", type=float, default=0, metavar="SECONDS", help="wait this long for the verdict")
    check.add_argument("--json", action="store_true", help="the check as JSON")
    check.set_defaults(handler=check_skill)
    propose = actions.add_parser("propose", help="draft a skill from a run that succeeded, as a proposal")
    propose.add_argument("run", help="the recorded run")
    propose.add_argument("--name", default="", help="the skill's name (default: from the run's label or goal)")
    propose.add_argument("--suite", default="", help="the eval suite its SKILL.md names")
    propose.add_argument("--json", action="store_true", help="the proposal as JSON")
    propose.set_defaults(handler=propose_skill)
    accept = actions.add_parser("accept", help="accept a skill proposal: its SKILL.md lands in skills/")
    accept.add_argument("proposal", help="the proposal's id (or a unique prefix)")
    accept.add_argument("--reason", default="", help="why, for the audit")
    accept.add_argument("--json", action="store_true", help="the accepted skill's name and path as JSON")
    accept.set_defaults(handler=accept_skill)


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def list_skills(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.skills.overview import overview

    found = overview(settings)
    if args.json:
        print_json(found)
        return 0
    for problem in found["problems"]:
        print(visible_line(f"hearth skills: {problem}; not offered"), file=sys.stderr)
    if not found["skills"]:
        print(f"no skills yet (a skill is {settings.config_dir / 'skills'}/NAME/SKILL.md; docs/skills.md)")
        return 0
    table([_listed(r) for r in found["skills"]], LISTED)
    for row in found["skills"]:
        if row["shadows"]:
            print(visible_line(f"{row['key']} shadows the box's {row['name']} for profile {row['scope']}"))
    return 0


def _listed(row: dict[str, Any]) -> dict[str, Any]:
    state = f"{row['state']} (checking)" if row["checking"] else row["state"]
    return {**row, "state": state, "with": _share(row["rate_with"]), "without": _share(row["rate_without"])}


def show_skill(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.skills.overview import skill_detail

    found = skill_detail(settings, args.skill)
    if args.json:
        print_json(found)
        return 0
    print(
        visible_line(f"{found['key']}  {_listed(found)['state']}  suite {found['suite'] or '-'}  {found['directory']}")
    )
    print(visible_line(found["description"]))
    if found["detail"]:
        print(visible_line(found["detail"]))
    checks = [{**c, "with": _share(c["rate_with"]), "without": _share(c["rate_without"])} for c in found["checks"]]
    if checks:
        table(checks, ["id", "status", "with", "without", "eval_with", "eval_without", "started_at", "detail"])
    return 0


def check_skill(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit.approvals import operator_name
    from hearth.dispatch.launchers import heal
    from hearth.skills.check import start_check, wait
    from hearth.users.access import login_user, require

    if not 1 <= args.repeat <= MAX_REPEAT:
        raise UsageError(f"--repeat {args.repeat} is out of range; use 1 to {MAX_REPEAT}")
    require(login_user(settings), "manage")
    row, notes = start_check(
        settings, args.skill, by=f"cli:{operator_name()}", models=args.model, repeat=args.repeat, heal=heal
    )
    for note in notes:
        print(f"hearth skills: {note}", file=sys.stderr)
    if args.wait > 0:
        row = wait(settings, row["id"], args.wait) or row
    if args.json:
        print_json(row)
    else:
        print(row["id"])
        print(
            f"queued eval {row['eval_with']} (with it) and {row['eval_without']} (without); "
            f"`hearth skills show {args.skill}` shows the verdict once both have run",
            file=sys.stderr,
        )
    return 0 if args.wait <= 0 or row["status"] == "passed" else 1


def propose_skill(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.eval.suite import load_suite
    from hearth.skills.learn import propose
    from hearth.users.access import login_user, require

    require(login_user(settings), "manage")
    if args.suite:
        load_suite(settings.config_dir, args.suite)  # a suite that exists, or NotFound naming those that do
    row = propose(settings, args.run, name=args.name, suite=args.suite)
    if args.json:
        print_json(row)
        return 0
    print(row["id"])
    print(
        visible_line(f"drafted {row['diffstat'].strip()} from run {args.run}; review it: hearth proposals {row['id']}")
    )
    print(visible_line(f"accept it: hearth skills accept {row['id']} (or on the command center's proposal page)"))
    return 0


def accept_skill(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit.approvals import operator_name
    from hearth.skills.learn import accept
    from hearth.users.access import login_user, require

    require(login_user(settings), "manage")
    path = accept(settings, args.proposal, by=f"cli:{operator_name()}", reason=args.reason)
    name = path.parent.name
    if args.json:
        print_json({"skill": name, "path": str(path), "offered": False, "check": f"hearth skills check {name}"})
        return 0
    print(visible_line(f"accepted: {path}; offered once `hearth skills check {name}` passes"))
    return 0
