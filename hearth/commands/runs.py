"""`hearth runs` (the last runs) and `hearth show ID` (one run, step by step)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from hearth.audit.store import AuditStore
from hearth.errors import NotFound
from hearth.render import print_json, table
from hearth.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    runs = sub.add_parser("runs", help="list the most recent runs")
    runs.add_argument("--limit", type=int, default=20, help="how many (default 20)")
    runs.add_argument("--status", help="only runs with this status")
    runs.add_argument("--json", action="store_true")
    runs.set_defaults(handler=list_runs)
    show = sub.add_parser("show", help="replay one run step by step")
    show.add_argument("run_id", help="a run id or a unique prefix of one")
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=show_run)


def open_audit(settings: Settings) -> AuditStore:
    if not settings.audit_path.exists():
        raise NotFound(f"no audit database at {settings.audit_path}; nothing has run yet (HEARTH_STATE_DIR)")
    return AuditStore(settings.audit_path)


def list_runs(args: argparse.Namespace, settings: Settings) -> int:
    where = {"status": args.status} if args.status else {}
    with open_audit(settings) as audit:
        rows = audit.runs(limit=args.limit, **where)
    if args.json:
        print_json(rows)
    elif not rows:
        print("no runs recorded yet")
    else:
        columns = ["id", "status", "label", "agent_name", "model", "source", "iterations", "started_at", "goal"]
        table(rows, columns, widths={"goal": 50, "label": 20})
    return 0


def show_run(args: argparse.Namespace, settings: Settings) -> int:
    with open_audit(settings) as audit:
        run = audit.find_run(args.run_id)
        if run is None:
            raise NotFound(f"no run with id {args.run_id!r} (or the prefix matches several); see: hearth runs")
        steps = audit.steps(run["id"])
        linked = audit.linked(run["id"])
        checkpoints = audit.checkpoints(run["id"])
    if args.json:
        print_json({"run": run, "steps": steps, "checkpoints": checkpoints, "linked": linked})
        return 0
    _print_run(run, linked)
    print_checkpoints(checkpoints, run["workspace"])
    for step in steps:
        print(_step_line(step))
    return 0


def _print_run(run: dict[str, Any], linked: list[dict[str, Any]]) -> None:
    label = f"  label={run['label']!r}" if run.get("label") else ""
    print(
        f"run {run['id']}  {run['status']}  agent={run['agent_name']} model={run['model']} "
        f"mode={run['mode']} source={run['source']}{label}"
    )
    if run.get("model_reason"):
        print(f"model: {model_line(run)}")
    print(f"goal: {run['goal']}")
    print(
        f"started {run['started_at']}  ended {run['ended_at'] or '-'}  iterations {run['iterations'] or 0}  "
        f"tokens {run['tokens_in'] or 0} in / {run['tokens_out'] or 0} out  model time {run['latency_ms'] or 0} ms"
    )
    print(f"workspace {run['workspace'] or '-'}  sandbox {run['sandbox'] or '-'}")
    if run.get("parent_run"):
        print(f"{run.get('link') or 'made'} of run {run['parent_run']}")
    for child in linked:
        print(f"{child.get('link') or 'linked'}: run {child['id']}  {child['status']}")
    if run.get("error"):
        print(f"error: {run['error']}")
    if run.get("summary"):
        print(f"summary: {run['summary']}")
    print()


def model_line(run: dict[str, Any]) -> str:
    """`llama3.2:3b (asked auto; why: fallback)`: the chosen model, what was asked, and why."""
    return f"{run['model']} (asked {run.get('model_requested') or 'auto'}; why: {run['model_reason']})"


def print_checkpoints(rows: list[dict[str, Any]], workspace: str | None) -> None:
    """The run's workspace checkpoints (hearth/run/checkpoints.py) and how to compare them; never a rollback."""
    if not rows:
        return
    print("checkpoints:")
    for row in rows:
        sha = (row["commit_sha"] or "")[:12] or "-"
        extra = "  ".join(
            x for x in (row["tag"] or "", f"{row['files']} files" if row["files"] else "", row["detail"] or "") if x
        )
        print(f"  {row['phase']:<6} {row['status']:<9} {sha:<12}  {extra}".rstrip())
    shas = [r["commit_sha"] for r in rows if r["commit_sha"]]
    if len(set(shas)) > 1 and workspace:
        print(f"  compare: git -C {workspace} diff {shas[0][:12]} {shas[-1][:12]}")
    print()


def _step_line(step: dict[str, Any]) -> str:
    head = f"{step['seq']:>3}. [{step['iteration'] or '-'}] {step['kind']}"
    if step["kind"] == "tool":
        status = "ok" if step["ok"] else "failed"
        args = step["arguments"] or "{}"
        return (
            f"{head} {step['tool']} {args}  verdict={step['verdict']} {status} "
            f"({step['duration_ms']} ms)\n{_indent(step['output'])}"
        )
    if step["kind"] == "model":
        return f"{head} {step['tokens_in']} in / {step['tokens_out']} out ({step['duration_ms']} ms)" + (
            f"\n{_indent(step['output'])}" if step["output"] else ""
        )
    if step["kind"] == "approval":
        return f"{head} {_approval_line(step)}"
    detail = step.get("detail") or step.get("output") or ""
    return f"{head} {detail}"


def _approval_line(step: dict[str, Any]) -> str:
    """`run_command {...} -> approved by ana at ... (asked ..., timeout 300s)`, from the step's JSON detail."""
    try:
        d = json.loads(step.get("detail") or "{}")
    except ValueError:
        d = {}
    by = f" by {d['by']}" if d.get("by") else ""
    at = f" at {d['at']}" if d.get("at") else ""
    note = f": {d['note']}" if d.get("note") else ""
    return (
        f"{step['tool']} {step['arguments'] or '{}'} -> {step['verdict']}{by}{at}{note} "
        f"(asked {d.get('requested_at', '?')} via {d.get('via', '?')}, timeout {d.get('timeout_s', '?')}s)"
    )


def _indent(text: str | None, limit: int = 12) -> str:
    lines = (text or "").splitlines()
    shown = lines[:limit] + ([f"... ({len(lines) - limit} more lines)"] if len(lines) > limit else [])
    return "\n".join(f"      {line}" for line in shown)
