"""Skills' checks (migration m240_skills): every statement on `skill_checks`.

    skill_checks   one row per `hearth skills check`: the skill and the digest of what was checked,
                   the eval run with it and the one without it, then both pass rates and the verdict

hearth/skills/ decides what the rows mean (offered, retired, ...); this module keeps them.
"""

from __future__ import annotations

from typing import Any

from hearth.audit.store import AuditStore, Rows

COLUMNS = (
    "id",
    "skill",
    "name",
    "scope",
    "digest",
    "suite",
    "eval_min",
    "eval_with",
    "eval_without",
    "status",
    "requested_by",
    "started_at",
)
VERDICTS = ("passed", "failed")


def start(audit: AuditStore, row: dict[str, Any]) -> None:
    """A check begun (every one of COLUMNS; status `running`)."""
    marks = ", ".join("?" * len(COLUMNS))
    audit.conn.execute(f"insert into skill_checks ({', '.join(COLUMNS)}) values ({marks})", [row[c] for c in COLUMNS])


def finish(audit: AuditStore, check_id: str, verdict: dict[str, Any]) -> bool:
    """The verdict of a running check, once (True only for the caller that recorded it)."""
    if verdict["status"] not in VERDICTS:
        raise ValueError(f"a check ends passed or failed, not {verdict['status']!r}")
    cursor = audit.conn.execute(
        "update skill_checks set status = ?, rate_with = ?, rate_without = ?, detail = ?, retired = ?, "
        "finished_at = ? where id = ? and status = 'running'",
        [
            verdict["status"],
            verdict["rate_with"],
            verdict["rate_without"],
            verdict["detail"],
            int(verdict["retired"]),
            verdict["finished_at"],
            check_id,
        ],
    )
    return cursor.rowcount == 1


def running(db: Rows) -> list[dict[str, Any]]:
    return db.rows("select * from skill_checks where status = 'running' order by started_at, rowid")


def history(db: Rows, skill: str, limit: int = 20) -> list[dict[str, Any]]:
    """The skill's checks, newest first."""
    return db.rows(
        "select * from skill_checks where skill = ? order by started_at desc, rowid desc limit ?", [skill, limit]
    )


def latest(db: Rows) -> list[dict[str, Any]]:
    """Every check, newest first per skill (what the states are read from)."""
    return db.rows("select * from skill_checks order by skill, started_at desc, rowid desc")


def of_eval(db: Rows, eval_id: str) -> dict[str, Any] | None:
    """The check that started eval `eval_id` (as its `with` or its `without` run), if one did."""
    found = db.rows("select * from skill_checks where eval_with = ? or eval_without = ? limit 1", [eval_id, eval_id])
    return found[0] if found else None


def one(db: Rows, check_id: str) -> dict[str, Any] | None:
    found = db.rows("select * from skill_checks where id = ?", [check_id])
    return found[0] if found else None
