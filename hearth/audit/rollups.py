"""The report's and /metrics' counts (`run_rollup`, `run_value_rollup`, `run_error_rollup`,
`tool_rollup`): every statement that reads them, and a period of the audit as the report counts it,
read from m200's rollups and one day's runs.

The rollups (hearth/audit/migrations/rollups.py, m200) keep per day what the runs and their tool calls add
up to, maintained by triggers as the rows are written. A period starts at `since` (a time stamp,
or nothing for everything): the whole days after since's own day are their rollup rows, and the
part of that first day (its edge) is read from the runs themselves, once, through the started_at
index. So a period is exact at its edge and costs its days' rows plus one day of runs at most,
however many runs the audit holds. (Hours instead of days would make the edge smaller and a busy
audit's rollups up to 24 times larger: measured with bench/web.py, days cost less.)
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from hearth.audit.migrations.rollups import CEIL2_SQL, ERROR_KEY_SQL
from hearth.audit.rows import Rows

# the runs of since's own day from `since` on (none when the period is everything); `{r}` is an alias
EDGE = ":since != '' and {r}started_at >= :since and {r}started_at < :until"


def period(since: str | None) -> dict[str, str]:
    """The parameters of a period from `since` (a stamp as the stores write it, or None: everything):
    rollup days from `from_day` on, and the edge's runs from `since` until `until`."""
    if not since:
        return {"since": "", "from_day": "", "until": ""}
    try:
        after = (date.fromisoformat(since[:10]) + timedelta(days=1)).isoformat()
    except ValueError:  # not a stamp: no whole day is known, so every run from since on is the edge
        return {"since": since, "from_day": "\uffff", "until": "\uffff"}
    return {"since": since, "from_day": after, "until": after}


# The runs of a period, from the rollups: the report reads a few rows a day of the period and the
# runs of its first day, never every run.
PERIOD_SQL = {
    "runs": """select day, status, model, source, model_reason, kind, link, sum(runs) as n, sum(tokens_in) as tokens_in,
                      sum(tokens_out) as tokens_out from run_rollup where day >= :from_day
               group by day, status, model, source, model_reason, kind, link having sum(runs) > 0""",
    # the edge's runs, grouped as the rollups group them (one read of at most one day's runs)
    "edge": f"""select substr(started_at, 1, 10) as day, coalesce(status, '') as status, coalesce(model, '') as model,
                       coalesce(source, '') as source, coalesce(model_reason, '') as model_reason,
                       coalesce(kind, '') as kind, coalesce(link, '') as link, count(*) as n,
                       coalesce(sum(tokens_in), 0) as tokens_in, coalesce(sum(tokens_out), 0) as tokens_out,
                       {CEIL2_SQL.format(v="cast(duration_ms as integer)")} as duration_ms, iterations,
                       case when coalesce(status, '') not in ('running', 'done') then {ERROR_KEY_SQL.format(r="runs")}
                            else '' end as error
                from runs where {EDGE.format(r="")} group by 1, 2, 3, 4, 5, 6, 7, 11, 12, 13""",
    "first": "select started_at from runs where started_at >= :since and started_at > '' order by started_at limit 1",
    "values": """select status, measure, value, sum(runs) as n from run_value_rollup where day >= :from_day
                 group by status, measure, value having sum(runs) > 0""",
    "errors": """select status, error, sum(runs) as n from run_error_rollup where day >= :from_day
                 and status != 'running' group by status, error having sum(runs) > 0""",
    "tools": """select tool, verdict, ok, sum(calls) as calls from tool_rollup where day >= :from_day
                group by tool, verdict, ok having sum(calls) > 0""",
    # the edge's runs first, then their steps (by run_id), never the other way round
    "edge_tools": f"""select coalesce(s.tool, '') as tool, coalesce(s.verdict, '') as verdict,
                             coalesce(s.ok, -1) as ok, 1 as calls
                      from runs r cross join steps s on s.run_id = r.id
                      where {EDGE.format(r="r.")} and s.kind = 'tool'""",
}


def period_rows(db: Rows, since: str | None) -> dict[str, list[dict[str, Any]]]:
    """Each of PERIOD_SQL's reads of the period from `since` (an audit without the tables: none)."""
    params = period(since)
    return {name: db.rows(sql, params) for name, sql in PERIOD_SQL.items()}


# -- /metrics -------------------------------------------------------------------------------------
# A call recorded `started` has not finished: it waits for a person when its run has that call's
# approval pending, runs while its run goes on, and never ran when its run ended (as the run page
# says: hearth/web/steps.py). The finished calls are counted from the rollups; the few still
# `started` are read live (the partial index idx_steps_started holds only them).
TOOL_VERDICTS = """select tool, verdict, sum(calls) as n from tool_rollup where verdict != 'started'
        group by tool, verdict having sum(calls) > 0
    union all
    select s.tool, case when exists (select 1 from approvals a
                                     where a.run_id = s.run_id and a.status = 'pending' and a.tool = s.tool)
            then 'waiting'
        when r.status in ('running', 'waiting', 'starting') then 'running'
        else 'not_run' end as verdict, count(*) as n
    from steps s left join runs r on r.id = s.run_id where s.verdict = 'started' and s.kind = 'tool' group by s.tool, 2"""


def runs_counted(db: Rows) -> list[dict[str, Any]]:
    """Runs by status, model and agent (`n`)."""
    return db.rows(
        """select status, model, agent_name, sum(runs) as n from run_rollup
           group by status, model, agent_name having sum(runs) > 0"""
    )


def tool_verdicts(db: Rows) -> list[dict[str, Any]]:
    """Tool calls by tool and verdict (`n`), a call still `started` named by what it means now."""
    return db.rows(TOOL_VERDICTS)


def tokens(db: Rows) -> dict[str, int]:
    """Every run's tokens in and out."""
    found = db.rows("select coalesce(sum(tokens_in), 0) as i, coalesce(sum(tokens_out), 0) as o from run_rollup")
    row = found[0] if found else {}
    return {"in": int(row.get("i") or 0), "out": int(row.get("o") or 0)}


def durations(db: Rows, bounds_s: tuple[int, ...]) -> dict[str, int]:
    """Finished runs' durations: how many (`n`), how many within each bound (`b<seconds>`), and
    their sum in ms (`total`). Durations are kept rounded up to two significant figures, which
    leaves every bound exact."""
    cases = ", ".join(f"sum(case when value <= {int(b) * 1000} then runs else 0 end) as b{int(b)}" for b in bounds_s)
    found = db.rows(f"select coalesce(sum(runs), 0) as n, {cases} from run_value_rollup where measure = 'duration_ms'")
    total = db.rows("select coalesce(sum(duration_ms), 0) as total from run_rollup")
    row = {k: int(v or 0) for k, v in (found[0] if found else {}).items()}
    return {**row, "total": int(total[0]["total"] or 0) if total else 0}


def runs_by_sandbox(db: Rows) -> list[dict[str, Any]]:
    """Runs (not rejected) by the command sandbox they had (`n`)."""
    return db.rows(
        "select sandbox, sum(runs) as n from run_rollup where status != 'rejected' group by sandbox having sum(runs) > 0"
    )
