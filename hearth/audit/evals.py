"""Evaluations in the audit (migration m180_evals): every statement on eval_runs and eval_results.

An eval run is `eval_runs` plus one `eval_results` row per case, model and repeat, keyed by the
ordinary run that did it: `runs.id`, whose `requested_by` is `eval:EVAL_ID` and `source` `eval`.
hearth/eval/ plans, launches and judges them; this module keeps what it records.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agent.clock import utc_now
from hearth.audit.store import AuditStore, Rows
from hearth.errors import NotFound

REQUESTED_BY = "eval:"


@dataclass(frozen=True)
class Item:
    """One run of one case for one model: what the eval queues."""

    run_id: str
    case_name: str
    model: str
    repeat: int
    start: dict[str, str]
    spec: dict[
        str, Any
    ]  # the case as it runs (hearth/eval/suite.py's case_spec): later edits of the file do not re-score it


def record_eval(audit: AuditStore, eval_row: dict[str, Any], items: list[Item]) -> None:
    """The eval run and its planned items, in one transaction: before any request is queued, so a
    run's admission finds its row (hearth/eval/seed.py)."""
    with audit.transaction():
        audit.insert("eval_runs", {**eval_row, "models": json.dumps(eval_row["models"]), "status": "running"})
        for item in items:
            audit.insert(
                "eval_results",
                {
                    "run_id": item.run_id,
                    "eval_id": eval_row["id"],
                    "case_name": item.case_name,
                    "model": item.model,
                    "repeat": item.repeat,
                    "start": json.dumps(item.start),
                    "spec": json.dumps(item.spec),
                },
            )


def item_of(audit: Rows, run_id: str) -> dict[str, Any] | None:
    found = audit.rows("select * from eval_results where run_id = ?", [run_id])
    return found[0] if found else None


def eval_row(audit: Rows, eval_id: str) -> dict[str, Any]:
    found = audit.rows("select * from eval_runs where id = ?", [eval_id])
    if not found:
        raise NotFound(f"no eval run {eval_id!r}; `hearth eval show` lists them")
    return {**found[0], "models": json.loads(found[0]["models"] or "[]")}


def eval_rows(audit: Rows, suite: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
    where, params = ("where suite = ?", [suite]) if suite else ("", [])
    found = audit.rows(
        f"select * from eval_runs {where} order by created_at desc, rowid desc limit {int(limit)}", params
    )
    return [{**r, "models": json.loads(r["models"] or "[]")} for r in found]


def results_of(audit: Rows, eval_id: str) -> list[dict[str, Any]]:
    """Each item of the eval with its run's status and error (None until the run exists)."""
    found = audit.rows(
        "select e.*, r.status as status, r.error as error, r.summary as summary from eval_results e "
        "left join runs r on r.id = e.run_id where e.eval_id = ? order by e.rowid",
        [eval_id],
    )
    return [{**r, "checks": json.loads(r["checks"]) if r["checks"] else None} for r in found]


def record_score(
    audit: AuditStore, run_id: str, passed: bool, checks: list[dict[str, Any]], facts: dict[str, int]
) -> None:
    fields = {"passed": int(passed), "checks": json.dumps(checks), "scored_at": utc_now(), **facts}
    audit.update("eval_results", run_id, fields, pk="run_id")


def finish_eval(audit: AuditStore, eval_id: str, pass_rate: float) -> bool:
    """Mark the eval finished once (True only for the caller that did)."""
    cursor = audit.conn.execute(
        "update eval_runs set status = 'done', finished_at = ?, pass_rate = ? where id = ? and status = 'running'",
        [utc_now(), pass_rate, eval_id],
    )
    return cursor.rowcount == 1


def unscored(db: Rows, eval_id: str) -> list[dict[str, Any]]:
    """The eval's items not judged yet."""
    return db.rows("select * from eval_results where eval_id = ? and scored_at is null", [eval_id])


def last_fingerprint(db: Rows, trigger: str, suite: str) -> str | None:
    """The configuration's fingerprint the latest eval of `suite` fired by `trigger` ran under."""
    found = db.rows(
        "select fingerprint from eval_runs where trigger = ? and suite = ? order by created_at desc, rowid desc limit 1",
        [trigger, suite],
    )
    return found[0]["fingerprint"] if found else None


def previous_eval(audit: Rows, suite: str, eval_id: str, created_at: str) -> dict[str, Any] | None:
    """The finished eval of the same suite just before this one (the baseline a regression is measured from)."""
    found = audit.rows(
        "select * from eval_runs where suite = ? and id != ? and status = 'done' and created_at <= ? "
        "order by created_at desc, rowid desc limit 1",
        [suite, eval_id, created_at],
    )
    return {**found[0], "models": json.loads(found[0]["models"] or "[]")} if found else None
