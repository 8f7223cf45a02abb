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
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from agent.clock import stamp
from hearth.audit.store import AuditStore
from hearth.dispatch.launchers import Launcher, launcher_for
from hearth.dispatch.pause import paused
from hearth.errors import UsageError
from hearth.locks import lock_holder
from hearth.queue.directory import Queue
from hearth.render import local_time
from hearth.run.state import FINAL_STATES, read_states
from hearth.settings import Settings

TOP = 10
# (label, column, value): the runs of long work the report counts (hearth/run/long/holding.py)
LONG_WORK = (
    ("marathons", "kind", "marathon"),
    ("marathon legs", "link", "leg"),
    ("swarms", "kind", "swarm"),
    ("swarm children", "link", "child"),
    ("swarm syntheses", "link", "synthesis"),
    ("follow-ups", "link", "follow-up"),
)


class Rows(Protocol):
    """What the report reads through: the AuditStore, or the command center's read-only connection."""

    def rows(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ...) -> list[dict[str, Any]]: ...


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
    idle = "waiting" if run_id in waiting else "claimed"  # suspended for a person: no process, by design
    return {**row, **_live(states.get(run_id) or {"state": "starting" if alive else idle})}


def _waiting(settings: Settings) -> set[str]:
    """The runs suspended while their approval waits (status `waiting`), as the audit says."""
    if not settings.audit_path.exists():
        return set()
    try:
        audit = AuditStore.read_only(settings.audit_path)
    except sqlite3.Error:
        return set()
    try:
        return {str(row["id"]) for row in audit.rows("select id from runs where status = 'waiting'")}
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


# The runs of a period, aggregated by SQLite: the report reads a few rows, never every run.
PERIOD = "from runs where started_at >= :since"
FINISHED = "status not in ('running', 'rejected')"
# nearest rank (a value that really occurred): the ceil(p * n)-th smallest, in integer arithmetic
PERCENTILES = """select max(case when rank = (n + 1) / 2 then value end) as p50,
                        max(case when rank = (95 * n + 99) / 100 then value end) as p95, coalesce(max(n), 0) as n
                 from (select {column} as value, row_number() over (order by {column}) as rank, count(*) over () as n
                       {period} and {finished} and {column} is not null)"""
RUN_SQL = {
    "totals": f"""select count(*) as runs, min(nullif(started_at, '')) as first_started_at,
                         coalesce(sum(tokens_in), 0) as tokens_in, coalesce(sum(tokens_out), 0) as tokens_out {PERIOD}""",
    "by_status": f"select status as value, count(*) as n {PERIOD} group by status",
    "by_model": f"select coalesce(nullif(model, ''), '-') as value, count(*) as n {PERIOD} and status != 'rejected' group by value",
    "by_source": f"select coalesce(nullif(source, ''), '-') as value, count(*) as n {PERIOD} group by value",
    "by_model_reason": f"""select coalesce(nullif(model_reason, ''), '-') as value, count(*) as n {PERIOD}
                            and status != 'rejected' group by value""",
    "duration_ms": PERCENTILES.format(column="duration_ms", period=PERIOD, finished=FINISHED),
    "iterations": PERCENTILES.format(column="iterations", period=PERIOD, finished=FINISHED),
    "failures": f"select status, error {PERIOD} and {FINISHED} and status != 'done'",
    "rejections": f"select error {PERIOD} and status = 'rejected'",
    "long_work": f"""select kind, link, count(*) as n, sum(status = 'done') as done {PERIOD}
                     and (coalesce(kind, '') != '' or coalesce(link, '') != '') group by kind, link""",
}


def report_statements(since: str | None) -> list[tuple[str, dict[str, str]]]:
    """Every statement the report runs over the runs table, with its parameters (bench/web.py times them bare)."""
    return [(sql, {"since": since or ""}) for sql in RUN_SQL.values()]


