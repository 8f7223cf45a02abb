"""The audit store on real SQLite files: migrations, caps, concurrent writers, plain readability."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils

from hearth.audit.migrations import MIGRATIONS
from hearth.audit.store import ARGUMENTS_CAP, OUTPUT_CAP, AuditStore, RunRecord


def record(run_id: str = "r1") -> RunRecord:
    return RunRecord(id=run_id, agent_name="a", model="m", goal="g", mode="auto")


def test_migrations_apply_once_and_are_recorded(tmp_path: Path) -> None:
    path = tmp_path / "audit.db"
    AuditStore(path).close()
    AuditStore(path).close()
    names = [r[0] for r in sqlite3.connect(path).execute("select name from _migrations")]
    assert names == [m.__name__ for m in MIGRATIONS]


def test_the_database_is_in_wal_mode_and_plain_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "audit.db"
    with AuditStore(path) as audit:
        audit.start_run(record())
    assert sqlite3.connect(path).execute("pragma journal_mode").fetchone()[0] == "wal"
    assert sqlite_utils.Database(path)["runs"].count == 1


def test_steps_are_numbered_and_big_arguments_and_outputs_are_capped(tmp_path: Path) -> None:
    with AuditStore(tmp_path / "audit.db") as audit:
        audit.start_run(record())
        audit.record_step("r1", "tool", tool="write_file", arguments={"content": "x" * 50_000}, output="y" * 50_000)
        audit.record_step("r1", "model", output="fine")
        first, second = audit.steps("r1")
    assert (first["seq"], second["seq"]) == (1, 2)
    assert len(first["arguments"]) < ARGUMENTS_CAP + 100 and "characters not stored" in first["arguments"]
    assert len(first["output"]) < OUTPUT_CAP + 100


def test_a_run_is_found_by_a_unique_prefix_only(tmp_path: Path) -> None:
    with AuditStore(tmp_path / "audit.db") as audit:
        audit.start_run(record("20260101T000000-aaaaaa"))
        audit.start_run(record("20260101T000000-aabbbb"))
        assert audit.find_run("20260101T000000-aab")["id"] == "20260101T000000-aabbbb"
        assert audit.find_run("20260101T000000-aa") is None
        assert audit.find_run("2026010_") is None  # '_' is not a wildcard


def _writer(path: str, run_id: str, count: int) -> None:
    with AuditStore(path) as audit:
        audit.start_run(record(run_id))
        for i in range(count):
            audit.record_step(run_id, "tool", tool="list_files", output=str(i))
        audit.finish_run(run_id, status="done")


def test_concurrent_processes_write_their_runs_without_losing_a_step(tmp_path: Path) -> None:
    path = str(tmp_path / "audit.db")
    AuditStore(path).close()
    procs = [multiprocessing.Process(target=_writer, args=(path, f"run{i}", 50)) for i in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    conn = sqlite3.connect(path)
    assert conn.execute("select count(*) from steps").fetchone()[0] == 300
    assert conn.execute("select count(*) from runs where status = 'done'").fetchone()[0] == 6
    per_run = conn.execute("select run_id, max(seq), count(*) from steps group by run_id").fetchall()
    assert all(top == n == 50 for _, top, n in per_run)


def _open_at_once(path: str, barrier: Any, out: Any) -> None:
    barrier.wait()
    try:
        AuditStore(path).close()
        out.put("ok")
    except Exception as exc:  # the failure is the result under test
        out.put(f"{type(exc).__name__}: {exc}")


def test_processes_creating_the_database_at_the_same_moment_all_open_it(tmp_path: Path) -> None:
    # Switching a new file to WAL answers "locked" at once, without waiting, while another process
    # creates it: two spawners starting together on a fresh host hit exactly this.
    for attempt in range(5):
        path = str(tmp_path / f"fresh-{attempt}.db")
        barrier, out = multiprocessing.Barrier(8), multiprocessing.Queue()
        procs = [multiprocessing.Process(target=_open_at_once, args=(path, barrier, out)) for _ in range(8)]
        for p in procs:
            p.start()
        results = [out.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(60)
        assert results == ["ok"] * 8


def test_a_run_made_from_another_names_it_and_is_listed_from_it(tmp_path: Path) -> None:
    with AuditStore(tmp_path / "audit.db") as audit:
        audit.start_run(RunRecord(id="first", agent_name="a", model="m", goal="g", mode="auto"))
        audit.start_run(
            RunRecord(
                id="again",
                agent_name="a",
                model="m",
                goal="and the docs",
                mode="auto",
                parent_run="first",
                link="follow-up",
            )
        )
        assert audit.run("again")["parent_run"] == "first" and audit.run("again")["link"] == "follow-up"
        assert [r["id"] for r in audit.linked("first")] == ["again"] and audit.linked("again") == []


def test_the_store_writes_only_columns_its_tables_have_and_never_a_rows_key(tmp_path: Path) -> None:
    from hearth.audit.store import ColumnRefused

    with AuditStore(tmp_path / "audit.db") as audit:
        for run_id in ("r1", "r2"):
            audit.start_run(record(run_id))
        audit.update_run("r2", summary="kept")
        refused = [
            lambda: audit.update_run("r1", **{'summary" = ? where "id" = \'r2\' --': "x"}),
            lambda: audit.update_run("r1", id="r2"),
            lambda: audit.finish_run("r1", if_running=True, **{"status\" = 'done' --": 1}),
            lambda: audit.record_step("r1", "note", seq=1),
            lambda: audit.open_step("r1", "tool", id=1),
            lambda: audit.close_step(audit.open_step("r1", "tool", opens="k"), seq=9),
            lambda: audit.insert("no_such_table", {"a": 1}),
        ]
        for write in refused:
            with pytest.raises(ColumnRefused):
                write()
        assert (audit.run("r2") or {})["summary"] == "kept"
        assert audit.steps("r2") == [] and (audit.run("r1") or {})["status"] == "running"
