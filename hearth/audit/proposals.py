"""Self-evolution proposals (`proposals`, one per `hearth evolve`, hearth/evolve.py) and a person's
decision on each (`proposal_decisions`, hearth/web/routes/decisions.py): every statement on them."""

from __future__ import annotations

from typing import Any

from hearth.audit.store import AuditStore, Rows

COLUMNS = (
    "id",
    "goal",
    "repo",
    "branch",
    "base_commit",
    "status",
    "run_status",
    "head_commit",
    "check_passed",
    "check_log",
    "diff",
    "diffstat",
    "security_flag",
    "security_reasons",
    "created_at",
)
DECISION_COLUMNS = ("proposal_id", "decision", "decided_by", "decided_at", "reason")


def save(audit: AuditStore, row: dict[str, Any]) -> None:
    """The proposal's row (every one of COLUMNS), written anew or over the one with its id."""
    names = ", ".join(COLUMNS)
    changes = ", ".join(f"{name} = excluded.{name}" for name in COLUMNS if name != "id")
    sql = f"insert into proposals ({names}) values ({', '.join('?' * len(COLUMNS))}) on conflict(id) do update set {changes}"
    audit.conn.execute(sql, [row[name] for name in COLUMNS])


def latest(db: Rows, limit: int) -> list[dict[str, Any]]:
    return db.rows("select * from proposals order by created_at desc, rowid desc limit ?", [limit])


def find(audit: AuditStore, prefix: str) -> dict[str, Any] | None:
    """A proposal by its id or a unique prefix of it."""
    return audit.find_by_id_or_prefix("proposals", prefix)


def decision(db: Rows, proposal_id: str) -> dict[str, Any] | None:
    found = db.rows("select * from proposal_decisions where proposal_id = ?", [proposal_id])
    return found[0] if found else None


def decide(audit: AuditStore, row: dict[str, Any]) -> None:
    """A person's decision (every one of DECISION_COLUMNS); one per proposal."""
    marks = ", ".join("?" * len(DECISION_COLUMNS))
    sql = f"insert into proposal_decisions ({', '.join(DECISION_COLUMNS)}) values ({marks})"
    audit.conn.execute(sql, [row[name] for name in DECISION_COLUMNS])
