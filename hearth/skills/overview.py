"""Every skill on the box with its state and its checks: what `hearth skills list` and the command
center's Skills page show. Reading settles the checks whose evals have finished (state.py)."""

from __future__ import annotations

from typing import Any

from hearth.audit import skills as check_rows
from hearth.audit.store import AuditStore
from hearth.errors import NotFound
from hearth.settings import Settings
from hearth.skills.catalog import every_skill
from hearth.skills.skill import Skill
from hearth.skills.state import SkillState, settle, states

RATES = ("rate_with", "rate_without")


def overview(settings: Settings) -> dict[str, Any]:
    """{"skills": one row per skill, "problems": one line per broken SKILL.md}."""
    found = every_skill(settings.config_dir)
    if not settings.audit_path.exists():
        rows = [_row(skill, None, found.shadowed.get(key)) for key, skill in found.skills.items()]
        return {"skills": rows, "problems": found.problems}
    with AuditStore(settings.audit_path) as audit:
        settle(settings, audit)
        state = states(audit, found.skills, settings.config_dir)
    rows = [_row(skill, state[key], found.shadowed.get(key)) for key, skill in found.skills.items()]
    return {"skills": rows, "problems": found.problems}


def _row(skill: Skill, state: SkillState | None, shadows: Skill | None) -> dict[str, Any]:
    last = state.last if state else None
    word = state.word if state else ("unchecked" if skill.suite else "no eval")
    return {
        "key": skill.key,
        "name": skill.name,
        "scope": skill.scope,
        "description": skill.description,
        "suite": skill.suite,
        "eval_min": skill.eval_min,
        "state": word,
        "offered": word == "offered",
        "checking": bool(state and state.checking),
        "detail": state.detail if state else "",
        "digest": skill.digest,
        "directory": str(skill.directory),
        "shadows": str(shadows.directory) if shadows else "",
        "last_check": last["id"] if last else "",
        "last_checked": last["finished_at"] if last else "",
        **{k: last[k] if last else None for k in RATES},
    }


def skill_detail(settings: Settings, key: str) -> dict[str, Any]:
    """One skill's row and its checks, newest first; NotFound for a key no skill has."""
    listed = overview(settings)
    row = next((r for r in listed["skills"] if r["key"] == key), None)
    if row is None:
        known = ", ".join(r["key"] for r in listed["skills"]) or "none"
        raise NotFound(f"no skill {key!r}; skills: {known} (hearth skills list)")
    checks: list[dict[str, Any]] = []
    if settings.audit_path.exists():
        with AuditStore(settings.audit_path) as audit:
            checks = check_rows.history(audit, key)
    return {**row, "checks": checks}
