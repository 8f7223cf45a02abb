"""`hearth runs` (the last runs, filtered, or followed) and `hearth show [ID]` (one run, step by step;
a marathon with its legs and the judge's reasons, a swarm as a tree; `--chain`: a chain of follow-ups
as one conversation).

Both settle dead runs first (dispatch/settle.py): what they show as running is running.
`--follow` polls the audit (every FOLLOW_EVERY_S) like `journalctl -f`: `hearth show --follow`
until the run ends, with the run's exit code; `hearth runs --follow` until Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import time
from typing import Any

from hearth.audit.store import AuditStore
from hearth.cli import positive
from hearth.dispatch.settle import settle_dead
from hearth.errors import NotFound
from hearth.render import ago, duration, json_line, local_time, print_json, table, visible_line
from hearth.report import parse_since
from hearth.settings import Settings

FOLLOW_EVERY_S = 0.5
SHOW_EPILOG = (
    "exit codes: 0 shown, 2 no such run (or a prefix of several: they are listed); with --follow, "
    "the run's own exit code once it ends (0 done, 1 failed, 2 rejected, 3 iteration limit, "
    "4 model unavailable, 5 denied, 6 tripped, 7 budget exceeded, 130 interrupted)"
)


def register(sub: argparse._SubParsersAction) -> None:
    runs = sub.add_parser("runs", help="list the most recent runs (filter, search, follow)")
    runs.add_argument("--limit", type=positive, default=20, help="how many (default 20)")
    runs.add_argument("--status", help="only runs with this status (running, done, failed, interrupted ...)")
    runs.add_argument("--agent-name", "--agent", dest="agent_name", metavar="NAME", help="only this agent's runs")
    runs.add_argument("--model", help="only runs on this model")
    runs.add_argument("--source", help="only runs from this source (cli, queue, command-center, timer ...)")
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


def open_audit(settings: Settings) -> AuditStore:
    """The audit, with dead runs settled; NotFound when nothing has run yet."""
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
    where = {k: getattr(args, k) for k in ("status", "agent_name", "model", "source") if getattr(args, k)}
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
        "model": run["model"],
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
    candidates = audit.ids_with_prefix("runs", prefix)
    if candidates:
        more = "" if len(candidates) < 10 else ", ..."
        raise NotFound(
            f"run id prefix {prefix!r} matches several runs: {', '.join(candidates)}{more}; give more of the id"
        )
    raise NotFound(f"no run with id {prefix!r}; see: hearth runs")


def show_run(args: argparse.Namespace, settings: Settings) -> int:
    with open_audit(settings) as audit:
        run = find_run(audit, args.run_id)
        if args.chain:
            return _show_chain(follow_up_chain(audit, run), args.json)
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
    _print_run(run, linked, steps)
    print_checkpoints(checkpoints, run["workspace"])
    print_walls(connections, tripwires)
    for step in steps:
        print(_step_line(step))
    return 0


def _follow_run(
    audit: AuditStore, settings: Settings, run: dict[str, Any], steps: list[dict[str, Any]], json_lines: bool
) -> int:
    """Each step once it is complete (a tool also when it starts), until the run's status is final."""
    from hearth.run.exits import exit_code  # the run's exit codes, only when following one

    if not json_lines:
        print(visible_line(f"run {run['id']}  {run['status']}  agent={run['agent_name']} model={run['model']}"))
        print(visible_line(f"goal: {run['goal']}"), flush=True)
    shown: dict[int, str | None] = {}
    while True:
        for step in steps:
            state = step.get("verdict")
            if shown.get(step["seq"], "-") == state:
                continue
            shown[step["seq"]] = state
            live = run["status"] == "running"
            print(json_line({"event": "step", **step}) if json_lines else _step_line(step, live), flush=True)
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


