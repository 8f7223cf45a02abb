"""What is running now (`hearth state`, for the map) and what the audit says over a period
(`hearth report`): runs by status, model and source; tool use and denials; failure reasons;
p50/p95 duration and iterations; tokens; rejections; long work (marathons, swarms and the runs
linked to them: legs, children, syntheses, follow-ups); commands' connections through the run's
proxy (allowed and refused, per host) and tripwires.

It reports and writes nothing: a caller that wants dead runs settled first (so that what is
listed is alive) calls hearth.dispatch.settle.settle_dead_runs before `active_runs`.
"""

from __future__ import annotations

import os
import re
import sqlite3
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import Any

from agent.clock import stamp
from hearth.audit import rollups, steps, walls
from hearth.audit import runs as run_rows
from hearth.audit.store import AuditStore, Rows
from hearth.dispatch.launchers import Launcher, launcher_for
from hearth.dispatch.pause import paused
from hearth.errors import UsageError
from hearth.locks import lock_holder
from hearth.queue.directory import Queue
from hearth.render import local_time
from hearth.run.state import FINAL_STATES, read_states
from hearth.settings import Settings

TOP = 10
NOT_FAILURES = ("rejected", "done", "running", "waiting")  # refused (counted apart), ended well, not ended
# (label, column, value): the runs of long work the report counts (hearth/run/long/holding.py)
LONG_WORK = (
    ("marathons", "kind", "marathon"),
    ("marathon legs", "link", "leg"),
    ("swarms", "kind", "swarm"),
    ("swarm children", "link", "child"),
    ("swarm syntheses", "link", "synthesis"),
    ("follow-ups", "link", "follow-up"),
)


_DENIED = re.compile(r"was not run \((.*)\)\. Do not", re.S)


# -- now ------------------------------------------------------------------------------------------
def active_runs(settings: Settings, launcher: Launcher | None = None) -> dict[str, Any]:
    """Claimed requests and unfinished runs with their live state; what waits in the queue: how
    many (`queued_count`) and the first of their names (`queued`, at most SHOWN however full it is).
    Whether each is alive, and the live state of runs elsewhere, are the launcher's word
    (default: HEARTH_LAUNCHER's)."""
    launcher = launcher or launcher_for(settings)
    queue = Queue(settings.queue_dir)
    states = {str(s.get("run_id")): s for s in [*read_states(settings.runs_state_dir), *launcher.live()]}
    waiting = _waiting(settings)
    active = [
        _claimed(queue, name, states, launcher, waiting) for name in _names(queue.claimed) if name.endswith(".json")
    ]
    seen = {run["id"] for run in active}
    for run_id, state in states.items():
        if run_id not in seen and state.get("state") not in FINAL_STATES:
            active.append({"id": run_id, "queued": False, "alive": launcher.alive(run_id), **_live(state)})
    count, queued = queue.waiting()
    held = paused(settings)
    return {
        "active": sorted(active, key=lambda r: r["id"]),
        "queued": queued,
        "queued_count": count,
        "paused": {**asdict(held), "line": held.line()} if held else None,
    }


def _claimed(
    queue: Queue, name: str, states: dict[str, dict[str, Any]], launcher: Launcher, waiting: set[str]
) -> dict[str, Any]:
    run_id = name.removesuffix(".json")
    alive = launcher.alive(run_id)
    pid = lock_holder(queue.lock_path(run_id)) if alive else None  # shown only; a state's pid wins
    row = {"id": run_id, "queued": True, "alive": alive, "pid": pid}
    # suspended for a person: no process by design, or its process ending (its lock held a moment
    # after its state file went: still waiting, never `starting`); the states were read first
    if run_id in waiting:
        idle = "waiting"
    else:
        idle = "starting" if alive else "claimed"
    return {**row, **_live(states.get(run_id) or {"state": idle})}


def _waiting(settings: Settings) -> set[str]:
    """The runs suspended while their approval waits (status `waiting`), as the audit says."""
    if not settings.audit_path.exists():
        return set()
    try:
        audit = AuditStore.read_only(settings.audit_path)
    except sqlite3.Error:
        return set()
    try:
        return set(run_rows.with_status(audit, "waiting"))
    except sqlite3.Error:
        return set()
    finally:
        audit.close()


def _live(state: dict[str, Any]) -> dict[str, Any]:
    keys = ("state", "detail", "iteration", "tool", "agent_name", "label", "model", "updated_at")
    return {key: state.get(key) for key in keys} | ({"pid": state["pid"]} if state.get("pid") else {})


def _names(directory: Any) -> list[str]:
    try:
        return sorted(os.listdir(directory))
    except FileNotFoundError:
        return []


