"""`hearth enqueue`: write one run request into the queue through the queue-spec model, print its id."""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from typing import TYPE_CHECKING, Any

from hearth.dispatch.launchers import heal
from hearth.errors import UsageError
from hearth.queue.sources import SOURCES
from hearth.settings import Settings, tool_names

if TYPE_CHECKING:
    from hearth.queue.request import Request

QUEUE_EPILOG = "exit codes: 0 queued (the id is printed), 2 invalid request, duplicate id or unusable queue"
# a request's fields as this command's flags: a refusal names the flag that was given
FLAG_NAMES = {
    "id": "--id",
    "goal": "the goal",
    "model": "--model",
    "agent_name": "--agent-name",
    "mode": "--mode",
    "max_iterations": "--max-iterations",
    "timeout_s": "--timeout",
    "source": "--source",
    "requested_by": "--requested-by",
    "credentials": "--credential",
    "egress": "--egress",
    "allowed_tools": "--allowed-tools",
    "evolve": "--evolve",
    "marathon": "--marathon",
    "swarm": "--swarm",
}
REQUEST_FLAGS = (
    "goal",
    "goal_option",
    "model",
    "agent_name",
    "mode",
    "tools",
    "max_iterations",
    "timeout",
    "credential",
    "egress",
    "source",
    "requested_by",
    "evolve",
    "marathon",
    "swarm",
)


def register(sub: argparse._SubParsersAction) -> None:
    _register_enqueue(sub)


