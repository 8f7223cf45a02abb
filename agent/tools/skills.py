"""load_skill: a skill's instructions, or one of its resources, read from the run's own copy.

The appliance copies the skills a run is offered into a read-only directory at run start
(`RunServices.skills`: one folder per skill, SKILL.md and its resources) and lists them in the
system prompt by name and description; this tool returns a skill's body when the model decides it
needs it, so a run pays for a skill's instructions only when it uses them. It only reads: nothing
the model sends can change a skill, and the command sandbox binds the same directory read-only.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from agent.safety.workspace import Workspace
from agent.tools.registry import Tool, ToolFailed

LOAD_SKILL = "load_skill"
SKILL_FILE = "SKILL.md"
MAX_RESOURCE_CHARS = 100_000  # a resource bigger than this is for commands, not for the context
_FRONT = re.compile(r"\A---[ \t]*\r?\n.*?\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


def _offered(ws: Workspace) -> Path:
    root = ws.services.skills
    if root is None:
        raise ToolFailed("no skills are offered to this run")
    return Path(root)


def _skill_dir(root: Path, name: str) -> Path:
    names = sorted(p.name for p in root.iterdir() if p.is_dir())
    if name not in names:
        raise ToolFailed(f"no skill named {name!r}; the skills offered: {', '.join(names) or 'none'}")
    return root / name


def load_skill(args: dict[str, Any], ws: Workspace) -> str:
    folder = _skill_dir(_offered(ws), str(args["name"]))
    wanted = str(args.get("file") or "")
    if wanted:
        return _resource(folder, wanted)
    text = (folder / SKILL_FILE).read_text(encoding="utf-8")
    body = _FRONT.sub("", text, count=1).strip()
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and p.name != SKILL_FILE)
    if not files:
        return body
    return (
        f"{body}\n\nThis skill's files (read-only: load_skill with file= reads one; commands find them "
        f"under {folder}): {', '.join(files)}"
    )


def _resource(folder: Path, wanted: str) -> str:
    path = (folder / wanted).resolve()
    if not path.is_relative_to(folder.resolve()) or not path.is_file():
        raise ToolFailed(f"skill {folder.name} has no file {wanted!r}; load_skill without file lists them")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolFailed(f"{wanted} is not text; a command can read it at {path}") from None
    if len(text) > MAX_RESOURCE_CHARS:
        raise ToolFailed(
            f"{wanted} is {len(text)} characters, over {MAX_RESOURCE_CHARS}; a command can read it at {path}"
        )
    return text


TOOLS = [
    Tool(
        LOAD_SKILL,
        "Read the instructions of a skill listed under Skills, before a task it is for; file= reads one of its files.",
        {
            "name": {"type": "string", "description": "a skill's name as listed"},
            "file": {"type": "string", "description": "one of the skill's files (optional)"},
        },
        load_skill,
        risk="safe",
        required=("name",),
        available=lambda services: services.skills is not None,
    ),
]
