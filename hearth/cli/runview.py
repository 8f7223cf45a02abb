"""One recorded run as a person reads it in a terminal: the header (with what the run was allowed), a
marathon's legs and the judge's reasons, a swarm as a tree, a chain of follow-ups as one conversation,
the workspace checkpoints, the walls (proxy connections, tripwires) and one line per step.

Its own room because it is rendering and nothing else: it takes the audit's rows as dicts and prints
them, so `hearth show`, its `--follow` and `--chain` (hearth/cli/commands/runs.py) share one way of
showing a run, while finding, settling and polling runs stay with the command. Every value a run
recorded is shown escaped (`visible_line`): a line of a run's output cannot pass for hearth's.
"""

from __future__ import annotations

import json
from typing import Any

from hearth.render import ago, duration, local_time, network_words, print_json, visible_line


def print_run(run: dict[str, Any], linked: list[dict[str, Any]], steps: list[dict[str, Any]]) -> None:
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
    if run.get("worker"):
        print(f"worker: {run['worker']} (a box of this hub's fleet)")
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
        f"allowed: {network_words(bool(run.get('network')), egress)}; "
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


def show_chain(chain: list[dict[str, Any]], as_json: bool) -> int:
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
    on = f" on host {run['model_host'].replace(',', ', then ')}" if run.get("model_host") else ""
    return f"{run['model']} (asked {run.get('model_requested') or 'auto'}; why: {run['model_reason']}){on}"


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


def step_line(raw: dict[str, Any], live: bool = False) -> str:
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
        host = _host_of(step)
        where = f" on host {host}" if host else ""
        return f"{head} {step['tokens_in']} in / {step['tokens_out']} out ({step['duration_ms']} ms){where}" + (
            f"\n{_indent(step['output'])}" if step["output"] else ""
        )
    if step["kind"] == "approval":
        return f"{head} {visible_line(_approval_line(raw))}"
    if step["kind"] in ("credential", "redirect"):
        return f"{head} {visible_line(_decision_line(raw))}"
    if step["kind"] == "mcp":
        return f"{head} {visible_line(_mcp_line(raw))}"
    detail = step.get("detail") or visible_line(raw.get("output") or "")
    return f"{head} {detail}"


def _host_of(step: dict[str, Any]) -> str:
    """The Ollama host that answered a model turn, when a run had several (hearth/run/hosts.py)."""
    try:
        data = json.loads(step.get("data") or "{}")
    except (TypeError, ValueError):
        return ""
    return str(data.get("host") or "") if isinstance(data, dict) else ""


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


def _mcp_line(step: dict[str, Any]) -> str:
    """What the run was offered of one MCP server, and what not and why (hearth/mcp/offer.py's line)."""
    try:
        return str(json.loads(step.get("detail") or "{}").get("line") or step.get("detail") or "")
    except (ValueError, AttributeError):
        return step.get("detail") or ""


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
