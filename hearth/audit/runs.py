"""A run's row (`runs`, and its full-text index `runs_fts`): every statement on them.

`RunRows` is the AuditStore's part that writes and reads single runs (a run writes through
hearth/run/events.py's SqliteRecorder); the functions below serve the lists, the counts and the
command center, through the store or its read-only reader (`Rows`).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from hearth.audit.rows import ARGUMENTS_CAP, Rows, Writer, cap

PAGE_SIZE = 50
COUNT_CAP = 10_000  # a list counts its matches up to here ("more than 10,000"): a count is a scan
LIST_COLUMNS = (
    "id, status, label, agent_name, model, model_requested, model_reason, source, mode, requested_by, iterations, "
    "tokens_in, tokens_out, duration_ms, started_at, ended_at, substr(goal, 1, 240) as goal, worker"
)
FILTERS = ("status", "agent_name", "model", "source")
# the distinct values of an indexed column, one index seek per value instead of a scan of every run
# (a "skip scan": each step asks for the next value above the last one)
CHOICE_SQL = """with recursive seen(v) as (
    select min({name}) from runs where {name} > ''
    union all
    select (select min({name}) from runs where {name} > seen.v) from seen where seen.v is not null
) select v from seen where v is not null limit 500"""


def new_run_id(now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> str:
    return f"{now().strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(3)}"


@dataclass
class RunRecord:
    id: str
    agent_name: str
    model: str
    goal: str
    mode: str
    source: str = "cli"
    requested_by: str = ""
    workspace: str = ""
    sandbox: str = ""
    status: str = "running"
    started_at: str = ""
    parent_run: str | None = None  # the run this one was made from (see RUN_LINKS)
    link: str | None = None
    kind: str | None = None  # marathon | swarm; None for a plain run (and for a leg or a child)
    label: str | None = None  # the operator's free-text name for the run (a request's `label`)
    model_requested: str | None = None  # what the request asked for (`auto`: the router chose)
    model_reason: str | None = None  # why `model` was used: a router rule, default, fallback, escalation, tag
    model_host: str | None = None  # the Ollama hosts that answered, when there were several (hearth/run/hosts.py)


# How a run can be made from another: a follow-up continues it, a leg is one of a marathon's,
# a child one of a swarm's sub-goals and the synthesis merges them, an escalation retries it on a
# larger model and a fallback on the next model when the first was not available.
RUN_LINKS = ("follow-up", "leg", "child", "synthesis", "escalation", "fallback")


class RunRows:
    """The AuditStore's runs: written as a run is admitted, learns and ends; read one at a time."""

    def start_run(self: Writer, run: RunRecord) -> None:
        run.started_at = run.started_at or self.clock()
        self.insert("runs", asdict(run))

    def insert_run(self: Writer, row: dict[str, Any]) -> None:
        """A run's row as a record of the stream carries it (hearth/run/events.py's RunStarted)."""
        self.insert("runs", row)

    def finish_run(self: Writer, run_id: str, *, if_running: bool = False, **fields: Any) -> None:
        """The run's final status and totals; with `if_running`, only while it has none yet."""
        fields.setdefault("ended_at", self.clock())
        if "error" in fields:
            fields["error"] = cap(fields["error"], ARGUMENTS_CAP)
        if not if_running:
            self.update("runs", run_id, fields)
            return
        self.checked("runs", fields, fixed=["id"])
        assignments = ", ".join(f'"{name}" = ?' for name in fields)
        sql = f"update runs set {assignments} where id = ? and status = 'running'"
        self.conn.execute(sql, [*fields.values(), run_id])

    def update_run(self: Writer, run_id: str, **fields: Any) -> None:
        self.update("runs", run_id, fields)

    def run(self: Writer, run_id: str) -> dict[str, Any] | None:
        return row(self, run_id)

    def runs(
        self: Writer, limit: int = 20, *, since: str | None = None, search: str | None = None, **where: Any
    ) -> list[dict[str, Any]]:
        """The newest runs first; `where` matches columns exactly (ColumnRefused for a name runs
        does not have), `since` is a time stamp the run started at or after, `search` words that its
        goal or summary holds (the runs_fts index)."""
        self.checked("runs", where)
        clauses = [f'"{k}" = :{k}' for k in where]
        params: dict[str, Any] = {**where, "_limit": limit}
        if since:
            clauses.append("started_at >= :_since")
            params["_since"] = since
        if search is not None:
            clauses.append("rowid in (select rowid from runs_fts where runs_fts match :_match)")
            params["_match"] = fts_query(search)
        clause = " and ".join(clauses) or "1 = 1"
        sql = f"select * from runs where {clause} order by started_at desc, rowid desc limit :_limit"
        return self.rows(sql, params)

    def find_run(self: Writer, prefix: str) -> dict[str, Any] | None:
        """A run by its id or a unique prefix of it."""
        return self.find_by_id_or_prefix("runs", prefix)

    def run_ids_starting(self: Writer, prefix: str) -> list[str]:
        """The ids of the runs that start with `prefix`, newest first (at most 10)."""
        return self.ids_with_prefix("runs", prefix)

    def insert_runs(self: Writer, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """Many runs' rows of the same columns, in one transaction (a benchmark's seed)."""
        self.insert_many("runs", columns, rows)

    def linked(self: Writer, run_id: str) -> list[dict[str, Any]]:
        """The runs made from this one, oldest first."""
        return self.rows("select * from runs where parent_run = ? order by started_at, rowid", [run_id])


def fts_query(text: str) -> str:
    """Free text -> an FTS5 query: every word quoted (no operator injection), all of them required."""
    words = text.split()
    return " ".join('"' + word.replace('"', '""') + '"' for word in words) or '""'


# -- what the lists read --------------------------------------------------------------------------
@dataclass(frozen=True)
class RunFilter:
    status: str = ""
    agent_name: str = ""
    model: str = ""
    source: str = ""
    since: str | None = None  # the audit's time format (hearth.report.parse_since)
    q: str = ""  # words the goal contains

    def where(self) -> tuple[str, list[Any]]:
        """The SQL condition and its parameters; every value is a parameter, never SQL."""
        clauses, params = [], []
        for name in FILTERS:
            if getattr(self, name):
                clauses.append(f"{name} = ?")
                params.append(getattr(self, name))
        if self.since:
            clauses.append("started_at >= ?")
            params.append(self.since)
        for word in self.q.split()[:8]:
            clauses.append("instr(lower(goal), ?) > 0")
            params.append(word.lower())
        return (" where " + " and ".join(clauses)) if clauses else "", params


def page(db: Rows, where: RunFilter, number: int = 1) -> tuple[list[dict[str, Any]], int]:
    """One page of runs (LIST_COLUMNS), newest first, and how many match in all (up to COUNT_CAP + 1:
    past it a list says "more than", and a page of a huge audit costs what it costs on a small one)."""
    clause, params = where.where()
    counted = db.rows(f"select count(*) as n from (select 1 from runs{clause} limit {COUNT_CAP + 1})", params)
    sql = f"select {LIST_COLUMNS} from runs{clause} order by started_at desc, rowid desc limit ? offset ?"
    rows = db.rows(sql, [*params, PAGE_SIZE, (max(number, 1) - 1) * PAGE_SIZE])
    return rows, int(counted[0]["n"]) if counted else 0


def recent(db: Rows, limit: int = 10) -> list[dict[str, Any]]:
    return db.rows(f"select {LIST_COLUMNS} from runs order by started_at desc, rowid desc limit ?", [limit])


def choices(db: Rows, name: str) -> list[str]:
    """The values one of FILTERS takes, by index."""
    if name not in FILTERS:
        raise ValueError(f"{name!r} is not a filter of the runs list; one of: {', '.join(FILTERS)}")
    return [r["v"] for r in db.rows(CHOICE_SQL.format(name=name))]


def made_from(db: Rows, run_id: str) -> list[str]:
    """The ids of the runs made from this one (its follow-ups, legs, children ...), oldest first."""
    return [r["id"] for r in db.rows("select id from runs where parent_run = ? order by started_at", [run_id])]


def started_since(db: Rows, since: str) -> dict[str, int]:
    """How many runs started at or after `since`, and their tokens."""
    sql = "select count(*) as runs, sum(tokens_in) as t_in, sum(tokens_out) as t_out from runs where started_at >= ?"
    found = db.rows(sql, [since])
    row = found[0] if found else {}
    return {"runs": row.get("runs") or 0, "tokens_in": row.get("t_in") or 0, "tokens_out": row.get("t_out") or 0}


def with_status(db: Rows, status: str) -> list[str]:
    """The ids of the runs whose status is `status` (running, waiting: few)."""
    return [row["id"] for row in db.rows("select id from runs where status = ?", [status])]


def requested_by(db: Rows, who: str, limit: int = 1) -> list[dict[str, Any]]:
    """The latest runs `who` asked for (a mission's), newest first: each one's id, status and start."""
    return db.rows(
        "select id, status, started_at from runs where requested_by = ? order by started_at desc, rowid desc limit ?",
        [who, limit],
    )


def row(db: Rows, run_id: str) -> dict[str, Any] | None:
    """The run's whole row, or None."""
    found = db.rows("select * from runs where id = ?", [run_id])
    return found[0] if found else None


def header(db: Rows, run_id: str) -> dict[str, Any] | None:
    """What a run's card shows of its row: its start, goal, mode, profile, model and label."""
    found = db.rows("select started_at, goal, mode, agent_name, model, label from runs where id = ?", [run_id])
    return found[0] if found else None


def start_times(db: Rows) -> dict[str, str]:
    """When each run started (a benchmark's reading of a batch)."""
    return {row["id"]: row["started_at"] for row in db.rows("select id, started_at from runs")}


def status(db: Rows, run_id: str) -> str | None:
    """The run's status; None when the audit has no such run."""
    rows = db.rows("select status from runs where id = ?", [run_id])
    return None if not rows else str(rows[0]["status"])


def statuses(db: Rows, run_ids: list[str]) -> dict[str, str]:
    """The status of each of these runs the audit has."""
    found: dict[str, str] = {}
    for start in range(0, len(run_ids), 500):  # SQLite's limit on a statement's parameters is far above
        chunk = run_ids[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        found |= {
            row["id"]: row["status"] for row in db.rows(f"select id, status from runs where id in ({marks})", chunk)
        }
    return found


def per_worker(db: Rows, id_prefix: str = "") -> dict[str | None, int]:
    """How many runs (of the ids starting with `id_prefix`) each worker ran; None: this box."""
    rows = db.rows(
        "select worker, count(*) as n from runs where substr(id, 1, ?) = ? group by worker", [len(id_prefix), id_prefix]
    )
    return {row["worker"]: int(row["n"]) for row in rows}


def agent_names(db: Rows, run_ids: list[str]) -> dict[str, str]:
    """The profile (agent name) of each of these runs the audit has."""
    marks = ", ".join("?" * len(run_ids))
    return {
        r["id"]: r["agent_name"] for r in db.rows(f"select id, agent_name from runs where id in ({marks})", run_ids)
    }