# -- a period -------------------------------------------------------------------------------------
def parse_since(text: str | None, now: datetime | None = None) -> str | None:
    """DATE, an ISO date-time, or a span back from now (`7d`, `24h`) -> the audit's time format."""
    if not text:
        return None
    now = now or datetime.now(UTC)
    span = re.fullmatch(r"(\d+)([dh])", text.strip())
    if span:
        amount = int(span.group(1))
        moment = now - (timedelta(days=amount) if span.group(2) == "d" else timedelta(hours=amount))
    else:
        try:
            moment = datetime.fromisoformat(text.strip())
        except ValueError:
            raise UsageError(
                f"--since wants a date (2026-01-31), a date-time or a span (7d, 24h), got {text!r}"
            ) from None
        moment = moment.replace(tzinfo=moment.tzinfo or UTC)
    return stamp(moment)


FINISHED_NOT = ("running", "rejected")


def build_report(audit: Rows, since: str | None) -> dict[str, Any]:
    """The report of the period from `since` (None: everything), with its runs and tokens per day."""
    got = rollups.period_rows(audit, since)
    # an audit that does not exist yet (or has no runs table) answers no rows at all: read as zeros
    edge = got["edge"]
    runs = got["runs"] + edge
    kept = [r for r in runs if r["status"] != "rejected"]
    values = got["values"] + [
        {"status": r["status"], "measure": measure, "value": r[measure], "n": r["n"]}
        for r in edge
        for measure in ("duration_ms", "iterations")
        if r[measure] is not None
    ]
    errors = [(r["status"], r["error"], r["n"]) for r in got["errors"]]
    errors += [(r["status"], r["error"], r["n"]) for r in edge if r["status"] not in ("running", "done")]
    return {
        "since": since,
        "first_started_at": got["first"][0]["started_at"] if got["first"] else None,
        "runs": sum(r["n"] for r in runs),
        "by_status": _ranked(runs, "status"),
        "by_model": _ranked(kept, "model"),
        "by_source": _ranked(runs, "source"),
        "by_model_reason": _ranked(kept, "model_reason"),
        "duration_ms": _percentiles(values, "duration_ms"),
        "iterations": _percentiles(values, "iterations"),
        "tokens": {"in": sum(r["tokens_in"] for r in runs), "out": sum(r["tokens_out"] for r in runs)},
        "tools": _tool_use(got["tools"] + got["edge_tools"]),
        "denials": _denials(audit, since),
        "failures": _top_counted(
            ((status, _first_line(error)), n) for status, error, n in errors if status not in NOT_FAILURES
        ),
        # every rejected run, however it was refused: by the queue (which also keeps the file's facts
        # in `rejections`) or when its run was checked (an unknown profile, a bad manifest ...)
        "rejections": _top_counted(((_first_line(error),), n) for status, error, n in errors if status == "rejected"),
        "long_work": _long_work(runs),
        "connections": walls.hosts_since(audit, since or ""),
        "tripwires": _top((r["decoy"], r["action"]) for r in walls.tripwires_since(audit, since or "")),
        "per_day": _per_day(runs),
    }


