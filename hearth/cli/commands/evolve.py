"""`hearth evolve "GOAL"` (propose a change to hearth's own NixOS config) and `hearth proposals`."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from hearth.cli.main import positive
from hearth.errors import NotFound
from hearth.render import print_json, table, visible, visible_line
from hearth.settings import Settings

if TYPE_CHECKING:
    from hearth.evolve import Proposal

EPILOG = """\
The proposal is a branch of the config repository (hearth/proposal-<id>) with a passing
`nix flake check --no-build`; review it with `git diff <base>..<branch>` and apply it yourself
(hearth never runs nixos-rebuild). exit codes: 0 proposed (check passed), 1 no proposal (no
changes, the run did not finish, or the check failed), 2 bad usage."""


def register(sub: argparse._SubParsersAction) -> None:
    evolve = sub.add_parser(
        "evolve",
        help="propose a change to hearth's own NixOS config (never applied)",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    evolve.add_argument("goal", help="what to change, in plain words")
    evolve.add_argument("--repo", type=Path, help="the config checkout (default $HEARTH_CONFIG_REPO)")
    evolve.add_argument("--model", help="Ollama model (default $HEARTH_MODEL)")
    evolve.add_argument(
        "--max-iterations", "--max-iters", dest="max_iters", type=int, default=12, help="iteration cap (default 12)"
    )
    evolve.add_argument("--json", action="store_true", help="print the proposal as JSON")
    evolve.set_defaults(handler=run_evolve)
    listing = sub.add_parser("proposals", help="list self-evolution proposals, or show one with its diff")
    listing.add_argument("id", nargs="?", help="a proposal id (or unique prefix) to show in full")
    listing.add_argument("--limit", type=positive, default=20, help="how many (default 20)")
    listing.add_argument("--json", action="store_true")
    listing.add_argument(
        "--as-ordinary",
        action="store_true",
        help="show a proposal that widens security (mode, egress, credentials, hardening, writable "
        "paths, sandbox) like any other, with its review command; without it, it is held apart",
    )
    listing.set_defaults(handler=list_proposals)


def run_evolve(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.evolve import run_evolve_request
    from hearth.run.goal import GoalRequest

    request = GoalRequest(
        goal=args.goal,
        model=args.model or settings.model,
        agent_name="evolve",
        max_iters=args.max_iters,
        source="evolve",
    )
    proposal = run_evolve_request(request, settings, repo=args.repo)
    if args.json:
        print_json(asdict(proposal))
    else:
        _print_proposal(proposal, with_diff=False, ordinary=False)
    return 0 if proposal.succeeded else 1


def list_proposals(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.evolve import find_proposal, proposals

    if not settings.audit_path.exists():
        raise NotFound(f"no audit database at {settings.audit_path}; nothing has run yet (HEARTH_STATE_DIR)")
    if args.id:
        proposal = find_proposal(settings, args.id)
        if proposal is None:
            raise NotFound(f"no proposal with id {args.id!r} (or the prefix matches several); see: hearth proposals")
        if args.json:
            print_json(asdict(proposal))
        else:
            _print_proposal(proposal, with_diff=True, ordinary=args.as_ordinary)
        return 0
    rows = proposals(settings, limit=args.limit)
    if args.json:
        print_json([asdict(p) for p in rows])
    elif not rows:
        print('no proposals recorded yet (hearth evolve "GOAL" makes one)')
    else:
        shown = [
            {
                **asdict(p),
                "status": p.status if args.as_ordinary or not p.security_flag else f"{p.status}: widens security",
                "check": "pass" if p.check_passed else "fail",
                "flagged": f"SECURITY: {', '.join(security_kinds(p))}" if p.security_flag else "",
            }
            for p in rows
        ]
        table(shown, ["id", "status", "check", "flagged", "branch", "created_at", "goal"], widths={"goal": 40})
    return 0


def security_kinds(proposal: Proposal) -> list[str]:
    """The kinds of widening (sandbox, egress, mode ...), the words before each reason's colon."""
    return list(dict.fromkeys(reason.split(":", 1)[0] for reason in proposal.security_reasons))


def _print_proposal(proposal: Proposal, *, with_diff: bool, ordinary: bool = True) -> None:
    held = proposal.security_flag and not ordinary
    status = f"{proposal.status}: widens security ({', '.join(security_kinds(proposal))})" if held else proposal.status
    print(visible_line(f"proposal {proposal.id}  {status}  (run {proposal.run_status or '-'})"))
    print(visible_line(f"goal: {proposal.goal}"))
    print(
        f"repo {proposal.repo}  branch {proposal.branch}  base {proposal.base_commit[:12]}"
        f"  head {proposal.head_commit[:12] or '-'}"
    )
    if held:
        print("FLAGGED: it touches hearth's own security settings; review before applying:")
        for reason in proposal.security_reasons:
            print(f"  - {reason}")
    if proposal.diffstat:
        print(visible(proposal.diffstat))
    if proposal.check_log:
        print(visible(proposal.check_log))
    if with_diff and proposal.diff:
        print()
        print(visible(proposal.diff.rstrip()))
    if held:
        print(
            "held apart: it widens hearth's security. Read the diff; then "
            f"`hearth proposals {proposal.id} --as-ordinary` shows it as an ordinary proposal with its review command"
        )
    elif proposal.succeeded:
        print(f"review: git -C {proposal.repo} diff {proposal.base_commit[:12]}..{proposal.branch}")
