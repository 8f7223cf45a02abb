"""The entity types and each role's entity records: the types' file parses (one line naming the file,
line and key), and every record has its frontmatter's required fields, an id that is its
directory's and no other record's, and the files its type declares. Nothing is changed."""

from __future__ import annotations

from pathlib import Path

from hearth.doctor.finding import Finding
from hearth.errors import ConfigError
from hearth.roles.entities import DEFS, EntityType, load_types
from hearth.roles.entity_tools import RECORD, ROOT
from hearth.roles.home import home_of, read_markdown
from hearth.run.profiles import Profile
from hearth.settings import Settings

CHECK = "entities"


def check_entities(settings: Settings, profiles: list[Profile]) -> list[Finding]:
    """The types' file, then each role's records (nothing when no types are declared)."""
    try:
        types = load_types(settings.config_dir)
    except ConfigError as exc:
        return [Finding(CHECK, "error", str(exc), str(settings.config_dir / DEFS))]
    problems = [
        line for p in profiles if p.home for kind in types for line in _records(home_of(settings, p.name), kind)
    ]
    found = [Finding(CHECK, "error", line) for line in problems]
    if types and not found:
        found.append(Finding(CHECK, "ok", f"{len(types)} entity type(s); every role's records are whole"))
    return found


def _records(home: Path, kind: EntityType) -> list[str]:
    folder = home / ROOT / kind.directory
    seen: dict[str, str] = {}
    lines: list[str] = []
    for record in sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []:
        lines += _record(record, kind, seen)
    return lines


def _record(record: Path, kind: EntityType, seen: dict[str, str]) -> list[str]:
    try:
        front = read_markdown(record / RECORD, front_required=True).front
    except ConfigError as exc:
        return [str(exc)]
    ident = str(front.get("id") or "")
    lines = [] if ident == record.name else [f"{record / RECORD}: its id is {ident!r}, not its directory's"]
    if ident in seen:
        lines.append(f"{record / RECORD}: duplicate id {ident!r}, also {seen[ident]}")
    seen.setdefault(ident, str(record))
    lines += [
        f"{record / RECORD}: the required field {f.name!r} is missing"
        for f in kind.fields
        if f.required and f.name not in front
    ]
    lines += [f"{record}: the declared file {name} is missing" for name in kind.files if not (record / name).is_file()]
    return lines
