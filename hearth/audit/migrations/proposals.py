"""Self-evolution proposals and a person's decision on each.

Part of the list in hearth/audit/migrations/__init__.py. Never edit a shipped migration: its
name is recorded in each audit.db's `_migrations` as applied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils


def m040_proposals(db: sqlite_utils.Database) -> None:
    """Self-evolution proposals (hearth/evolve.py): one row per `hearth evolve`, keyed by its run id."""
    db.table("proposals").create(
        {
            "id": str,
            "goal": str,
            "repo": str,
            "branch": str,
            "base_commit": str,
            "status": str,
            "run_status": str,
            "head_commit": str,
            "check_passed": int,
            "check_log": str,
            "diff": str,
            "diffstat": str,
            "security_flag": int,
            "security_reasons": str,
            "created_at": str,
        },
        pk="id",
    )
    db.table("proposals").create_index(["created_at"])


def m157_proposal_decisions(db: sqlite_utils.Database) -> None:
    """A person's decision on a self-evolution proposal (hearth/web/routes/decisions.py): accepted
    (to apply by hand: hearth never applies one) or rejected, by whom, when and why; one per proposal."""
    db.table("proposal_decisions").create(
        {"proposal_id": str, "decision": str, "decided_by": str, "decided_at": str, "reason": str},
        pk="proposal_id",
    )
