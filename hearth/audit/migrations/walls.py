"""What a run's walls saw and kept: workspace checkpoints, connections through its proxy,
tripwires, and the security page's indexes over them.

Part of the list in hearth/audit/migrations/__init__.py. Never edit a shipped migration: its
name is recorded in each audit.db's `_migrations` as applied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils


def m050_checkpoints(db: sqlite_utils.Database) -> None:
    """Workspace checkpoints (hearth/run/checkpoints.py): one row per phase of a run, commit or not."""
    db.table("checkpoints").create(
        {
            "id": int,
            "run_id": str,
            "at": str,
            "phase": str,
            "status": str,
            "commit_sha": str,
            "tag": str,
            "files": int,
            "detail": str,
            "workspace": str,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
    )
    db.table("checkpoints").create_index(["run_id"])


def m060_connections(db: sqlite_utils.Database) -> None:
    """Every connection a command made through the run's proxy (agent/net/cmdproxy.py), allowed or not."""
    db.table("connections").create(
        {
            "id": int,
            "run_id": str,
            "at": str,
            "host": str,
            "port": int,
            "method": str,
            "allowed": int,
            "reason": str,
            "bytes_up": int,
            "bytes_down": int,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
    )
    db.table("connections").create_index(["run_id"])


def m061_tripwires(db: sqlite_utils.Database) -> None:
    """What touched which decoy secret and how (hearth/run/walls.py), and what the run did about it."""
    db.table("tripwires").create(
        {"id": int, "run_id": str, "at": str, "decoy": str, "how": str, "tool": str, "action": str},
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
    )
    db.table("tripwires").create_index(["run_id"])


def m062_checkpoint_git_dir(db: sqlite_utils.Database) -> None:
    """Where a checkpoint's history lives when it is hearth's own git directory, not the workspace's."""
    db.table("checkpoints").add_column("git_dir", str)


def m156_security_indexes(db: sqlite_utils.Database) -> None:
    """The security page's reads across runs (hearth/web/routes/security.py): denied calls and
    credential uses, each a partial index holding only those steps, so it costs nothing per other
    step and the page reads no full table; connections and tripwires by time."""
    db.execute("create index if not exists idx_steps_denied on steps(id) where verdict = 'denied'")
    db.execute("create index if not exists idx_steps_credential on steps(id) where kind = 'credential'")
    db.table("connections").create_index(["at"], if_not_exists=True)
    db.table("tripwires").create_index(["at"], if_not_exists=True)
