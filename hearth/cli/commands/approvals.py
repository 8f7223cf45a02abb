"""`hearth approvals` (what waits for a decision), `hearth approve ID` and `hearth deny ID`;
`hearth approve ID --always` and `hearth approvals rules` for standing rules (hearth/leash/rules.py).

A headless run (queue, timer, or any run without a terminal) that needs approval writes a pending
approval and waits for one of these, up to its `approval_wait` (HEARTH_APPROVAL_WAIT, default 12 h);
no decision by then is a deny. A queued run suspends meanwhile (status `waiting`, no process) and
goes on once decided: a decision wakes it (hearth/queue/wake.py). An approval covers exactly the
call it shows, nothing else.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from hearth.errors import NotFound
from hearth.render import print_json, table, visible_line
from hearth.settings import Settings

if TYPE_CHECKING:
    from hearth.audit.approvals import Approval

EPILOG = "exit codes: 0 done, 1 the approval was already decided or has expired, 2 no such approval"
ALWAYS_EXIT = (
    "; with --always, 1 also when no standing rule may cover the call (the reason is printed, nothing changes)"
)


def register(sub: argparse._SubParsersAction) -> None:
    listing = sub.add_parser("approvals", help="list approvals waiting for a decision")
    listing.add_argument("--all", action="store_true", help="the latest approvals of any status, not only pending")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=list_approvals)
    _register_rules(listing)
    approve = sub.add_parser("approve", help="let one waiting call run", epilog=EPILOG + ALWAYS_EXIT)
    approve.add_argument("approval_id", help="an approval id (or a unique prefix of 4+ characters)")
    approve.add_argument(
        "--always", action="store_true", help="and make a standing rule for this exact call in its run's profile"
    )
    approve.add_argument("--json", action="store_true")
    approve.set_defaults(handler=approve_one)
    deny = sub.add_parser("deny", help="refuse one waiting call", epilog=EPILOG)
    deny.add_argument("approval_id", help="an approval id (or a unique prefix of 4+ characters)")
    deny.add_argument("--reason", default="", help="told to the model, and recorded")
    deny.add_argument("--json", action="store_true")
    deny.set_defaults(handler=deny_one)


def _row(approval: Approval, now: str) -> dict[str, Any]:
    arguments = json.loads(approval.arguments)
    return {**asdict(approval), "arguments": arguments, "status": approval.status_at(now)}


def list_approvals(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit import approvals
    from hearth.audit.store import AuditStore

    if not settings.audit_path.exists():
        rows: list[dict[str, Any]] = []
    else:
        with AuditStore(settings.audit_path) as audit:
            now = approvals.stamp(approvals.utc_clock())
            rows = [_row(a, now) for a in approvals.listing(audit, everything=args.all)]
    if args.json:
        print_json(rows)
    elif not rows:
        print("no approvals waiting" if not args.all else "no approvals recorded")
    else:
        # the time left only where a decision is still awaited: a decided call did not "expire"
        shown = [
            {
                **r,
                "call": f"{r['tool']} {json.dumps(r['arguments'], ensure_ascii=False)}",
                "expires_at": r["expires_at"] if r["status"] == "pending" else "-",
            }
            for r in rows
        ]
        table(shown, ["id", "status", "run_id", "call", "expires_at", "decided_by"], widths={"call": 70})
    return 0


def approve_one(args: argparse.Namespace, settings: Settings) -> int:
    if args.always:
        return approve_always(args, settings)
    return _decide(args, settings, granted=True)


def deny_one(args: argparse.Namespace, settings: Settings) -> int:
    return _decide(args, settings, granted=False)


def _decide(args: argparse.Namespace, settings: Settings, *, granted: bool) -> int:
    from hearth.audit import approvals
    from hearth.leash.decisions import By, decide
    from hearth.users.access import login_user

    verdict, by = "approve" if granted else "deny", By("cli", approvals.operator_name())
    note = getattr(args, "reason", "")
    approval = decide(settings, args.approval_id, verdict, by, user=login_user(settings), note=note).approval
    if args.json:
        print_json(_row(approval, approvals.stamp(approvals.utc_clock())))
        return 0
    verb = "approved" if granted else "denied"
    print(visible_line(f"{verb} {approval.id}: {approval.tool} {approval.arguments} (run {approval.run_id})"))
    return 0


# -- standing rules ---------------------------------------------------------------------------------
RULES_EPILOG = (
    "A standing rule approves, in one profile, one tool, and for run_command one simple command with "
    "exactly its arguments; never the hard floor, a redirection, a substitution, a chain or a wrapper. "
    "exit codes: 0 done, 1 refused or removed already, 2 no such rule or approval"
)


def _register_rules(listing: argparse.ArgumentParser) -> None:
    actions = listing.add_subparsers(dest="action", metavar="ACTION")
    rules = actions.add_parser("rules", help="standing rules: calls approved in a profile", epilog=RULES_EPILOG)
    rules.add_argument("--all", action="store_true", help="removed rules too")
    rules.add_argument("--json", action="store_true")
    rules.set_defaults(handler=list_rules)
    verbs = rules.add_subparsers(dest="verb", metavar="VERB")
    remove = verbs.add_parser("remove", help="stop a standing rule (its record stays)", epilog=RULES_EPILOG)
    remove.add_argument("rule_id", help="a rule id (or a unique prefix of 4+ characters)")
    remove.add_argument("--json", action="store_true")
    remove.set_defaults(handler=remove_rule)
    _register_rotate(actions)


def _rule_row(rule: Any) -> dict[str, Any]:
    arguments = json.loads(rule.arguments) if rule.arguments is not None else None
    return {**asdict(rule), "arguments": arguments, "covers": rule.covers}


def list_rules(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit.store import AuditStore
    from hearth.leash import rules

    found = []
    if settings.audit_path.exists():
        with AuditStore(settings.audit_path) as audit:
            found = rules.listing(audit, everything=args.all)
    rows = [_rule_row(r) for r in found]
    if args.json:
        print_json(rows)
    elif not rows:
        print("no standing rules (make one with: hearth approve ID --always)")
    else:
        shown = [{**r, "removed": r["removed_at"] or "-"} for r in rows]
        table(shown, ["id", "profile", "covers", "made_by", "made_at", "approval_id", "removed"], widths={"covers": 60})
    return 0


def remove_rule(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit import approvals
    from hearth.audit.store import AuditStore
    from hearth.leash import rules

    if not settings.audit_path.exists():
        raise NotFound(f"no standing rule with id {args.rule_id!r}: nothing has run yet ({settings.audit_path})")
    from hearth.users.access import login_user, require

    require(login_user(settings), "manage")
    with AuditStore(settings.audit_path) as audit:
        rule = rules.remove(audit, args.rule_id, by=f"cli:{approvals.operator_name()}")
    if args.json:
        print_json(_rule_row(rule))
    else:
        print(visible_line(f"removed rule {rule.id}: {rule.covers} in profile {rule.profile}"))
    return 0


def approve_always(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.audit import approvals
    from hearth.leash.decisions import By, decide
    from hearth.users.access import login_user

    by = By("cli", approvals.operator_name())
    decided = decide(settings, args.approval_id, "always", by, user=login_user(settings))
    approval, rule = decided.approval, decided.rule
    assert rule is not None  # an `always` makes its rule or raises
    if args.json:
        print_json({**_row(approval, approvals.stamp(approvals.utc_clock())), "rule": _rule_row(rule)})
        return 0
    print(visible_line(f"approved {approval.id}: {approval.tool} {approval.arguments} (run {approval.run_id})"))
    print(visible_line(f"standing rule {rule.id}: {rule.covers} in profile {rule.profile}"))
    return 0


# -- the alert links' key -------------------------------------------------------------------------
def _register_rotate(actions: argparse._SubParsersAction) -> None:
    rotate = actions.add_parser(
        "rotate-key",
        help="replace the key that signs alerts' Approve / Deny links: every link sent so far stops working",
        epilog="the key is alert-actions.key in the state directory (mode 0600); exit code 0 done",
    )
    rotate.add_argument("--json", action="store_true")
    rotate.set_defaults(handler=rotate_key)


def rotate_key(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.leash import actions

    path = actions.rotate_key(settings.writable_state_dir())
    if args.json:
        print_json({"key": str(path), "rotated": True})
    else:
        print(f"rotated {path}: every approve and deny link sent before now is void")
    return 0
