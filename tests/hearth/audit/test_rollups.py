"""The report's rollups (m200): kept by triggers through every write, counted once for an older
audit, and a period that starts mid-day counts exactly the runs from then on."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hearth.audit.migrations.rollups import CEIL2_SQL, ERROR_KEY_SQL
from hearth.audit.store import AuditStore, RunRecord
from hearth.report import build_report

DAYS = ["2026-11-29", "2026-11-30", "2026-12-01"]
KEY = (
    "substr(coalesce(started_at, ''), 1, 10), coalesce(status, ''), coalesce(model, ''), coalesce(agent_name, ''), "
    "coalesce(source, ''), coalesce(model_reason, ''), coalesce(sandbox, ''), coalesce(kind, ''), coalesce(link, '')"
)
# what each rollup must hold, counted straight from the rows it rolls up
EXPECTED = {
    "run_rollup": f"""select {KEY}, count(*), coalesce(sum(tokens_in), 0), coalesce(sum(tokens_out), 0),
                             coalesce(sum(duration_ms), 0) from runs group by 1, 2, 3, 4, 5, 6, 7, 8, 9""",
    "run_value_rollup": f"""select substr(coalesce(started_at, ''), 1, 10), coalesce(status, ''), 'duration_ms',
                                   {CEIL2_SQL.format(v="cast(duration_ms as integer)")}, count(*)
                            from runs where duration_ms is not null group by 1, 2, 4
                            union all
                            select substr(coalesce(started_at, ''), 1, 10), coalesce(status, ''), 'iterations',
                                   iterations, count(*) from runs where iterations is not null group by 1, 2, 4""",
    "run_error_rollup": f"""select substr(coalesce(started_at, ''), 1, 10), coalesce(status, ''),
                                   {ERROR_KEY_SQL.format(r="runs")}, count(*) from runs
                            where coalesce(status, '') not in ('running', 'done') group by 1, 2, 3""",
    "tool_rollup": """select coalesce(substr(coalesce(r.started_at, ''), 1, 10), ''), coalesce(s.tool, ''),
                             coalesce(s.verdict, ''), coalesce(s.ok, -1), count(*)
                      from steps s left join runs r on r.id = s.run_id where s.kind = 'tool' group by 1, 2, 3, 4""",
}


def assert_rollups_agree(conn: sqlite3.Connection) -> None:
    for table, sql in EXPECTED.items():
        kept = sorted(conn.execute(f"select * from {table}").fetchall())
        assert kept == sorted(conn.execute(sql).fetchall()), table


runs_ = st.sampled_from(["a", "b", "c"])
writes = st.lists(
    st.one_of(
        st.tuples(st.just("start"), runs_, st.sampled_from(DAYS), st.sampled_from(["m1", "m2", None])),
        st.tuples(
            st.just("finish"),
            runs_,
            st.sampled_from(["done", "failed", "rejected", "iteration_limit"]),
            st.one_of(st.none(), st.integers(0, 5_000_000)),
            st.one_of(st.none(), st.sampled_from(["boom", "  two\nlines", ""])),
        ),
        st.tuples(st.just("tokens"), runs_, st.integers(0, 1000)),
        st.tuples(st.just("delete"), runs_),
        st.tuples(st.just("step"), runs_, st.sampled_from(["read_file", "run_command"]), st.sampled_from([None, 0, 1])),
        st.tuples(st.just("verdict"), runs_, st.sampled_from(["run", "denied", "approved", "started"]), st.booleans()),
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writes)
def test_the_rollups_agree_with_the_rows_after_any_writes(tmp_path: Path, steps: list[tuple]) -> None:
    path = tmp_path / f"audit-{abs(hash(tuple(steps)))}.db"
    with AuditStore(path) as audit:
        conn = audit.conn
        for write in steps:
            what, run_id = write[0], write[1]
            exists = audit.run(run_id) is not None
            if what == "start" and not exists:
                audit.start_run(
                    RunRecord(
                        id=run_id,
                        agent_name="x",
                        model=write[3],
                        goal="g",
                        mode="auto",
                        started_at=f"{write[2]}T08:00:00.000Z",
                    )
                )
            elif what == "finish" and exists:
                audit.finish_run(run_id, status=write[2], duration_ms=write[3], iterations=3, error=write[4])
            elif what == "tokens" and exists:
                audit.update_run(run_id, tokens_in=write[2], tokens_out=write[2] // 2)
            elif what == "delete":
                conn.execute("delete from steps where run_id = ?", [run_id])
                conn.execute("delete from runs where id = ?", [run_id])
            elif what == "step" and exists:
                audit.record_step(run_id, "tool", tool=write[2], ok=write[3], verdict="started")
            elif what == "verdict":
                conn.execute("update steps set verdict = ?, ok = ? where run_id = ?", [write[2], int(write[3]), run_id])
        assert_rollups_agree(conn)
    path.unlink()


def test_an_audit_written_before_the_rollups_is_counted_once_when_it_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "audit.db"
    with AuditStore(path) as audit:  # made as it was before m200: no rollups, no triggers
        for name in ("runs_rollup_insert", "runs_rollup_update", "runs_rollup_delete", "steps_rollup_insert",
                     "steps_rollup_update", "steps_rollup_delete"):  # fmt: skip
            audit.conn.execute(f"drop trigger {name}")
        for table in EXPECTED:
            audit.conn.execute(f"drop table {table}")
        audit.conn.execute("delete from _migrations where name = 'm200_rollups'")
        for n, day in enumerate(DAYS):
            audit.start_run(
                RunRecord(
                    id=f"r{n}", agent_name="x", model="m", goal="g", mode="auto", started_at=f"{day}T01:00:00.000Z"
                )
            )
            audit.finish_run(
                f"r{n}", status=["done", "failed", "rejected"][n], duration_ms=1234 * n, iterations=n, error="why"
            )
            audit.record_step(f"r{n}", "tool", tool="read_file", ok=1, verdict="run")
    with AuditStore(path) as audit:
        assert_rollups_agree(audit.conn)
        assert audit.conn.execute("select sum(runs) from run_rollup").fetchone() == (3,)
    with AuditStore(path) as audit:  # opened again: nothing counted twice
        assert audit.conn.execute("select sum(runs) from run_rollup").fetchone() == (3,)


def test_a_period_that_starts_mid_hour_counts_the_runs_from_then_on(tmp_path: Path) -> None:
    with AuditStore(tmp_path / "audit.db") as audit:
        for run_id, started, status in (
            ("early", "2026-11-30T09:00:00.000Z", "done"),
            ("before", "2026-11-30T12:05:00.000Z", "failed"),  # in since's own hour, before it
            ("after", "2026-11-30T12:30:00.000Z", "done"),  # in since's own hour, after it
            ("late", "2026-11-30T15:00:00.000Z", "failed"),
            ("next", "2026-12-01T02:00:00.000Z", "done"),
        ):
            audit.start_run(RunRecord(id=run_id, agent_name="x", model="m", goal="g", mode="auto", started_at=started))
            audit.finish_run(run_id, status=status, duration_ms=1234, iterations=2, tokens_in=10, error="e")
            audit.record_step(run_id, "tool", tool="read_file", ok=1, verdict="run")
        whole, noon, next_day = (
            build_report(audit, since) for since in (None, "2026-11-30T12:15:00.000Z", "2026-12-01T00:00:00.000Z")
        )
    assert (whole["runs"], noon["runs"], next_day["runs"]) == (5, 3, 1)
    assert noon["by_status"] == {"done": 2, "failed": 1} and noon["tokens"]["in"] == 30
    assert [t["calls"] for t in noon["tools"]] == [3] and noon["failures"] == [{"what": "failed | e", "count": 1}]
    assert noon["first_started_at"] == "2026-11-30T12:30:00.000Z"
    assert [(d["day"], d["runs"]) for d in noon["per_day"]] == [("2026-11-30", 1), ("2026-11-30", 1), ("2026-12-01", 1)]
    # durations are counted to two significant figures, rounded up; iterations exactly
    assert whole["duration_ms"] == {"p50": 1300, "p95": 1300, "n": 5} and whole["iterations"]["p50"] == 2
