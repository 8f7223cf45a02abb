"""The skills a profile sees: the box's ($HEARTH_CONFIG_DIR/skills/NAME/) and the profile's own
($HEARTH_CONFIG_DIR/agents/PROFILE/skills/NAME/). A profile's skill shadows the box's of the same
name: the profile's is the one its runs may be offered, and the listing says which it hides.
A directory whose SKILL.md is broken is a problem (one line), never a skill.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hearth.skills.skill import SKILL_FILE, Skill, SkillInvalid, read_skill

SKILLS_DIR = "skills"


@dataclass
class Catalog:
    skills: dict[str, Skill] = field(default_factory=dict)  # name -> the skill this profile sees
    shadowed: dict[str, Skill] = field(default_factory=dict)  # name -> the box's skill a profile's hides
    problems: list[str] = field(default_factory=list)  # one line each: the file and the key


def box_dir(config_dir: Path) -> Path:
    return config_dir / SKILLS_DIR


def profile_dir(config_dir: Path, profile: str) -> Path:
    return config_dir / "agents" / profile / SKILLS_DIR


def read_dir(directory: Path, scope: str, problems: list[str]) -> dict[str, Skill]:
    """Every skill under `directory` (a missing one has none); each broken one a line in `problems`."""
    try:
        entries = sorted(p for p in directory.iterdir() if p.is_dir() and not p.name.startswith("."))
    except FileNotFoundError:
        return {}
    except OSError as exc:
        problems.append(f"{directory}: cannot list it: {exc.strerror or exc}")
        return {}
    found: dict[str, Skill] = {}
    for entry in entries:
        if not (entry / SKILL_FILE).exists():
            continue  # a resource folder or a draft: not a skill
        try:
            skill = read_skill(entry, scope)
        except SkillInvalid as exc:
            problems.append(str(exc))
            continue
        found[skill.name] = skill
    return found


def catalog(config_dir: Path, profile: str | None) -> Catalog:
    """The skills `profile` sees (None: the box's alone)."""
    result = Catalog()
    result.skills = read_dir(box_dir(config_dir), "box", result.problems)
    if profile:
        for name, skill in read_dir(profile_dir(config_dir, profile), profile, result.problems).items():
            if name in result.skills:
                result.shadowed[name] = result.skills[name]
            result.skills[name] = skill
    return result


def every_skill(config_dir: Path) -> Catalog:
    """Every skill on the box, the box's and each profile's own (keyed by Skill.key), for listing."""
    result = Catalog()
    for skill in read_dir(box_dir(config_dir), "box", result.problems).values():
        result.skills[skill.key] = skill
    agents = config_dir / "agents"
    profiles = sorted(p.name for p in agents.iterdir() if p.is_dir()) if agents.is_dir() else []
    for profile in profiles:
        for skill in read_dir(profile_dir(config_dir, profile), profile, result.problems).values():
            result.skills[skill.key] = skill
            if skill.name in result.skills:
                result.shadowed[skill.key] = result.skills[skill.name]
    return result


def find_skill(config_dir: Path, key: str) -> Skill:
    """The skill `key` names (NAME, or PROFILE/NAME); SkillInvalid for a broken one, NotFound else."""
    from hearth.errors import NotFound

    profile, _, name = key.rpartition("/")
    directory = (profile_dir(config_dir, profile) if profile else box_dir(config_dir)) / name
    if not (directory / SKILL_FILE).is_file():
        known = ", ".join(every_skill(config_dir).skills) or "none"
        raise NotFound(f"no skill {key!r}: {directory / SKILL_FILE} does not exist; skills: {known}")
    return read_skill(directory, profile or "box")
