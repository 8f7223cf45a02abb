"""Evaluations: a row per `hearth eval run` and one per case, model and repeat.

Part of the list in hearth/audit/migrations/__init__.py. Never edit a shipped migration: its
name is recorded in each audit.db's `_migrations` as applied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils


# the columns of `eval_runs` as m180 made them
_M180_RUNS: dict[str, type] = {
    "id": str,
    "suite": str,
    "created_at": str,
    "requested_by": str,
    "models": str,
    "repeat": int,
    "trigger": str,
    "fingerprint": str,
    "alert_drop": float,
    "status": str,
    "finished_at": str,
    "pass_rate": float,
}


# the columns of `eval_results` as m180 made them
_M180_RESULTS: dict[str, type] = {
    "run_id": str,
    "eval_id": str,
    "case_name": str,
    "model": str,
    "repeat": int,
    "start": str,
    "spec": str,
    "passed": int,
    "checks": str,
    "iterations": int,
    "tokens": int,
    "model_ms": int,
    "wall_ms": int,
    "approvals": int,
    "scored_at": str,
}


def m180_evals(db: sqlite_utils.Database) -> None:
    """Evaluations (hearth/eval/): `eval_runs` holds one row per `hearth eval run` (its suite, the
    models, repeats, who asked, why: the CLI or a mission's regression watch, with the
    configuration's fingerprint it ran under and the pass-rate drop that alerts), `eval_results` one
    row per case, model and repeat, keyed by the ordinary audited run that did it (`runs.id`, whose
    `requested_by` is `eval:EVAL_ID`), with each check's outcome once the run is scored."""
    db.table("eval_runs").create(_M180_RUNS, pk="id")
    db.table("eval_runs").create_index(["suite", "created_at"])
    db.table("eval_results").create(_M180_RESULTS, pk="run_id", foreign_keys=[("eval_id", "eval_runs", "id")])
    db.table("eval_results").create_index(["eval_id"])
