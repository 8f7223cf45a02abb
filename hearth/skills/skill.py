"""One skill: a directory holding SKILL.md (YAML frontmatter, then the instructions) and resources.

    ---
    name: tidy-notes            required: 1-64 of a-z 0-9 -, the directory's name
    description: Tidy a notes directory ...   required: what it is for and when (one line is listed)
    eval: chores                the `hearth eval` suite that decides whether it is offered
    eval_min: 0.8               the pass rate the check must reach with the skill (default 1.0)
    ---
    The instructions the model reads when it calls load_skill.

Other keys (license, allowed-tools, metadata, ...) are the common format's and are kept, unread,
so skills written for other agent systems load as they are. A problem is one line naming the file
and the key (`SkillInvalid`); the skill is then not offered.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hearth.errors import ConfigError

SKILL_FILE = "SKILL.md"
NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
MAX_SKILL_BYTES = 64_000  # SKILL.md: instructions a small model reads whole
MAX_RESOURCE_BYTES = 4_000_000  # every resource together: copied into each run that is offered it
MAX_RESOURCES = 200
MAX_DESCRIPTION = 300  # characters of the one line the prompt lists
_PAIR = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*):(?:[ \t]+(.*))?$")
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


class SkillInvalid(ConfigError):
    """A SKILL.md that cannot be offered: the line names its file and key (exit 2)."""


@dataclass(frozen=True)
class Skill:
    name: str
    description: str  # one line
    body: str
    directory: Path
    scope: str  # "box", or the profile whose own skill it is
    suite: str = ""  # the eval suite that decides (frontmatter `eval`); "": none declared
    eval_min: float = 1.0
    digest: str = ""  # of SKILL.md and every resource: a check passes for this content only
    resources: tuple[str, ...] = ()  # paths relative to the directory
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def key(self) -> str:
        """How checks name it: NAME for the box's, PROFILE/NAME for a profile's own."""
        return self.name if self.scope == "box" else f"{self.scope}/{self.name}"


def read_skill(directory: Path, scope: str) -> Skill:
    """The skill in `directory`; SkillInvalid naming the file and the key that is wrong."""
    path = directory / SKILL_FILE
    text = _text(path)
    front, body = _split(path, text)
    name = _name(path, front, directory.name)
    description = _description(path, front)
    suite = front.get("eval", "") or ""
    if not isinstance(suite, str) or (suite and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}", suite)):
        raise SkillInvalid(f"{path}: eval must name a suite (hearth eval list), got {suite!r}")
    eval_min = _eval_min(path, front.get("eval_min", 1.0))
    resources = _resources(directory)
    known = {"name", "description", "eval", "eval_min"}
    extra = {k: v for k, v in front.items() if k not in known}
    digest = _digest(directory, resources)
    return Skill(name, description, body.strip(), directory, scope, suite, eval_min, digest, resources, extra)


def _text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SkillInvalid(f"{path}: cannot read it: {exc.strerror or exc}") from None
    if len(raw) > MAX_SKILL_BYTES:
        raise SkillInvalid(f"{path}: {len(raw)} bytes, more than {MAX_SKILL_BYTES}; move detail into resources")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillInvalid(f"{path}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None


def _split(path: Path, text: str) -> tuple[dict[str, Any], str]:
    import yaml  # only a run offered skills, or a skills command, pays for it

    found = _FRONT.match(text)
    if found is None:
        raise SkillInvalid(f"{path}: no frontmatter: start the file with --- then name: and description: then ---")
    try:
        front = yaml.safe_load(found.group(1))
    except yaml.YAMLError as exc:
        front = _plain(found.group(1))  # `description: Use when: ...`, as many written skills have it
        if not front:
            mark = getattr(exc, "problem_mark", None)
            where = f" (frontmatter line {mark.line + 1})" if mark is not None else ""
            raise SkillInvalid(f"{path}: the frontmatter is not YAML{where}: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(front, dict):
        raise SkillInvalid(f"{path}: the frontmatter must be keys and values (name: ..., description: ...)")
    return {str(k): v for k, v in front.items()}, text[found.end() :]


def _plain(text: str) -> dict[str, Any]:
    """`key: value` lines, an indented line going on with the value before it: the frontmatter
    YAML refuses only for a colon inside a value; {} when a line is neither."""
    found: dict[str, Any] = {}
    key = ""
    for line in text.splitlines():
        pair = _PAIR.match(line)
        if pair:
            key = pair.group(1)
            found[key] = (pair.group(2) or "").strip()
        elif key and line[:1] in (" ", "\t") and line.strip():
            found[key] = f"{found[key]} {line.strip()}".strip()
        elif line.strip():
            return {}
    return found


def _name(path: Path, front: dict[str, Any], directory: str) -> str:
    name = front.get("name")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise SkillInvalid(f"{path}: name must be 1-64 of a-z 0-9 and -, got {name!r}")
    if name != directory:
        raise SkillInvalid(f"{path}: name {name!r} must be the directory's name, {directory!r}")
    return name


def _description(path: Path, front: dict[str, Any]) -> str:
    value = front.get("description")
    if not isinstance(value, str) or not value.strip():
        raise SkillInvalid(f"{path}: description must say what the skill is for and when to use it")
    line = " ".join(value.split())
    return line if len(line) <= MAX_DESCRIPTION else line[: MAX_DESCRIPTION - 1] + "…"


def _eval_min(path: Path, value: Any) -> float:
    if isinstance(value, str):  # from plain `key: value` lines
        try:
            value = float(value)
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise SkillInvalid(f"{path}: eval_min must be a pass rate above 0 and at most 1, got {value!r}")
    return float(value)


def _resources(directory: Path) -> tuple[str, ...]:
    """Every regular file beside SKILL.md (links are not followed: a skill holds only its own files)."""
    found, size = [], 0
    for path in sorted(directory.rglob("*")):
        if path.is_symlink() or not path.is_file() or path.name == SKILL_FILE and path.parent == directory:
            continue
        size += path.stat().st_size
        found.append(str(path.relative_to(directory)))
        if len(found) > MAX_RESOURCES or size > MAX_RESOURCE_BYTES:
            raise SkillInvalid(
                f"{directory}: resources: more than {MAX_RESOURCES} files or {MAX_RESOURCE_BYTES} bytes; keep it small"
            )
    return tuple(found)


def _digest(directory: Path, resources: tuple[str, ...]) -> str:
    digest = hashlib.sha256()
    for relative in (SKILL_FILE, *resources):
        digest.update(relative.encode() + b"\0" + hashlib.sha256((directory / relative).read_bytes()).digest())
    return digest.hexdigest()[:16]
