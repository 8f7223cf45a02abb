"""What one run is offered: the skills listed in its system prompt and readable through load_skill.

At admission (`offer_skills`), once per run: the skills its profile sees whose state is `offered`
(hearth/skills/state.py), each copied whole into the run's own read-only directory,
`<state>/skills/RUN_ID/NAME/`, which load_skill reads and the command sandbox binds read-only.
The prompt lists each by name and one-line description, rendered from that copy: an edit on disk
during the run changes neither the prompt's bytes nor what load_skill returns.

A check's eval runs are the one exception (`requested_by = eval:EVAL_ID`): the run of its `with`
eval is offered the skill under check whatever its state, the run of its `without` eval never.
A run whose tools do not include load_skill is offered nothing.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from agent.context.prompt import PromptPart
from agent.tools.skills import LOAD_SKILL
from hearth.audit import skills as check_rows
from hearth.audit.store import AuditStore
from hearth.errors import HearthError
from hearth.run.goal import RunPlan
from hearth.settings import Settings
from hearth.skills.catalog import catalog, find_skill
from hearth.skills.skill import SKILL_FILE, Skill
from hearth.skills.state import settle, states

RUNS_DIR = "skills"
HEADING = (
    "## Skills\nInstructions for particular kinds of task. When the goal is one of these, call "
    f"{LOAD_SKILL}(name) first and follow what it returns."
)


@dataclass
class Offer:
    names: list[str] = field(default_factory=list)
    parts: list[PromptPart] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # one line each: a broken SKILL.md, not offered


def run_skills_dir(settings: Settings, run_id: str) -> Path:
    return settings.state_dir / RUNS_DIR / run_id


def exposed(settings: Settings, run_id: str) -> tuple[str, ...]:
    """The run's copy of its skills, for the command sandbox to bind read-only (none: nothing)."""
    directory = run_skills_dir(settings, run_id)
    return (str(directory),) if directory.is_dir() else ()


def offer_skills(settings: Settings, audit: AuditStore, plan: RunPlan) -> Offer:
    """The run's skills, copied and listed; never raises for a skill (a broken one is a problem line)."""
    manifest = plan.manifest
    if manifest is not None and LOAD_SKILL not in manifest:
        return Offer()
    seen = catalog(settings.config_dir, plan.agent_name)
    if not seen.skills and not plan.requested_by.startswith("eval:"):
        return Offer(problems=seen.problems)  # the common case pays for one directory listing
    settle(settings, audit)
    state = states(audit, seen.skills, settings.config_dir)
    chosen = {name: skill for name, skill in seen.skills.items() if state[name].offered}
    problems = list(seen.problems)
    _trial(settings, audit, plan.requested_by, chosen, problems)
    if not chosen:
        return Offer(problems=problems)
    directory = run_skills_dir(settings, plan.run_id)
    copy_skills(list(chosen.values()), directory)
    return Offer(sorted(chosen), [PromptPart("skills", str(directory), listing(directory), templated=False)], problems)


def _trial(
    settings: Settings, audit: AuditStore, requested_by: str, chosen: dict[str, Skill], problems: list[str]
) -> None:
    """A check's eval run: the skill under check added (its `with` eval) or taken away (`without`)."""
    if not requested_by.startswith("eval:"):
        return
    eval_id = requested_by.removeprefix("eval:")
    check = check_rows.of_eval(audit, eval_id)
    if check is None:
        return
    if check["eval_without"] == eval_id:
        chosen.pop(check["name"], None)
        return
    try:
        chosen[check["name"]] = find_skill(settings.config_dir, check["skill"])
    except HearthError as exc:
        problems.append(f"skill {check['skill']} under check cannot be offered: {exc}")


def copy_skills(skills: list[Skill], directory: Path) -> None:
    """Each skill's files into `directory`/NAME, each file then read-only (0444); the folders stay
    writable by hearth alone, so the run's state can be removed as a whole."""
    directory.mkdir(parents=True, exist_ok=True)
    for skill in skills:
        target = directory / skill.name
        for relative in (SKILL_FILE, *skill.resources):
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(skill.directory / relative, target / relative)
    for root, dirs, files in os.walk(directory):
        for name in files:
            os.chmod(os.path.join(root, name), 0o444)
        for name in dirs:  # whatever the umask: a command may run as another user (the sandbox's)
            os.chmod(os.path.join(root, name), 0o755)


def listing(directory: Path) -> str:
    """The prompt's list, read from the run's copy: a name and its one-line description each."""
    from hearth.skills.skill import read_skill

    lines = [HEADING]
    for entry in sorted(p for p in directory.iterdir() if p.is_dir()):
        skill = read_skill(entry, "box")
        lines.append(f"- {skill.name}: {skill.description}")
    return "\n".join(lines)
