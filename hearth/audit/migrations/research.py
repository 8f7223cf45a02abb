"""Research runs (hearth/research/): the plan and its revisions, the sources found, the snapshot
of each page read, the evidence taken from them and the report's claims.

Part of the list in hearth/audit/migrations/__init__.py. Never edit a shipped migration: its
name is recorded in each audit.db's `_migrations` as applied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils


def m220_research(db: sqlite_utils.Database) -> None:
    """A research run's record (hearth/audit/research.py), each row keyed by its run and an id the
    run gives it (`S3`, `E7`, a revision's number), so a restarted run that writes the same row
    again changes nothing: `research_plans` the plan as the model proposed it and as an operator
    edited it, `research_sources` what searches found (one row per page, by its canonical URL),
    `research_snapshots` the normalised text of each page read and its SHA-256,
    `research_evidence` the excerpts found word for word in a snapshot, `research_claims` the
    report's claims with the evidence they cite and whether the citation held."""
    keyed = {"run_id": str, "at": str}
    db.table("research_plans").create(
        {**keyed, "revision": int, "by": str, "plan": str, "note": str},
        pk=("run_id", "revision"),
        foreign_keys=[("run_id", "runs", "id")],
    )
    db.table("research_sources").create(
        {**keyed, "id": str, "url": str, "canonical": str, "title": str, "snippet": str, "query": str},
        pk=("run_id", "id"),
        foreign_keys=[("run_id", "runs", "id")],
    )
    db.table("research_sources").create_index(["run_id", "canonical"], unique=True)
    db.table("research_snapshots").create(
        {**keyed, "source_id": str, "url": str, "title": str, "kind": str, "sha256": str, "chars": int, "text": str},
        pk=("run_id", "source_id"),
        foreign_keys=[("run_id", "runs", "id")],
    )
    db.table("research_evidence").create(
        {**keyed, "id": str, "source_id": str, "sub_question": int, "excerpt": str, "note": str, "offset": int},
        pk=("run_id", "id"),
        foreign_keys=[("run_id", "runs", "id")],
    )
    db.table("research_claims").create(
        {**keyed, "n": int, "sub_question": int, "text": str, "evidence": str, "verdict": str, "reason": str},
        pk=("run_id", "n"),
        foreign_keys=[("run_id", "runs", "id")],
    )
