"""Runs on other boxes: the workers, the requests sent to them, the events they sent, the door.

Part of the list in hearth/audit/migrations/__init__.py. Never edit a shipped migration: its
name is recorded in each audit.db's `_migrations` as applied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils


# the columns of `fleet_workers` as m201 made them
_M201_WORKERS: dict[str, type] = {
    "name": str,
    "digest": str,
    "labels": str,
    "models": str,
    "running": str,
    "seen_at": float,
    "created_at": str,
    "created_by": str,
}


# the columns of `fleet_runs` as m201 made them
_M201_RUNS: dict[str, type] = {
    "run_id": str,
    "queue": str,
    "model": str,
    "label": str,
    "sent_at": float,
    "worker": str,
    "claimed_at": float,
    "stop_by": str,
    "stop_status": str,
    "refused": int,
    "lost": str,
}


def m201_fleet(db: sqlite_utils.Database) -> None:
    """Runs on other boxes (hearth/fleet/): `fleet_workers` one row per worker the hub knows (the
    SHA-256 of its token, never the token; its labels; what its last heartbeat said: the models its
    Ollama hosts have, the runs it holds, when), `fleet_runs` one row per request sent to Celery
    (its queue, the worker that claimed it, a stop asked of it and the status it ends with,
    redeliveries refused), and
    `fleet_events` the id of every event a worker sent that the hub wrote (a repeat is ignored), its
    kind and its lag (written here against its stamp on the worker, for bench/fleet.py and /metrics),
    `fleet_door` since when the hub's /fleet door has been up, and when it last said so.
    `runs.worker` names the worker a run ran on (null: this box)."""
    db.table("runs").add_column("worker", str)
    db.table("fleet_workers").create(_M201_WORKERS, pk="name")
    db.table("fleet_workers").create_index(["digest"], unique=True)
    db.table("fleet_runs").create(_M201_RUNS, pk="run_id", defaults={"refused": 0})
    db.table("fleet_events").create(
        {"id": str, "run_id": str, "worker": str, "at": float, "kind": str, "lag_ms": float}, pk="id"
    )
    db.table("fleet_door").create({"id": int, "up_since": float, "alive_at": float}, pk="id")