def _ranked(rows: list[dict[str, Any]], column: str) -> dict[str, int]:
    """{value: runs} of one column ('' as "-"), most first, then by name."""
    counts: dict[str, int] = {}
    for row in rows:
        value = row[column] or "-"
        counts[value] = counts.get(value, 0) + row["n"]
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _percentiles(values: list[dict[str, Any]], measure: str) -> dict[str, Any]:
    """p50 and p95 by nearest rank (a value that really occurred: the ceil(p * n)-th smallest) over
    the finished runs; durations as the rollups keep them, to two significant figures rounded up."""
    counts: dict[int, int] = {}
    for row in values:
        if row["measure"] == measure and row["status"] not in FINISHED_NOT:
            counts[row["value"]] = counts.get(row["value"], 0) + row["n"]
    total = sum(counts.values())
    if not total:
        return {"p50": None, "p95": None, "n": 0}
    found: dict[str, int] = {}
    seen = 0
    for value in sorted(counts):
        seen += counts[value]
        for name, rank in (("p50", (total + 1) // 2), ("p95", (95 * total + 99) // 100)):
            if name not in found and seen >= rank:
                found[name] = value
    return {"p50": found["p50"], "p95": found["p95"], "n": total}


def _tool_use(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Calls per tool: ok, failed (not ok and not denied), denied and approved; most calls first."""
    tools: dict[str, dict[str, Any]] = {}
    for row in rows:
        tool = tools.setdefault(row["tool"], {"tool": row["tool"] or None, "calls": 0, "ok": 0, "failed": 0,
                                              "denied": 0, "approved": 0})  # fmt: skip
        n, verdict = row["calls"], row["verdict"]
        tool["calls"] += n
        tool["ok"] += n if row["ok"] == 1 else 0
        tool["failed"] += n if row["ok"] == 0 and verdict not in ("denied", "") else 0
        tool["denied"] += n if verdict == "denied" else 0
        tool["approved"] += n if verdict == "approved" else 0
    return sorted(tools.values(), key=lambda t: (-t["calls"], t["tool"] or ""))


def _per_day(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs and tokens per day and status, for the command center's charts."""
    days: dict[tuple[str, str], dict[str, Any]] = {}
    for row in runs:
        day = days.setdefault((row["day"], row["status"]), {"day": row["day"], "status": row["status"], "runs": 0,
                                                            "tokens_in": 0, "tokens_out": 0})  # fmt: skip
        for key, column in (("runs", "n"), ("tokens_in", "tokens_in"), ("tokens_out", "tokens_out")):
            day[key] += row[column]
    return sorted(days.values(), key=lambda d: (d["day"], d["status"]))


def _long_work(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """How many marathons, swarms and linked runs, and how many of them ended done."""
    counted = []
    for label, column, value in LONG_WORK:
        mine = [g for g in groups if g[column] == value]
        if mine:
            done = sum(g["n"] for g in mine if g["status"] == "done")
            counted.append({"what": label, "runs": sum(g["n"] for g in mine), "done": done})
    return counted


def _denials(audit: Rows, since: str | None) -> list[dict[str, Any]]:
    return _top((row["tool"], _denial_reason(row["output"])) for row in steps.denied_since(audit, since or ""))


def _denial_reason(output: str | None) -> str:
    found = _DENIED.search(output or "")
    return found.group(1) if found else _first_line(output)


def _first_line(text: str | None, limit: int = 160) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else "-"
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _top(keys: Any) -> list[dict[str, Any]]:
    return _top_counted((key, 1) for key in keys)


def _top_counted(counted: Any) -> list[dict[str, Any]]:
    """The TOP most frequent keys of (key, how many) pairs, a key's pairs added up."""
    counts: dict[str, int] = {}
    for key, n in counted:
        what = " | ".join(map(str, key))
        counts[what] = counts.get(what, 0) + n
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [{"what": what, "count": n} for what, n in ordered[:TOP]]


# -- rendering ------------------------------------------------------------------------------------
Section = tuple[str, list[str], list[dict[str, Any]]]


def sections(report: dict[str, Any]) -> list[Section]:
    """The report as titled tables, rendered as Markdown or as plain text."""
    d, i = report["duration_ms"], report["iterations"]
    counted = [
        (title, [{"value": k, "runs": v} for k, v in report[key].items()])
        for title, key in (
            ("By status", "by_status"),
            ("By model", "by_model"),
            ("Why that model", "by_model_reason"),
            ("By source", "by_source"),
        )
    ]
    return [
        *[(title, ["value", "runs"], rows) for title, rows in counted],
        (
            "Duration and iterations",
            ["measure", "p50", "p95", "n"],
            [{"measure": "duration (ms)", **d}, {"measure": "iterations", **i}],
        ),
        ("Tool use", ["tool", "calls", "ok", "failed", "denied", "approved"], report["tools"]),
        ("Denials", ["what", "count"], report["denials"]),
        ("Failure reasons", ["what", "count"], report["failures"]),
        ("Rejections", ["what", "count"], report["rejections"]),
        ("Long work", ["what", "runs", "done"], report.get("long_work", [])),
        (
            "Connections of commands",
            ["host", "connections", "allowed", "refused", "bytes_up", "bytes_down"],
            report["connections"],
        ),
        ("Tripwires", ["what", "count"], report["tripwires"]),
    ]


def headline(report: dict[str, Any]) -> str:
    """How many runs, over which period (stated even when none was asked for), and the tokens."""
    if report["since"]:
        period = f"since {local_time(report['since'])}"
    elif report.get("first_started_at"):
        period = f"all recorded, since the first on {local_time(report['first_started_at'])} (--since 7d narrows it)"
    else:
        period = "all recorded"
    tokens = report["tokens"]
    return f"{report['runs']} runs, {period}; tokens {tokens['in']} in / {tokens['out']} out"


def markdown(report: dict[str, Any]) -> str:
    """GitHub-flavoured Markdown, for a wiki page or a ticket."""
    out = ["# hearth report", "", headline(report) + ".", ""]
    for title, columns, rows in sections(report):
        out += [f"## {title}", ""]
        if not rows:
            out += ["none", ""]
            continue
        out += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        out += ["| " + " | ".join(_md_cell(row.get(c)) for c in columns) + " |" for row in rows]
        out.append("")
    return "\n".join(out)


def _md_cell(value: Any) -> str:
    return "-" if value is None else str(value).replace("|", "\\|").replace("\n", " ")
