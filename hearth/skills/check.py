"""`hearth skills check NAME`: the skill's eval suite run twice, with the skill offered and without
it, against the model the suite's runs use (or the models named), then a verdict.

The check's row is recorded first, naming both evals, so each eval run's admission knows which
side it is on (hearth/skills/offer.py); then both evals are queued as `hearth eval run` queues
any (hearth/eval/launch.py): ordinary audited runs the launcher starts. When both have finished,
the verdict is recorded wherever skills' states are next read (hearth/skills/state.py's settle);
`wait` reads them until then.
"""

from __future__ import annotations

import secrets
import time
from datetime import UTC, datetime
from typing import Any

from agent.clock import utc_now
from hearth.audit import skills as check_rows
from hearth.audit.store import AuditStore
from hearth.errors import UsageError
from hearth.eval.launch import Plan, plan_eval, start_eval
from hearth.eval.suite import load_suite
from hearth.queue.submit import Heal
from hearth.settings import Settings
from hearth.skills.catalog import find_skill
from hearth.skills.skill import SKILL_FILE, Skill
from hearth.skills.state import settle

POLL_S = 2.0  # how often `wait` reads the audit: a check's runs take minutes


def start_check(
    settings: Settings, key: str, *, by: str, models: list[str], repeat: int, heal: Heal | None = None
) -> tuple[dict[str, Any], list[str]]:
    """Record the check of skill `key` and queue its two evals; the check's row and the notes of
    runs that could not be queued. UsageError when the skill names no suite or is being checked."""
    skill = find_skill(settings.config_dir, key)
    if not skill.suite:
        raise UsageError(
            f"skill {key} names no eval suite: add `eval: SUITE` to {skill.directory / SKILL_FILE} (hearth eval list)"
        )
    suite = load_suite(settings.config_dir, skill.suite)
    with_it, without = plan_eval(suite, models, [], repeat), plan_eval(suite, models, [], repeat)
    settings.writable_state_dir()
    with AuditStore(settings.audit_path) as audit:
        busy = [r for r in check_rows.running(audit) if r["skill"] == skill.key]
        if busy:
            raise UsageError(f"skill {key} is being checked already ({busy[0]['id']}); hearth skills show {key}")
        row = _row(skill, with_it, without, by)
        check_rows.start(audit, row)
    notes = start_eval(with_it, settings, by=by, trigger=f"skill:{skill.key}:with", heal=heal)
    notes += start_eval(without, settings, by=by, trigger=f"skill:{skill.key}:without", heal=heal)
    return row, notes


def _row(skill: Skill, with_it: Plan, without: Plan, by: str) -> dict[str, Any]:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    return {
        "id": f"sc-{stamp}-{secrets.token_hex(3)}",
        "skill": skill.key,
        "name": skill.name,
        "scope": skill.scope,
        "digest": skill.digest,
        "suite": skill.suite,
        "eval_min": skill.eval_min,
        "eval_with": with_it.eval_id,
        "eval_without": without.eval_id,
        "status": "running",
        "requested_by": by,
        "started_at": utc_now(),
    }


def wait(settings: Settings, check_id: str, timeout_s: float) -> dict[str, Any] | None:
    """The check's row once it has a verdict, or None when `timeout_s` passed first."""
    deadline = time.monotonic() + timeout_s
    while True:
        with AuditStore(settings.audit_path) as audit:
            settle(settings, audit)
            row = check_rows.one(audit, check_id)
        if row is not None and row["status"] != "running":
            return row
        if time.monotonic() >= deadline:
            return None
        time.sleep(POLL_S)
