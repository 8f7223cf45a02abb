"""The report's and /metrics' rollups (m200): tables kept by triggers as runs and steps are written
(hearth/audit/rollups.py reads them).

Part of the list in hearth/audit/migrations/__init__.py. Never edit a shipped migration: its
name is recorded in each audit.db's `_migrations` as applied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils

# Written here in full (not imported), as a shipped migration must not change when other code does.
_DAY = "substr(coalesce({r}.started_at, ''), 1, 10)"  # the day a run started, as the rollups key it
_RUN_KEY = (
    _DAY + ", coalesce({r}.status, ''), coalesce({r}.model, ''), "
    "coalesce({r}.agent_name, ''), coalesce({r}.source, ''), coalesce({r}.model_reason, ''), "
    "coalesce({r}.sandbox, ''), coalesce({r}.kind, ''), coalesce({r}.link, '')"
)
_RUN_DIMS = "day, status, model, agent_name, source, model_reason, sandbox, kind, link"
# a duration rounded up to two significant figures (1234 ms -> 1300): a day's durations fold into
# a few rows, and every bound of /metrics' histogram (1 s, 5 s ... 3600 s) stays exact
CEIL2_SQL = (
    "case when {v} < 100 then {v} "
    + " ".join(f"when {{v}} < {10 ** (k + 2)} then (({{v}} + {10**k - 1}) / {10**k}) * {10**k}" for k in range(1, 10))
    + " else {v} end"
)
ERROR_KEY_SQL = "substr(ltrim(coalesce({r}.error, ''), ' ' || char(9, 10, 11, 12, 13)), 1, 400)"
_TOOL_KEY = "coalesce({s}.tool, ''), coalesce({s}.verdict, ''), coalesce({s}.ok, -1)"


def _run_rollup_sql(r: str, sign: str) -> list[str]:
    """The statements that add (sign "+") or take away ("-") one run row, `r` being new or old."""
    key = _RUN_KEY.format(r=r)
    day, status = _DAY.format(r=r), f"coalesce({r}.status, '')"
    duration = CEIL2_SQL.format(v=f"cast({r}.duration_ms as integer)")
    return [
        f"""insert into run_rollup ({_RUN_DIMS}, runs, tokens_in, tokens_out, duration_ms)
            values ({key}, {sign}1, {sign}coalesce({r}.tokens_in, 0), {sign}coalesce({r}.tokens_out, 0),
                    {sign}coalesce({r}.duration_ms, 0))
            on conflict ({_RUN_DIMS}) do update set runs = runs + excluded.runs,
                tokens_in = tokens_in + excluded.tokens_in, tokens_out = tokens_out + excluded.tokens_out,
                duration_ms = duration_ms + excluded.duration_ms""",
        f"""insert into run_value_rollup (day, status, measure, value, runs)
            select {day}, {status}, 'duration_ms', {duration}, {sign}1 where {r}.duration_ms is not null
            on conflict (day, status, measure, value) do update set runs = runs + excluded.runs""",
        f"""insert into run_value_rollup (day, status, measure, value, runs)
            select {day}, {status}, 'iterations', {r}.iterations, {sign}1 where {r}.iterations is not null
            on conflict (day, status, measure, value) do update set runs = runs + excluded.runs""",
        f"""insert into run_error_rollup (day, status, error, runs)
            select {day}, {status}, {ERROR_KEY_SQL.format(r=r)}, {sign}1
            where coalesce({r}.status, '') not in ('running', 'done')
            on conflict (day, status, error) do update set runs = runs + excluded.runs""",
    ]


def _tool_rollup_sql(s: str, sign: str) -> str:
    day = f"coalesce((select {_DAY.format(r='runs')} from runs where id = {s}.run_id), '')"
    return f"""insert into tool_rollup (day, tool, verdict, ok, calls)
               select {day}, {_TOOL_KEY.format(s=s)}, {sign}1 where {s}.kind = 'tool'
               on conflict (day, tool, verdict, ok) do update set calls = calls + excluded.calls"""


_EMPTIED = (
    "delete from run_rollup where runs = 0; delete from run_value_rollup where runs = 0; "
    "delete from run_error_rollup where runs = 0;"
)


def m200_rollups(db: sqlite_utils.Database) -> None:
    """What the report and /metrics count, kept per day as the runs and their tool steps are
    written: `run_rollup` (runs and tokens by day and the columns they are counted by),
    `run_value_rollup` (each finished measure's values: iterations exactly, durations rounded up to
    two significant figures), `run_error_rollup` (a failed or rejected run's error, its first 400
    characters) and `tool_rollup` (tool calls by the day their run started, verdict and ok). Triggers
    keep them, so every writer (a run, settle, the queue, a replay) counts alike and a report over
    a month reads a month of rows, not its runs (hearth/audit/rollups.py reads them)."""
    for statement in [*_TABLES, *_triggers(), *_counted_before()]:
        db.execute(statement)
    # a call still `started` (waiting, running or never run) is read live by /metrics: few rows
    db.execute("create index if not exists idx_steps_started on steps(id) where verdict = 'started'")


_TABLES = [
    f"""create table if not exists run_rollup (day text not null, status text not null, model text not null,
            agent_name text not null, source text not null, model_reason text not null, sandbox text not null,
            kind text not null, link text not null, runs integer not null, tokens_in integer not null,
            tokens_out integer not null, duration_ms integer not null, primary key ({_RUN_DIMS})) without rowid""",
    """create table if not exists run_value_rollup (day text not null, status text not null,
            measure text not null, value integer not null, runs integer not null,
            primary key (day, status, measure, value)) without rowid""",
    """create table if not exists run_error_rollup (day text not null, status text not null,
            error text not null, runs integer not null, primary key (day, status, error)) without rowid""",
    """create table if not exists tool_rollup (day text not null, tool text not null, verdict text not null,
            ok integer not null, calls integer not null, primary key (day, tool, verdict, ok)) without rowid""",
]


def _triggers() -> list[str]:
    """The triggers that keep the rollups as runs and steps are inserted, updated and deleted."""
    columns = (
        "started_at, status, model, agent_name, source, model_reason, sandbox, kind, link, "
        "tokens_in, tokens_out, duration_ms, iterations, error"
    )
    add, take = ";\n".join(_run_rollup_sql("new", "+")), ";\n".join(_run_rollup_sql("old", "-"))
    tool_add, tool_take = _tool_rollup_sql("new", "+"), _tool_rollup_sql("old", "-")
    return [
        f"create trigger if not exists runs_rollup_insert after insert on runs begin {add}; end",
        f"create trigger if not exists runs_rollup_update after update of {columns} on runs "
        f"begin {take}; {add}; {_EMPTIED} end",
        f"create trigger if not exists runs_rollup_delete after delete on runs begin {take}; {_EMPTIED} end",
        f"create trigger if not exists steps_rollup_insert after insert on steps begin {tool_add}; end",
        "create trigger if not exists steps_rollup_update after update of kind, tool, verdict, ok on steps "
        f"begin {tool_take}; {tool_add}; delete from tool_rollup where calls = 0; end",
        "create trigger if not exists steps_rollup_delete after delete on steps "
        f"begin {tool_take}; delete from tool_rollup where calls = 0; end",
    ]


def _counted_before() -> list[str]:
    """What was written before the triggers: counted once, as the triggers would have."""
    duration = CEIL2_SQL.format(v="cast(r.duration_ms as integer)")
    day, status = _DAY.format(r="r"), "coalesce(r.status, '')"
    values = [
        f"""insert into run_value_rollup (day, status, measure, value, runs)
                select {day}, {status}, '{measure}', {value}, count(*) from runs r
                where r.{measure} is not null group by 1, 2, 4"""
        for measure, value in (("duration_ms", duration), ("iterations", "r.iterations"))
    ]
    return [
        f"""insert into run_rollup ({_RUN_DIMS}, runs, tokens_in, tokens_out, duration_ms)
            select {_RUN_KEY.format(r="r")}, count(*), coalesce(sum(r.tokens_in), 0), coalesce(sum(r.tokens_out), 0),
                   coalesce(sum(r.duration_ms), 0)
            from runs r group by 1, 2, 3, 4, 5, 6, 7, 8, 9""",
        *values,
        f"""insert into run_error_rollup (day, status, error, runs)
            select {day}, {status}, {ERROR_KEY_SQL.format(r="r")}, count(*) from runs r
            where coalesce(r.status, '') not in ('running', 'done') group by 1, 2, 3""",
        f"""insert into tool_rollup (day, tool, verdict, ok, calls)
            select {day}, {_TOOL_KEY.format(s="s")}, count(*)
            from steps s left join runs r on r.id = s.run_id where s.kind = 'tool' group by 1, 2, 3, 4""",
    ]
