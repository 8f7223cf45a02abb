"""`hearth enqueue`: write one run request into the queue through the queue-spec model, print its id."""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from datetime import UTC, datetime
from typing import Any

from hearth.audit.requests import run_status_readonly
from hearth.audit.store import new_run_id
from hearth.dispatch.launchers import LaunchError, heal_spawn_units, systemd_booted
from hearth.errors import UsageError
from hearth.queue import Queue
from hearth.request import MAX_BYTES, SOURCES, Request, RequestRefused, build_request, check, is_legacy, load_json
from hearth.settings import Settings

QUEUE_EPILOG = "exit codes: 0 queued (the id is printed), 2 invalid request, duplicate id or unusable queue"
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
    p.add_argument("--agent-name", help="agent profile (default: default)")
    p.add_argument("--mode", choices=("plan", "auto", "bypass"), help="default auto")
    p.add_argument("--tools", "--allowed-tools", dest="tools", metavar="A,B", help="the only tools the run may use")
    p.add_argument("--max-iterations", type=int, help="default 12")
    p.add_argument("--timeout", type=int, metavar="SECONDS", help="default 3600")
    p.add_argument("--credential", action="append", metavar="NAME", help="a credential name; repeat for more")
    p.add_argument("--egress", action="append", metavar="HOST", help="a host the run may reach; repeat for more")
    p.add_argument("--source", choices=SOURCES, help="who is asking (default cli)")
    p.add_argument("--requested-by", help="the person or job asking (default: your user name)")
    p.add_argument("--evolve", action="store_true", help="run the self-evolution flow")
    p.add_argument("--json", action="store_true", help="print {id, path} as JSON")
    p.set_defaults(handler=enqueue)


def enqueue(args: argparse.Namespace, settings: Settings) -> int:
    try:
        request = _stamped(_request_from_args(args))
        check(request)
    except RequestRefused as exc:
        raise UsageError(f"invalid request: {exc}") from None
    queue = Queue(settings.queue_dir)
    _refuse_duplicate(request.id, queue, settings)
    try:
        # Only the queue itself: its subdirectories are the spawner's (a submitter running this
        # must not own claimed/ or rejected/, or hearth could not move files into them).
        queue.root.mkdir(parents=True, exist_ok=True)
        path = queue.enqueue(request)
    except FileExistsError:
        raise UsageError(f"duplicate id: a request {request.id} is already queued") from None
    except OSError as exc:
        raise UsageError(f"cannot write to the queue {queue.root}: {exc.strerror or exc}") from None
    print(json.dumps({"id": request.id, "path": str(path)}) if args.json else request.id, flush=True)
    _heal(settings)
    return 0


def _request_from_args(args: argparse.Namespace) -> Request:
    if args.goal is not None and args.goal_option is not None:
        raise UsageError("give the goal once: as an argument or with --goal")
    args.goal = args.goal if args.goal is not None else args.goal_option
    if args.file is None:
        if not args.goal:
            raise UsageError('no goal given; usage: hearth enqueue "GOAL" [options] or --file FILE')
        return build_request(_flags_object(args), file_id=None).request
    given = [f"--{name.replace('_', '-')}" for name in REQUEST_FLAGS[2:] if getattr(args, name) not in (None, False)]
    if args.goal or given:
        raise UsageError(f"--file is the whole request; drop {(given or ['the goal argument'])[0]}")
    obj = load_json(_read_file(args.file))
    request_id = args.id or obj.get("id") or new_run_id()
    if not is_legacy(obj):
        obj.setdefault("id", request_id)
    return build_request(obj, file_id=request_id if is_legacy(obj) else None).request


def _flags_object(args: argparse.Namespace) -> dict[str, Any]:
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
    }
    obj.update({key: value for key, value in pairs.items() if value is not None})
    return obj


def _split(tools: str | None) -> list[str] | None:
    return None if tools is None else [name.strip() for name in tools.split(",") if name.strip()]


def _read_file(name: str) -> bytes:
    try:
        if name == "-":
            return sys.stdin.buffer.read(MAX_BYTES + 1)
        with open(name, "rb") as handle:
            return handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"cannot read {name}: {exc.strerror or exc}") from None


def _stamped(request: Request) -> Request:
    """Fill when and by whom, if the request does not say."""
    update: dict[str, Any] = {}
    if request.created_at is None:
        update["created_at"] = datetime.now(UTC)
    if not request.requested_by:
        update["requested_by"] = getpass.getuser()
    return request.model_copy(update=update)


def _refuse_duplicate(request_id: str, queue: Queue, settings: Settings) -> None:
    """Fail early on an id already used; the spawner checks again, so what cannot be read is skipped."""
    where = queue.known(request_id) if queue.root.is_dir() else None
    if where:
        raise UsageError(f"duplicate id: a request {request_id} is already in queue/{where}/")
    status = run_status_readonly(settings.audit_path, request_id)
    if status:
        raise UsageError(f"duplicate id: run {request_id} already exists (status {status})")


def _heal(settings: Settings) -> None:
    """On a systemd host, make sure the path unit will see the request (never swallow a launch)."""
    if not (settings.launcher == "systemd" or (settings.launcher == "auto" and systemd_booted())):
        return
    try:
        healing = heal_spawn_units()
    except LaunchError as exc:
        print(f"hearth enqueue: queued, but the launcher could not be checked: {exc}", file=sys.stderr)
        return
    for action in healing.actions:
        print(f"hearth enqueue: launcher healed: {action}", file=sys.stderr)
    if healing.warning:
        print(f"hearth enqueue: warning: {healing.warning}", file=sys.stderr)