def _print_run(run: dict[str, Any], linked: list[dict[str, Any]], steps: list[dict[str, Any]]) -> None:
    """The run's header; every value is shown escaped (the audit keeps it as it was)."""
    run = {k: visible_line(v) if isinstance(v, str) else v for k, v in run.items()}
    kind = f"{run['kind']} " if run.get("kind") else ""
    label = f"  label={run['label']!r}" if run.get("label") else ""
    print(
        f"{kind}run {run['id']}  {run['status']}  agent={run['agent_name']} model={run['model']} "
        f"mode={run['mode']} source={run['source']}{label}"
    )
    if run.get("model_reason"):
        print(f"model: {model_line(run)}")
    print(f"goal: {run['goal']}")
    took = f"  took {duration(run['duration_ms'])}" if run.get("duration_ms") is not None else ""
    print(
        f"started {local_time(run['started_at'])} ({ago(run['started_at'])})  "
        f"ended {local_time(run['ended_at']) if run['ended_at'] else '-'}{took}  iterations {run['iterations'] or 0}  "
        f"tokens {run['tokens_in'] or 0} in / {run['tokens_out'] or 0} out  model time {duration(run['latency_ms'] or 0)}"
    )
    print(f"workspace {run['workspace'] or '-'}  sandbox {run['sandbox'] or '-'}")
    allowed = _allowed_line(run)
    if allowed:
        print(allowed)
    if run.get("parent_run"):
        print(f"{run.get('link') or 'made'} of run {run['parent_run']}")
    if run.get("kind") == "marathon":
        _print_legs(linked, steps)
    elif run.get("kind") == "swarm":
        _print_tree(run, linked)
    else:
        for child in linked:
            print(visible_line(f"{child.get('link') or 'linked'}: run {child['id']}  {child['status']}"))
    if run.get("error"):
        print(f"error: {run['error']}")
    if run.get("summary"):
        print(f"summary: {run['summary']}")
    print()


def _allowed_line(run: dict[str, Any]) -> str:
    """What the run was allowed (its row's allowances), in one line; empty for runs recorded before them."""
    if not run.get("hearth_version"):
        return ""
    egress = json.loads(run.get("egress") or "[]")
    creds = json.loads(run.get("credentials") or "{}")
    tools = json.loads(run["allowed_tools"]) if run.get("allowed_tools") else None
    timeout = f"{run['timeout_s']:g} s" if run.get("timeout_s") else "no time limit"
    bound = "; ".join(f"{name} -> {', '.join(hosts) or 'no host'}" for name, hosts in creds.items())
    return visible_line(
        f"allowed: network {'yes' if run.get('network') else 'no'}; "
        f"egress {', '.join(egress) or 'any public host'}; "
        f"credentials {bound or 'none'}; "
        f"tools {', '.join(tools) if tools is not None else 'all'}; "
        f"limits {run.get('max_iterations') or '-'} iterations, {timeout}, {run.get('num_ctx') or '-'} tokens of context; "
        f"hearth {run['hearth_version']}"
    )


def _print_legs(linked: list[dict[str, Any]], steps: list[dict[str, Any]]) -> None:
    """Each leg with its outcome and what the judge (and the deliverable check) said after it."""
    said = {}
    for step in steps:
        if step["kind"] == "judge":
            data = json.loads(step.get("data") or "{}")
            said[data.get("run")] = data
    print(f"legs ({len(linked)}):")
    for leg in linked:
        data = said.get(leg["id"], {})
        verdict = data.get("judge") or {}
        reason = verdict.get("reason") or data.get("unusable") or "(no judgement: the marathon ended here)"
        decided = "" if not data else ("done: " if data.get("done") else "not done: ")
        changed = "" if not data else ("" if data.get("changed") else " (changed nothing)")
        check = f"\n      check: {data['check']['detail']}" if data.get("check") else ""
        print(f"  {leg['id']}  {leg['status']}{changed}\n      judge: {decided}{reason}{check}")


def _print_tree(run: dict[str, Any], linked: list[dict[str, Any]]) -> None:
    """The swarm as a tree: its children (each a sub-goal) and the synthesis that merged them."""
    print(f"swarm {run['id']}  {run['status']}")
    for i, child in enumerate(linked):
        branch = "└─" if i == len(linked) - 1 else "├─"
        goal = " ".join((child["goal"] or "").split())[:70]
        print(f"{branch} {child.get('link') or 'linked'} {child['id']}  {child['status']}  {goal}")


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