def _register_enqueue(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("enqueue", help="queue a run request and print its id", epilog=QUEUE_EPILOG)
    p.add_argument("goal", nargs="?", help="what the agent should do")
    p.add_argument("--goal", dest="goal_option", metavar="GOAL", help="the goal, as an option (for scripts)")
    p.add_argument("--file", metavar="FILE", help="the request as JSON (either shape, see queue-spec/); - reads stdin")
    p.add_argument("--id", help="the request id (default: a new one)")
    p.add_argument("--model", help="Ollama model (default $HEARTH_MODEL)")
    p.add_argument(
        "--agent-name", "--agent", dest="agent_name", metavar="NAME", help="agent profile (default: default)"
    )
    p.add_argument("--mode", choices=("plan", "auto", "bypass"), help="default auto")
    p.add_argument("--allowed-tools", "--tools", dest="tools", metavar="A,B", help="the only tools the run may use")
    p.add_argument("--max-iterations", "--max-iters", dest="max_iterations", type=int, metavar="N", help="default 12")
    p.add_argument("--timeout", type=int, metavar="SECONDS", help="default 3600")
    p.add_argument("--credential", action="append", metavar="NAME", help="a credential name; repeat for more")
    p.add_argument("--egress", action="append", metavar="HOST", help="a host the run may reach; repeat for more")
    p.add_argument("--source", choices=SOURCES, help="who is asking (default cli)")
    p.add_argument("--requested-by", help="the person or job asking (default: your user name)")
    p.add_argument("--evolve", action="store_true", help="run the self-evolution flow")
    p.add_argument("--marathon", type=int, metavar="N", help="run in legs (at most N, 1-20) until a judge says done")
    p.add_argument("--swarm", type=int, metavar="N", help="split into at most N sub-goals (1-16) run side by side")
    p.add_argument("--json", action="store_true", help="print {id, path} as JSON")
    p.set_defaults(handler=enqueue)


def enqueue(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.queue.intake import RequestRefused
    from hearth.roles.admit import check_on
    from hearth.run.profiles import load_profile
    from hearth.users.access import login_user
    from hearth.users.launch import submit_as

    if args.tools is not None:
        tool_names(args.tools)  # refused now, the way hearth-loop refuses it, not at spawn
    if args.agent_name:  # an unknown profile, or a role switched off: refused now, not at spawn
        check_on(load_profile(settings.config_dir, args.agent_name), settings)
    try:
        request = _request_from_args(args)
    except RequestRefused as exc:
        raise UsageError(f"invalid request: {exc}") from None
    submitted = submit_as(request, settings, login_user(settings), requested_by=getpass.getuser(), heal=heal)
    print(json.dumps({"id": submitted.id, "path": str(submitted.path)}) if args.json else submitted.id, flush=True)
    for note in [*submitted.notes, *heads_up(request, settings)]:
        print(f"hearth enqueue: {note}", file=sys.stderr)
    return 0


def heads_up(request: Request, settings: Settings) -> list[str]:
    """What the queued request will meet, said now rather than found later in the audit: a pause, a
    spent daily budget, a model the server does not have (each a line; none stops the queueing)."""
    from hearth.dispatch.pause import paused

    found = []
    held = paused(settings)
    if held is not None:
        found.append(f"hearth is {held.line()}: the request waits in the queue until `hearth resume`")
    spent = _budget(request, settings)
    if spent:
        found.append(f"{spent}; the request will be refused when it is picked up, unless the budget resets first")
    missing = _model_missing(request.model, settings)
    if missing:
        found.append(f"{missing}; the run will end model_unavailable unless the model is pulled first")
    return found


def _budget(request: Request, settings: Settings) -> str | None:
    """A spent daily budget's line; nothing when the audit cannot be read here (a submitter who may
    only write the queue: the spawner checks the budget anyway)."""
    import sqlite3

    from hearth.audit.store import AuditStore
    from hearth.leash.budget import budget_spent
    from hearth.run.profiles import agent_for_label

    if not settings.audit_path.exists():
        return None
    agent = agent_for_label(settings.config_dir, request.agent_name, request.label)
    try:
        with AuditStore.read_only(settings.audit_path) as audit:
            return budget_spent(settings, audit, agent)
    except (sqlite3.Error, OSError):
        return None


def _model_missing(model: str | None, settings: Settings) -> str | None:
    """The router's line for a model the request names that the server has not pulled (asked briefly;
    a server that does not answer now says nothing: the run asks again)."""
    from hearth.run import hosts
    from hearth.run.router import is_auto, not_pulled, resolve_tag

    if is_auto(model):
        return None
    pulled = hosts.pulled(settings, 1.5)
    if pulled is None or resolve_tag(str(model), pulled):
        return None
    return not_pulled(str(model), pulled)


def _request_from_args(args: argparse.Namespace) -> Request:
    from hearth.audit.store import new_run_id
    from hearth.queue.intake import build_request, is_legacy, load_json

    if args.goal is not None and args.goal_option is not None:
        raise UsageError("give the goal once: as an argument or with --goal")
    args.goal = args.goal if args.goal is not None else args.goal_option
    if args.file is None:
        if not args.goal:
            raise UsageError('no goal given; usage: hearth enqueue "GOAL" [options] or --file FILE')
        return build_request(_flags_object(args), file_id=None, names=FLAG_NAMES).request
    given = [f"--{name.replace('_', '-')}" for name in REQUEST_FLAGS[2:] if getattr(args, name) not in (None, False)]
    if args.goal or given:
        raise UsageError(f"--file is the whole request; drop {(given or ['the goal argument'])[0]}")
    obj = load_json(_read_file(args.file))
    request_id = args.id or obj.get("id") or new_run_id()
    if not is_legacy(obj):
        obj.setdefault("id", request_id)
    return build_request(obj, file_id=request_id if is_legacy(obj) else None).request


def _flags_object(args: argparse.Namespace) -> dict[str, Any]:
    from hearth.audit.store import new_run_id

    obj: dict[str, Any] = {"id": args.id or new_run_id(), "goal": args.goal}
    pairs = {
        "model": args.model,
        "agent_name": args.agent_name,
        "mode": args.mode,
        "max_iterations": args.max_iterations,
        "timeout_s": args.timeout,
        "source": args.source,
        "requested_by": args.requested_by,
        "credentials": args.credential,
        "egress": args.egress,
        "allowed_tools": _split(args.tools),
        "evolve": args.evolve or None,
        "marathon": None if args.marathon is None else {"max_legs": args.marathon},
        "swarm": None if args.swarm is None else {"max_workers": args.swarm},
    }
    obj.update({key: value for key, value in pairs.items() if value is not None})
    return obj


def _split(tools: str | None) -> list[str] | None:
    return None if tools is None else [name.strip() for name in tools.split(",") if name.strip()]


def _read_file(name: str) -> bytes:
    from hearth.queue.intake import MAX_BYTES

    try:
        if name == "-":
            return sys.stdin.buffer.read(MAX_BYTES + 1)
        with open(name, "rb") as handle:
            return handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"cannot read {name}: {exc.strerror or exc}") from None
