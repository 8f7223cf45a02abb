"""Skills' checks: each `hearth skills check`, its two evals and its verdict.

Part of the list in hearth/audit/migrations/__init__.py. Never edit a shipped migration: its
name is recorded in each audit.db's `_migrations` as applied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils


# the columns of `skill_checks` as m240 made them
_M240_CHECKS: dict[str, type] = {
    "id": str,
    "skill": str,
    "name": str,
    "scope": str,
    "digest": str,
    "suite": str,
    "eval_min": float,
    "eval_with": str,
    "eval_without": str,
    "status": str,
    "rate_with": float,
    "rate_without": float,
    "detail": str,
    "retired": int,
    "requested_by": str,
    "started_at": str,
    "finished_at": str,
}


def m240_skills(db: sqlite_utils.Database) -> None:
    """Skills' checks (hearth/skills/check.py): one row per `hearth skills check`, naming the skill
    (NAME, or PROFILE/NAME for a profile's own), the digest of the content checked, its suite and
    the two evals it started (`eval_runs.id`: with the skill offered, and without it); once both
    have finished, the two pass rates and the verdict (`passed` or `failed`), and whether this
    failure retired a skill that had passed before."""
    db.table("skill_checks").create(_M240_CHECKS, pk="id")
    db.table("skill_checks").create_index(["skill", "started_at"])
    db.table("skill_checks").create_index(["eval_with"])
    db.table("skill_checks").create_index(["eval_without"])
