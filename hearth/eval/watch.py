"""Scoring as runs end, an eval finished once, and the regression watch.

    score(settings, eval_id)          every finished, unscored run of the eval judged by its case's
                                      checks (hearth/eval/checks.py); the eval finished when none is left
    after_run(settings, run_id)       the spawner's word that a run ended: an eval's run is scored now
    watch_fired(settings, ...)        a mission that names a suite: when the router, a profile or the
                                      default model changed since its last eval, the suite runs again

When an eval that carries a threshold (`alert_drop`) finishes, its pass rate is compared with the
suite's previous finished eval; a drop beyond the threshold is an `eval_regression` alert naming
the cases that got worse (hearth/leash/alerts.py).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from hearth.audit.evals import (
    eval_row,
    finish_eval,
    item_of,
    last_fingerprint,
    previous_eval,
    record_score,
    results_of,
    unscored,
)
from hearth.audit.store import AuditStore
from hearth.errors import HearthError
from hearth.eval.checks import facts, judge_run
from hearth.eval.results import diff, matrix, pass_rate
from hearth.eval.suite import case_from_spec
from hearth.leash import alerts
from hearth.settings import Settings

FINAL_PENDING = ("running", "waiting")


def score(settings: Settings, eval_id: str, only: str | None = None) -> int:
    """Judge the eval's finished runs not yet judged (`only`: just that one, as a run's own unit sees
    no other run's workspace); how many were. Finishes the eval once all are judged."""
    with AuditStore(settings.audit_path) as audit:
        scored = 0
        for row in unscored(audit, eval_id):
            if only is not None and row["run_id"] != only:
                continue
            run = audit.run(row["run_id"])
            if run is None or run["status"] in FINAL_PENDING:
                continue
            case = case_from_spec(_json(row["spec"]))
            results = judge_run(case, audit, run, settings)
            record_score(
                audit, row["run_id"], all(r.passed for r in results), [r.row() for r in results], facts(audit, run)
            )
            scored += 1
        rows = results_of(audit, eval_id)
        if all(r["scored_at"] is not None for r in rows) and finish_eval(audit, eval_id, pass_rate(rows) or 0.0):
            _regression(settings, audit, eval_row(audit, eval_id))
    return scored


def _json(text: str | None) -> dict[str, Any]:
    import json

    value = json.loads(text or "{}")
    return value if isinstance(value, dict) else {}


def after_run(settings: Settings, run_id: str) -> None:
    """Score the eval of `run_id`, if it is an eval's; never raises (a run's end must not fail for it)."""
    try:
        with AuditStore(settings.audit_path) as audit:
            item = item_of(audit, run_id)
        if item is not None:
            score(settings, item["eval_id"], only=run_id)
    except (HearthError, OSError, ValueError) as exc:
        print(f"hearth: cannot score eval run {run_id}: {exc}; `hearth eval show` scores it again")


def _regression(settings: Settings, audit: AuditStore, row: dict[str, Any]) -> None:
    if row.get("alert_drop") is None:
        return
    before = previous_eval(audit, row["suite"], row["id"], row["created_at"])
    if before is None or before.get("pass_rate") is None:
        return
    drop = float(before["pass_rate"]) - float(row["pass_rate"] or 0.0)
    if drop <= float(row["alert_drop"]):
        return
    change = diff(matrix(before, results_of(audit, before["id"])), matrix(row, results_of(audit, row["id"])))
    worse = ", ".join(change["worse"]) or "none by case"
    title = f"hearth: eval {row['suite']} pass rate fell from {before['pass_rate']:.0%} to {row['pass_rate']:.0%}"
    body = f"{row['trigger']}: eval {row['id']} against {before['id']}; worse: {worse}\nhearth eval diff {before['id']} {row['id']}"
    if settings.web_url:
        body += f"\n{settings.web_url}/evals?id={row['id']}"
    alerts.notify(settings, alerts.Alert("eval_regression", title, body))


def fingerprint(settings: Settings) -> str:
    """What a change to re-run the suite for is: router.toml, every profile's files, the default model."""
    digest = hashlib.sha256(f"model={settings.model}\n".encode())
    config = settings.config_dir
    agents = config / "agents"
    profiles = sorted(p for p in agents.rglob("*") if p.is_file()) if agents.is_dir() else []
    for path in [config / "router.toml", *profiles]:
        digest.update(_file_digest(config, path))
    return digest.hexdigest()[:16]


def _file_digest(config: Path, path: Path) -> bytes:
    try:
        body = path.read_bytes() if path.is_file() else b""
    except OSError:
        body = b"(unreadable)"
    return str(path.relative_to(config)).encode() + b"\0" + hashlib.sha256(body).digest()


def watch_fired(settings: Settings, mission: str, suite_name: str, drop: float, *, heal: Any = None) -> str | None:
    """A mission fired: run its suite when the configuration changed since the mission's last eval;
    the new eval's id, or None when nothing changed."""
    from hearth.eval.launch import plan_eval, start_eval
    from hearth.eval.suite import load_suite

    now = fingerprint(settings)
    trigger = f"mission:{mission}"
    with AuditStore(settings.audit_path) as audit:
        last = last_fingerprint(audit, trigger, suite_name)
    if last == now:
        return None
    plan = plan_eval(load_suite(settings.config_dir, suite_name), [], [], 1)
    start_eval(plan, settings, by=trigger, trigger=trigger, fingerprint=now, alert_drop=drop, heal=heal)
    return plan.eval_id
