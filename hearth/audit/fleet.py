"""Runs on other boxes, as the hub keeps them (hearth/remote/hub.py decides; this module holds every
statement on the four tables):

    fleet_workers   one row per worker: its token's SHA-256, labels, what its last heartbeat said
    fleet_runs      one row per request sent to the broker: its queue, the worker that claimed it,
                    a stop asked of it, redeliveries refused, why it was lost
    fleet_events    the id of every event a worker sent that the hub wrote, its kind and its lag
    fleet_door      since when the hub's /fleet door is up, and when it last said so
"""

from __future__ import annotations

import time
from typing import Any

from hearth.audit.store import AuditStore, Rows, immediate

# the columns a worker's row is read with by anyone who is not identifying it: never its digest
WORKER_COLUMNS = "name, labels, models, running, seen_at, created_at, created_by"


# -- workers ------------------------------------------------------------------------------------
def add_worker(audit: AuditStore, row: dict[str, Any]) -> bool:
    """A new worker's row; False, and nothing written, when a worker of that name exists."""
    with immediate(audit.conn):
        if audit.rows("select 1 from fleet_workers where name = ?", [row["name"]]):
            return False
        audit.conn.execute(
            "insert into fleet_workers (name, digest, labels, models, running, seen_at, created_at, created_by) "
            "values (:name, :digest, :labels, :models, :running, null, :created_at, :created_by)",
            row,
        )
    return True


def set_labels(audit: AuditStore, name: str, labels: str) -> bool:
    """The worker's labels (JSON); False when no worker has that name."""
    cursor = audit.conn.execute("update fleet_workers set labels = ? where name = ?", [labels, name])
    return cursor.rowcount > 0


def remove_worker(audit: AuditStore, name: str) -> bool:
    return audit.conn.execute("delete from fleet_workers where name = ?", [name]).rowcount > 0


def workers(db: Rows) -> list[dict[str, Any]]:
    return db.rows(f"select {WORKER_COLUMNS} from fleet_workers order by name")


def worker_named(db: Rows, name: str) -> dict[str, Any] | None:
    rows = db.rows(f"select {WORKER_COLUMNS} from fleet_workers where name = ?", [name])
    return rows[0] if rows else None


def worker_with_digest(db: Rows, digest: str) -> dict[str, Any] | None:
    rows = db.rows(f"select {WORKER_COLUMNS} from fleet_workers where digest = ?", [digest])
    return rows[0] if rows else None


def heard(audit: AuditStore, name: str, *, models: str | None = None, running: str | None = None) -> None:
    """The worker was heard now; with a heartbeat, what it said it has (JSON lists)."""
    if models is None or running is None:
        audit.conn.execute("update fleet_workers set seen_at = ? where name = ?", [time.time(), name])
        return
    audit.conn.execute(
        "update fleet_workers set models = ?, running = ?, seen_at = ? where name = ?",
        [models, running, time.time(), name],
    )


# -- the requests sent --------------------------------------------------------------------------
def sent(audit: AuditStore, run_id: str, queue: str, model: str | None, label: str | None) -> None:
    """The request went to the broker (again, for a run that goes on: its claim stays)."""
    audit.conn.execute(
        "insert into fleet_runs (run_id, queue, model, label, sent_at, refused) values (?, ?, ?, ?, ?, 0) "
        "on conflict(run_id) do update set queue = excluded.queue, sent_at = excluded.sent_at",
        [run_id, queue, model, label, time.time()],
    )


def unsent(audit: AuditStore, run_id: str, before: dict[str, Any] | None) -> None:
    """The broker did not take what `sent` recorded: the row as it was `before` (none: no row)."""
    if before is None:
        audit.conn.execute("delete from fleet_runs where run_id = ?", [run_id])
        return
    audit.conn.execute(
        "update fleet_runs set queue = ?, sent_at = ? where run_id = ?", [before["queue"], before["sent_at"], run_id]
    )


