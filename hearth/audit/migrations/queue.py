"""The queue's rows: the requests accepted and the files refused.

Part of the list in hearth/audit/migrations/__init__.py. Never edit a shipped migration: its
name is recorded in each audit.db's `_migrations` as applied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils


def m030_queue_requests(db: sqlite_utils.Database) -> None:
    """Every request accepted from the queue, body included: the file is removed once it ran."""
    db.table("requests").create(
        {
            "id": str,
            "shape": str,
            "file": str,
            "size": int,
            "sha256": str,
            "source": str,
            "requested_by": str,
            "created_at": str,
            "claimed_at": str,
            "body": str,
        },
        pk="id",
    )
    db.table("runs").create_index(["source"])
    db.table("runs").create_index(["model"])


def m031_queue_rejections(db: sqlite_utils.Database) -> None:
    """A file the queue refused: what it was and why; its run row has status `rejected`."""
    db.table("rejections").create(
        {
            "id": int,
            "run_id": str,
            "at": str,
            "file": str,
            "request_id": str,
            "size": int,
            "sha256": str,
            "reason": str,
            "kept_as": str,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
    )
    db.table("rejections").create_index(["at"])
