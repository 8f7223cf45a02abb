"""A run's row (`runs`, and its full-text index `runs_fts`): every statement on them.

The AuditStore's run methods write and read single runs; the reads below serve the lists, the
counts and the command center, through the store or its read-only reader (`Rows`).
"""

from __future__ import annotations

from hearth.audit.store import Rows


def status(db: Rows, run_id: str) -> str | None:
    """The run's status; None when the audit has no such run."""
    rows = db.rows("select status from runs where id = ?", [run_id])
    return None if not rows else str(rows[0]["status"])


def statuses(db: Rows, run_ids: list[str]) -> dict[str, str]:
    """The status of each of these runs the audit has."""
    found: dict[str, str] = {}
    for start in range(0, len(run_ids), 500):  # SQLite's limit on a statement's parameters is far above
        chunk = run_ids[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        found |= {
            row["id"]: row["status"] for row in db.rows(f"select id, status from runs where id in ({marks})", chunk)
        }
    return found


def per_worker(db: Rows, id_prefix: str = "") -> dict[str | None, int]:
    """How many runs (of the ids starting with `id_prefix`) each worker ran; None: this box."""
    rows = db.rows(
        "select worker, count(*) as n from runs where substr(id, 1, ?) = ? group by worker", [len(id_prefix), id_prefix]
    )
    return {row["worker"]: int(row["n"]) for row in rows}


def agent_names(db: Rows, run_ids: list[str]) -> dict[str, str]:
    """The profile (agent name) of each of these runs the audit has."""
    marks = ", ".join("?" * len(run_ids))
    return {
        r["id"]: r["agent_name"] for r in db.rows(f"select id, agent_name from runs where id in ({marks})", run_ids)
    }