def fleet_run(db: Rows, run_id: str) -> dict[str, Any] | None:
    rows = db.rows("select * from fleet_runs where run_id = ?", [run_id])
    return rows[0] if rows else None


def claimed(audit: AuditStore, run_id: str, worker: str | None = None) -> None:
    """The run's request claimed now: by `worker`, or again by the worker that holds it (a resume)."""
    if worker is None:
        audit.conn.execute("update fleet_runs set claimed_at = ? where run_id = ?", [time.time(), run_id])
        return
    audit.conn.execute(
        "update fleet_runs set worker = ?, claimed_at = ? where run_id = ?", [worker, time.time(), run_id]
    )


def refused(audit: AuditStore, run_id: str) -> None:
    """A redelivery of the run's request was refused: counted."""
    audit.conn.execute("update fleet_runs set refused = refused + 1 where run_id = ?", [run_id])


def refused_total(db: Rows) -> int:
    rows = db.rows("select coalesce(sum(refused), 0) as n from fleet_runs")
    return int(rows[0]["n"]) if rows else 0


def ask_stop(audit: AuditStore, run_id: str, by: str, status: str) -> None:
    """The run's worker stops it at its next heartbeat (the first stop asked is the one kept)."""
    audit.conn.execute(
        "update fleet_runs set stop_by = ?, stop_status = ? where run_id = ? and stop_by is null", [by, status, run_id]
    )


def mark_lost(audit: AuditStore, run_id: str, reason: str) -> None:
    audit.conn.execute("update fleet_runs set lost = ? where run_id = ?", [reason, run_id])


def stops(db: Rows, worker: str) -> list[dict[str, Any]]:
    """The worker's runs it must stop: run_id and why (a stop asked, or the run lost)."""
    return db.rows(
        "select run_id, coalesce(stop_by, lost) as why from fleet_runs "
        "where worker = ? and (stop_by is not null or lost is not null)",
        [worker],
    )


def waiting(db: Rows, limit: int = 200) -> list[dict[str, Any]]:
    """The requests in the broker that no worker has claimed and that have no run, oldest first."""
    return db.rows(
        "select f.run_id, f.queue, f.model, f.label, f.sent_at, f.refused from fleet_runs f "
        "left join runs r on r.id = f.run_id where f.worker is null and r.id is null order by f.sent_at limit ?",
        [limit],
    )


# -- the events written -------------------------------------------------------------------------
def event_written(db: Rows, event_id: str) -> bool:
    return bool(db.rows("select 1 from fleet_events where id = ?", [event_id]))


def write_event(audit: AuditStore, event_id: str, run_id: str, worker: str, kind: str, lag_ms: float | None) -> None:
    audit.conn.execute(
        "insert into fleet_events (id, run_id, worker, at, kind, lag_ms) values (?, ?, ?, ?, ?, ?)",
        [event_id, run_id, worker, time.time(), kind, lag_ms],
    )


def lags(db: Rows, kind: str, run_prefix: str = "") -> list[float]:
    """How long after their worker stamped them the hub wrote the events of `kind` (ms), for
    the runs whose id starts with `run_prefix`."""
    rows = db.rows(
        "select lag_ms from fleet_events where kind = ? and substr(run_id, 1, ?) = ? and lag_ms is not null",
        [kind, len(run_prefix), run_prefix],
    )
    return [float(row["lag_ms"]) for row in rows]


# -- the door -----------------------------------------------------------------------------------
def door_alive(audit: AuditStore, up_since: float, alive_at: float) -> None:
    audit.conn.execute(
        "insert into fleet_door (id, up_since, alive_at) values (1, ?, ?) "
        "on conflict(id) do update set up_since = excluded.up_since, alive_at = excluded.alive_at",
        [up_since, alive_at],
    )


def door(db: Rows) -> dict[str, Any] | None:
    rows = db.rows("select up_since, alive_at from fleet_door where id = 1")
    return rows[0] if rows else None