def build_report(audit: Rows, since: str | None) -> dict[str, Any]:
    got = {name: audit.rows(sql, {"since": since or ""}) for name, sql in RUN_SQL.items()}
    # an audit that does not exist yet (or has no runs table) answers no rows at all: read as zeros
    totals = (got["totals"] or [{"runs": 0, "first_started_at": None, "tokens_in": 0, "tokens_out": 0}])[0]
    nothing = {"p50": None, "p95": None, "n": 0}
    return {
        "since": since,
        "first_started_at": totals["first_started_at"],
        "runs": totals["runs"],
        **{key: _ranked(got[key]) for key in ("by_status", "by_model", "by_source", "by_model_reason")},
        "duration_ms": (got["duration_ms"] or [nothing])[0],
        "iterations": (got["iterations"] or [nothing])[0],
        "tokens": {"in": totals["tokens_in"], "out": totals["tokens_out"]},
        "tools": _tools(audit, since),
        "denials": _denials(audit, since),
        "failures": _top((r["status"], _first_line(r["error"])) for r in got["failures"]),
        # every rejected run, however it was refused: by the queue (which also keeps the file's facts
        # in `rejections`) or when its run was checked (an unknown profile, a bad manifest ...)
        "rejections": _top((_first_line(r["error"]),) for r in got["rejections"]),
        "long_work": _long_work(got["long_work"]),
        "connections": _connections(audit, since),
        "tripwires": _top(
            (r["decoy"], r["action"]) for r in _rows(audit, "select * from tripwires where at >= ?", since)
        ),
    }


def _ranked(rows: list[dict[str, Any]]) -> dict[str, int]:
    """{value: runs}, most first, then by name (as _count orders)."""
    return dict(sorted(((r["value"], r["n"]) for r in rows), key=lambda kv: (-kv[1], kv[0])))


def _long_work(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """How many marathons, swarms and linked runs, and how many of them ended done."""
    counted = []
    for label, column, value in LONG_WORK:
        mine = [g for g in groups if g[column] == value]
        if mine:
            counted.append({"what": label, "runs": sum(g["n"] for g in mine), "done": sum(g["done"] for g in mine)})
    return counted


def _connections(audit: Rows, since: str | None) -> list[dict[str, Any]]:
    sql = """select host, count(*) as connections, sum(allowed = 1) as allowed, sum(allowed = 0) as refused,
                    sum(bytes_up) as bytes_up, sum(bytes_down) as bytes_down
             from connections where at >= ? group by host order by connections desc, host"""
    return _rows(audit, sql, since)


def _rows(audit: Rows, sql: str, since: str | None) -> list[dict[str, Any]]:
    return audit.rows(sql, [since or ""])


def _count(values: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _tools(audit: Rows, since: str | None) -> list[dict[str, Any]]:
    sql = """select s.tool as tool, count(*) as calls, sum(s.ok = 1) as ok,
                    sum(s.ok = 0 and s.verdict not in ('denied')) as failed,
                    sum(s.verdict = 'denied') as denied, sum(s.verdict = 'approved') as approved
             from steps s join runs r on r.id = s.run_id
             where s.kind = 'tool' and r.started_at >= ? group by s.tool order by calls desc, tool"""
    return _rows(audit, sql, since)


def _denials(audit: Rows, since: str | None) -> list[dict[str, Any]]:
    sql = """select s.tool as tool, s.output as output from steps s join runs r on r.id = s.run_id
             where s.kind = 'tool' and s.verdict = 'denied' and r.started_at >= ?"""
    return _top((row["tool"], _denial_reason(row["output"])) for row in _rows(audit, sql, since))


def _denial_reason(output: str | None) -> str:
    found = _DENIED.search(output or "")
    return found.group(1) if found else _first_line(output)


def _first_line(text: str | None, limit: int = 160) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else "-"
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _top(keys: Any) -> list[dict[str, Any]]:
    counts = _count(" | ".join(map(str, key)) for key in keys)
    return [{"what": what, "count": n} for what, n in list(counts.items())[:TOP]]


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
