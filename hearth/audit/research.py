"""A research run's record: its plan's revisions (`research_plans`), the sources its searches found
(`research_sources`), the snapshot of each page it read (`research_snapshots`), the evidence it
took from them (`research_evidence`) and its report's claims (`research_claims`). Every statement
on them is here.

The run writes its rows through its recorder (hearth/run/events.py's `ResearchKept`, into `keep`);
each row carries the id the run gave it (`S3`, `E7`, a claim's number), so writing it again (a
restarted run, a replayed stream) changes nothing. An operator's edit of a plan waiting for
approval is the one row written from outside the run (`revise`, hearth/research/plan.py).
"""

from __future__ import annotations

from typing import Any

from hearth.audit.rows import ColumnRefused, Rows, Writer

# what a ResearchKept record names -> its table (a closed list: no record names a table itself)
TABLES = {
    "plan": "research_plans",
    "source": "research_sources",
    "snapshot": "research_snapshots",
    "evidence": "research_evidence",
    "claim": "research_claims",
}
PLAIN = (str, int, float, type(None))


def check(db: Writer, what: str, row: dict[str, Any]) -> str:
    """The table a record of `what` goes to; ColumnRefused for anything else, or a row naming a
    column that table does not have, its run, or a value that is not plain."""
    table = TABLES.get(what)
    if table is None:
        raise ColumnRefused(f"a research record of {what!r} is none of {', '.join(TABLES)}; nothing was written")
    db.checked(table, row, fixed=("run_id", "at"))
    for key, value in row.items():
        if not isinstance(value, PLAIN) or isinstance(value, bool):
            raise ColumnRefused(f"{table}.{key} must be a plain value; nothing was written")
    return table


def keep(db: Writer, run_id: str, what: str, row: dict[str, Any], at: str) -> None:
    """One row of the run's research record; a row it holds already (same key) is left as it is."""
    table = check(db, what, row)
    db.insert(table, {**row, "run_id": run_id, "at": at}, or_ignore=True)


def revise(db: Writer, run_id: str, plan: str, by: str, note: str, at: str) -> int:
    """An operator's revision of the run's plan (JSON text); its number."""
    with db.transaction():
        rows = db.rows("select coalesce(max(revision), 0) as n from research_plans where run_id = ?", [run_id])
        revision = int(rows[0]["n"]) + 1
        db.insert(
            "research_plans", {"run_id": run_id, "revision": revision, "at": at, "by": by, "plan": plan, "note": note}
        )
    return revision


def plans(db: Rows, run_id: str) -> list[dict[str, Any]]:
    """Every revision of the run's plan, the first (the model's) first."""
    return db.rows("select * from research_plans where run_id = ? order by revision", [run_id])


def sources(db: Rows, run_id: str) -> list[dict[str, Any]]:
    """The sources the run's searches found, in the order found."""
    return db.rows("select * from research_sources where run_id = ? order by rowid", [run_id])


def snapshots(db: Rows, run_id: str, *, text: bool = False) -> list[dict[str, Any]]:
    """The pages the run read, in the order read; their text only when asked (it may be long)."""
    shown = "*" if text else "run_id, at, source_id, url, title, kind, sha256, chars"
    return db.rows(f"select {shown} from research_snapshots where run_id = ? order by rowid", [run_id])


def snapshot_text(db: Rows, run_id: str, source_id: str) -> str | None:
    rows = db.rows("select text from research_snapshots where run_id = ? and source_id = ?", [run_id, source_id])
    return str(rows[0]["text"]) if rows else None


def evidence(db: Rows, run_id: str) -> list[dict[str, Any]]:
    """The run's evidence, in the order it was kept."""
    return db.rows("select * from research_evidence where run_id = ? order by rowid", [run_id])


def claims(db: Rows, run_id: str) -> list[dict[str, Any]]:
    """The report's claims, in the synthesis's order."""
    return db.rows("select * from research_claims where run_id = ? order by n", [run_id])
