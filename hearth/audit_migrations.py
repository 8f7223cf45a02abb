"""Migrations of audit.db: a list of small functions, applied once each, in order.

Never edit a shipped migration; add a new one at the end. Their names are recorded in
`_migrations`, so a rename re-runs it.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlite_utils


def m001_runs_and_steps(db: sqlite_utils.Database) -> None:
    db["runs"].create(
        {
            "id": str, "agent_name": str, "model": str, "goal": str, "mode": str, "source": str,
            "requested_by": str, "workspace": str, "sandbox": str, "status": str,
            "started_at": str, "ended_at": str, "iterations": int, "tokens_in": int,
            "tokens_out": int, "latency_ms": int, "duration_ms": int, "error": str, "summary": str,
        },
        pk="id",
    )
    db["runs"].create_index(["started_at"])
    db["runs"].create_index(["status"])
    db["steps"].create(
        {
            "id": int, "run_id": str, "seq": int, "at": str, "kind": str, "iteration": int,
            "tool": str, "arguments": str, "output": str, "ok": int, "duration_ms": int,
            "verdict": str, "tokens_in": int, "tokens_out": int, "detail": str,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
    )
    db["steps"].create_index(["run_id", "seq"], unique=True)


def m030_queue_requests(db: sqlite_utils.Database) -> None:
    """Every request accepted from the queue, body included: the file is removed once it ran."""
    db["requests"].create(
        {
            "id": str, "shape": str, "file": str, "size": int, "sha256": str, "source": str,
            "requested_by": str, "created_at": str, "claimed_at": str, "body": str,
        },
        pk="id",
    )
    db["runs"].create_index(["source"])
    db["runs"].create_index(["model"])


def m031_queue_rejections(db: sqlite_utils.Database) -> None:
    """A file the queue refused: what it was and why; its run row has status `rejected`."""
    db["rejections"].create(
        {
            "id": int, "run_id": str, "at": str, "file": str, "request_id": str, "size": int,
            "sha256": str, "reason": str, "kept_as": str,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
    )
    db["rejections"].create_index(["at"])


MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = [
    m001_runs_and_steps,
    m030_queue_requests,
    m031_queue_rejections,
]
