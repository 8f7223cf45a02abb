"""The audit as the command center reads it: hearth/audit/reader.py's read-only connection, queries
paged in SQL. Writes go through the appliance's own functions (decisions.decide, dispatch.stop).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hearth.audit.reader import AuditReader

PAGE_SIZE = 50
COUNT_CAP = 10_000  # a list counts its matches up to here ("more than 10,000"): a count is a scan
LIST_COLUMNS = (
    "id, status, label, agent_name, model, model_requested, model_reason, source, mode, requested_by, iterations, "
    "tokens_in, tokens_out, duration_ms, started_at, ended_at, substr(goal, 1, 240) as goal, worker"
)
# Columns linking runs to each other, once the audit has them (follow-ups, swarms): name -> column.
# Adding {"parent": "parent_id"} here is all the run page needs to show both directions.
LINK_COLUMNS: dict[str, str] = {"parent": "parent_run"}
FILTERS = ("status", "agent_name", "model", "source")
# the distinct values of an indexed column, one index seek per value instead of a scan of every run
# (a "skip scan": each step asks for the next value above the last one)
CHOICE_SQL = """with recursive seen(v) as (
    select min({name}) from runs where {name} > ''
    union all
    select (select min({name}) from runs where {name} > seen.v) from seen where seen.v is not null
) select v from seen where v is not null limit 500"""
CHOICES_TTL_S = 10.0
CAPPED = ("arguments", "output", "detail")  # a step's columns that can hold text of any length


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


class Reader(AuditReader):
    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._choices: tuple[float, dict[str, list[str]]] | None = None

    def one(self, sql: str, params: Sequence[Any] = ()) -> dict[str, Any] | None:
        found = self.rows(sql, params)
        return found[0] if found else None

    # -- runs ------------------------------------------------------------------------------------
    def runs_page(self, where: RunFilter, page: int = 1) -> tuple[list[dict[str, Any]], int]:
        """One page of runs, newest first, and how many match in all."""
        clause, params = where.where()
        # counted up to COUNT_CAP + 1: past it the list says "more than", and a page of a huge audit
        # costs what it costs on a small one (the list itself is one index walk of PAGE_SIZE rows)
        counted = f"select count(*) as n from (select 1 from runs{clause} limit {COUNT_CAP + 1})"
        total = self.one(counted, params)
        sql = f"select {LIST_COLUMNS} from runs{clause} order by started_at desc, rowid desc limit ? offset ?"
        rows = self.rows(sql, [*params, PAGE_SIZE, (max(page, 1) - 1) * PAGE_SIZE])
        return rows, int(total["n"]) if total else 0

    def recent(self, limit: int = 10) -> list[dict[str, Any]]:
        return self.rows(f"select {LIST_COLUMNS} from runs order by started_at desc, rowid desc limit ?", [limit])

    def run(self, run_id: str) -> dict[str, Any] | None:
        return self.one("select * from runs where id = ?", [run_id])

    def steps(self, run_id: str, cap: int | None = None) -> list[dict[str, Any]]:
        """A run's steps; with `cap`, each of CAPPED cut to that many characters in SQL (a row can be
        any size), beside its whole length as `<name>_chars`."""
        if cap is None:
            return self.rows("select * from steps where run_id = ? order by seq", [run_id])
        names = [r["name"] for r in self.rows("select name from pragma_table_info('steps')")]
        columns = ", ".join(
            f'substr("{n}", 1, {int(cap)}) as "{n}", length("{n}") as "{n}_chars"' if n in CAPPED else f'"{n}"'
            for n in names
        )
        return self.rows(f"select {columns or '*'} from steps where run_id = ? order by seq", [run_id])

    def step(self, run_id: str, seq: int) -> dict[str, Any] | None:
        return self.one("select * from steps where run_id = ? and seq = ?", [run_id, seq])

    def checkpoints(self, run_id: str) -> list[dict[str, Any]]:
        return self.rows("select * from checkpoints where run_id = ? order by id", [run_id])

    def request_body(self, run_id: str) -> str | None:
        row = self.one("select body from requests where id = ?", [run_id])
        return row["body"] if row else None

    def links(self, run: dict[str, Any]) -> dict[str, list[str]]:
        """Runs this one is linked to, by LINK_COLUMNS: its parent(s) and the runs naming it."""
        found: dict[str, list[str]] = {}
        for name, column in LINK_COLUMNS.items():
            found[name] = [run[column]] if run.get(column) else []
            children = self.rows(f'select id from runs where "{column}" = ? order by started_at', [run["id"]])
            found[f"{name} of"] = [row["id"] for row in children]
        return found

    def choices(self) -> dict[str, list[str]]:
        """The values each filter can take, for the runs page's selects; looked up at most every
        CHOICES_TTL_S (four scans of the runs table are most of a page's time on a big audit)."""
        now = time.monotonic()
        if self._choices is None or now - self._choices[0] > CHOICES_TTL_S:
            found = {name: [r["v"] for r in self.rows(CHOICE_SQL.format(name=name))] for name in FILTERS}
            self._choices = (now, found)
        return self._choices[1]

    def today(self, now: datetime | None = None) -> dict[str, int]:
        """Runs started today (UTC) and their tokens."""
        midnight = (now or datetime.now(UTC)).strftime("%Y-%m-%dT00:00:00")
        sql = (
            "select count(*) as runs, sum(tokens_in) as t_in, sum(tokens_out) as t_out from runs where started_at >= ?"
        )
        row = self.one(sql, [midnight]) or {}
        return {"runs": row.get("runs") or 0, "tokens_in": row.get("t_in") or 0, "tokens_out": row.get("t_out") or 0}

    # -- approvals -------------------------------------------------------------------------------
    def pending_approvals(self, now: str) -> list[dict[str, Any]]:
        sql = """select a.*, substr(r.goal, 1, 240) as goal from approvals a left join runs r on r.id = a.run_id
                 where a.status = 'pending' and a.expires_at > ? order by a.requested_at, a.rowid limit 100"""
        return self.rows(sql, [now])

    def recent_decisions(self, limit: int = 30) -> list[dict[str, Any]]:
        sql = (
            "select * from approvals where status != 'pending' order by coalesce(decided_at, requested_at) desc limit ?"
        )
        return self.rows(sql, [limit])

    def approvals_of(self, run_id: str) -> list[dict[str, Any]]:
        return self.rows("select * from approvals where run_id = ? order by requested_at", [run_id])
