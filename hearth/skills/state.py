"""A skill's state, read from its checks (hearth/audit/skills.py), and a finished check's verdict.

    no eval     SKILL.md names no suite (`eval:`), or one that does not exist: never offered
    unchecked   no check has finished yet (`checking` beside it while one runs)
    offered     the last finished check passed on the content the skill has now
    changed     the last check passed, but SKILL.md or a resource changed since: check it again
    failed      the last check failed, and no earlier one passed: never offered
    retired     the last check failed after an earlier one had passed: kept, not offered, alerted

A check passes when, with the skill, the suite's pass rate reaches the skill's `eval_min` and is
no lower than without it. `settle` records the verdict of every running check whose two evals have
finished; it is asked wherever states are read, so no launcher or daemon has to call it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.clock import utc_now
from hearth.audit import skills as check_rows
from hearth.audit.evals import eval_row
from hearth.audit.store import AuditStore, Rows
from hearth.errors import NotFound
from hearth.leash import alerts
from hearth.settings import Settings
from hearth.skills.skill import Skill


@dataclass(frozen=True)
class SkillState:
    word: str
    checking: bool  # a check is running now
    last: dict[str, Any] | None  # the last finished check
    detail: str = ""

    @property
    def offered(self) -> bool:
        return self.word == "offered"


def suite_exists(config_dir: Path, suite: str) -> bool:
    return (config_dir / "evals" / f"{suite}.toml").is_file()


def state_of(skill: Skill, checks: list[dict[str, Any]], config_dir: Path) -> SkillState:
    """The state of `skill` from its checks, newest first."""
    checking = bool(checks) and checks[0]["status"] == "running"
    finished = [c for c in checks if c["status"] in check_rows.VERDICTS]
    last = finished[0] if finished else None
    if not skill.suite or not suite_exists(config_dir, skill.suite):
        why = f"suite {skill.suite!r} does not exist" if skill.suite else "SKILL.md names no eval suite"
        return SkillState("no eval", checking, last, why)
    if last is None:
        return SkillState("unchecked", checking, None)
    if last["status"] == "passed":
        if last["digest"] == skill.digest:
            return SkillState("offered", checking, last)
        return SkillState("changed", checking, last, "changed since its last check: check it again")
    earlier = any(c["status"] == "passed" for c in finished[1:])
    return SkillState("retired" if earlier else "failed", checking, last, last.get("detail") or "")


def states(db: Rows, skills: dict[str, Skill], config_dir: Path) -> dict[str, SkillState]:
    """Key -> state, for every skill given (keyed as Skill.key or by name: the key is the skill's)."""
    by_skill: dict[str, list[dict[str, Any]]] = {}
    for row in check_rows.latest(db):
        by_skill.setdefault(row["skill"], []).append(row)
    return {key: state_of(skill, by_skill.get(skill.key, []), config_dir) for key, skill in skills.items()}


def settle(settings: Settings, audit: AuditStore) -> list[dict[str, Any]]:
    """Record the verdict of each running check whose evals have both finished; the verdicts recorded.
    A failure that retires a skill raises a `skill_retired` alert."""
    settled = []
    for row in check_rows.running(audit):
        verdict = _verdict(audit, row)
        if verdict is None or not check_rows.finish(audit, row["id"], verdict):
            continue
        settled.append({**row, **verdict})
        if verdict["retired"]:
            _alert(settings, row, verdict)
    return settled


def _verdict(audit: AuditStore, row: dict[str, Any]) -> dict[str, Any] | None:
    try:
        with_it, without = eval_row(audit, row["eval_with"]), eval_row(audit, row["eval_without"])
    except NotFound:
        return _ended(row, None, None, "an eval of this check is missing from the audit", audit)
    if with_it["status"] != "done" or without["status"] != "done":
        return None
    rate_with, rate_without = float(with_it["pass_rate"] or 0.0), float(without["pass_rate"] or 0.0)
    if rate_with < float(row["eval_min"]):
        why = f"with the skill {rate_with:.0%} passed, below its eval_min {float(row['eval_min']):.0%}"
    elif rate_with < rate_without:
        why = f"it lowered the pass rate: {rate_without:.0%} without it, {rate_with:.0%} with it"
    else:
        why = ""
    return _ended(row, rate_with, rate_without, why, audit)


def _ended(
    row: dict[str, Any], rate_with: float | None, rate_without: float | None, why: str, db: Rows
) -> dict[str, Any]:
    earlier = [c for c in check_rows.history(db, row["skill"], 50) if c["id"] != row["id"]]
    retired = bool(why) and any(c["status"] == "passed" for c in earlier)
    return {
        "status": "failed" if why else "passed",
        "rate_with": rate_with,
        "rate_without": rate_without,
        "detail": why,
        "retired": retired,
        "finished_at": utc_now(),
    }


def _alert(settings: Settings, row: dict[str, Any], verdict: dict[str, Any]) -> None:
    title = f"hearth: skill {row['skill']} retired: its check failed"
    body = f"{verdict['detail']}\ncheck {row['id']} (suite {row['suite']}); the skill is kept on disk, not offered"
    body += f"\nhearth skills show {row['skill']}"
    if settings.web_url:
        body += f"\n{settings.web_url}/skills"
    alerts.notify(settings, alerts.Alert("skill_retired", title, body))