def _show_chain(chain: list[dict[str, Any]], as_json: bool) -> int:
    if as_json:
        print_json({"chain": chain})
        return 0
    print(f"conversation of {len(chain)} run{'s' if len(chain) > 1 else ''}, oldest first\n")
    for number, run in enumerate(chain, 1):
        print(f"[{number}] run {run['id']}  {run['status']}  {run['started_at']}")
        print(_indent(f"person: {run['goal']}"))
        print(_indent(f"agent:  {run.get('summary') or run.get('error') or '(no answer recorded)'}") + "\n")
    return 0


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
        print(visible_line(f"  {row['phase']:<6} {row['status']:<9} {sha:<12}  {extra}".rstrip()))
    shas = [r["commit_sha"] for r in rows if r["commit_sha"]]
    git_dir = next((r["git_dir"] for r in rows if r.get("git_dir")), None)
    if len(set(shas)) > 1 and workspace:
        where = f"--git-dir={git_dir} --work-tree={workspace}" if git_dir else f"-C {workspace}"
        print(f"  compare: git {where} diff {shas[0][:12]} {shas[-1][:12]}")
    print()


def print_walls(connections: list[dict[str, Any]], tripwires: list[dict[str, Any]]) -> None:
    """What the run's commands reached through its proxy, and what touched its decoys (hearth/run/walls.py)."""
    if connections:
        print("connections through the proxy:")
        for c in connections:
            verdict = "allowed" if c["allowed"] else "refused"
            reason = f"  {c['reason']}" if c["reason"] else ""
            print(
                f"  {c['method']:<7} {c['host']}:{c['port']}  {verdict}  {c['bytes_up']} up / {c['bytes_down']} down{reason}"
            )
        print()
    if tripwires:
        print("tripwires:")
        for t in tripwires:
            print(f"  {t['decoy']}: {t['how']} ({t['action']})")
        print()


def _step_line(raw: dict[str, Any], live: bool = False) -> str:
    """One step for a person; `live`: its run is still going (a started tool is running, not cut off)."""
    step = {k: visible_line(v) if isinstance(v, str) and k != "output" else v for k, v in raw.items()}
    head = f"{step['seq']:>3}. [{step['iteration'] or '-'}] {step['kind']}"
    if step["kind"] == "tool":
        args = step["arguments"] or "{}"
        written = f" (written {step['called_as']})" if step.get("called_as") else ""
        if step["verdict"] == "started" and live:
            return f"{head} {step['tool']}{written} {args}  running..."
        if step["verdict"] == "started":  # recorded before it ran, never completed
            return f"{head} {step['tool']}{written} {args}  started, never completed (the run ended while it ran)"
        status = "ok" if step["ok"] else "failed"
        return (
            f"{head} {step['tool']}{written} {args}  verdict={step['verdict']} {status} "
            f"({step['duration_ms']} ms)\n{_indent(step['output'])}"
        )
    if step["kind"] == "model":
        return f"{head} {step['tokens_in']} in / {step['tokens_out']} out ({step['duration_ms']} ms)" + (
            f"\n{_indent(step['output'])}" if step["output"] else ""
        )
    if step["kind"] == "approval":
        return f"{head} {visible_line(_approval_line(raw))}"
    if step["kind"] in ("credential", "redirect"):
        return f"{head} {visible_line(_decision_line(raw))}"
    detail = step.get("detail") or visible_line(raw.get("output") or "")
    return f"{head} {detail}"


def _decision_line(step: dict[str, Any]) -> str:
    """A decision made inside a tool: `http_request: credential TOKEN -> api.github.com used`."""
    try:
        d = json.loads(step.get("detail") or "{}")
    except ValueError:
        return step.get("detail") or ""
    where = f"{step['tool']}: " if step.get("tool") else ""
    if step["kind"] == "credential":
        reason = f" ({d['reason']})" if d.get("reason") else ""
        return f"{where}credential {d.get('name', '?')} -> {d.get('host', '?')} {d.get('verdict', '?')}{reason}"
    return (
        f"{where}header {d.get('header', '?')} dropped on the redirect {d.get('source', '?')} -> {d.get('target', '?')}"
    )


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
    """A block indented under its step, each line escaped: a line of output cannot pass for hearth's."""
    lines = [visible_line(line) for line in (text or "").rstrip("\n").split("\n")] if text else []
    shown = lines[:limit] + ([f"... ({len(lines) - limit} more lines)"] if len(lines) > limit else [])
    return "\n".join(f"      {line}" for line in shown)
