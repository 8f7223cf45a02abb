"""Entity types: the kinds of record a role keeps (a bill, an appointment), declared by the operator.

    $HEARTH_CONFIG_DIR/entity-defs/entities.md    one `## KEY` heading per type, then a ```yaml block:

        label: Bill                       required: what the type is called
        directory: bills                  required: where its records live, under entities/
        id: year-sequence                 required: prefixed-slug | year-sequence | singleton
        prefix: bill                      the id's first part (prefixed-slug; default the key)
        slug_from: payee                  the field an id's slug is made from (not for singleton)
        fields:                           each: type (string, number, date, bool, list),
          payee: {type: string, required: true}           required, default, description
          status: {type: string, default: open}
        files:                            more files of a record, each made from a template
          notes.md: templates/bill-notes.md                (relative to entity-defs/)
        status_field: status              a declared field: the record's state
        owner_field: owner                a declared field: who it belongs to

Parsed strictly: an unknown key, a missing one, a wrong type or a value outside its choices is a
ConfigError of one line naming the file, the line and the key (`entities.md:12: bill.id: ...`).

Ids (`entity_id`): prefixed-slug is PREFIX-SLUG (`bill-gas-company`); year-sequence is
YEAR-NNN-SLUG, NNN the next number of that year among the type's records (`2026-003-gas-bill`);
singleton is the type's key (one record). A slug is lowercase letters, digits and '-'. An id
(made, or given to a lookup) containing '/', '..', or anything outside [a-z0-9-] is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hearth.errors import ConfigError, UsageError

DEFS = "entity-defs/entities.md"
ID_KINDS = ("prefixed-slug", "year-sequence", "singleton")
FIELD_TYPES = ("string", "number", "date", "bool", "list")
TYPE_KEYS = ("label", "directory", "id", "prefix", "slug_from", "fields", "files", "status_field", "owner_field")
FIELD_KEYS = ("type", "required", "default", "description")
KEY = re.compile(r"[a-z][a-z0-9_]{0,31}")
DIRECTORY = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
FILE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
ID = re.compile(r"[a-z0-9][a-z0-9-]{0,127}")
_HEADING = re.compile(r"^## +(?P<key>\S+) *$", re.M)
_BLOCK = re.compile(r"^```ya?ml[ \t]*\n(?P<body>.*?)^```[ \t]*$", re.S | re.M)


@dataclass(frozen=True)
class Field:
    name: str
    type: str = "string"
    required: bool = False
    default: Any = None
    description: str = ""


@dataclass(frozen=True)
class EntityType:
    key: str
    label: str
    directory: str
    id: str
    prefix: str
    slug_from: str = ""
    fields: tuple[Field, ...] = ()
    files: dict[str, str] = field(default_factory=dict)
    status_field: str = ""
    owner_field: str = ""


def load_types(config_dir: Path) -> list[EntityType]:
    """The declared entity types ([] when the file does not exist); ConfigError for a mistake."""
    path = config_dir / DEFS
    if not path.exists():
        return []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    return parse_types(text, path)


def parse_types(text: str, path: Path) -> list[EntityType]:
    """Every `## KEY` section's type, in order; ConfigError (file:line: key: problem) for the first mistake."""
    headings = list(_HEADING.finditer(text))
    found: list[EntityType] = []
    for n, heading in enumerate(headings):
        end = headings[n + 1].start() if n + 1 < len(headings) else len(text)
        found.append(_section(text, heading, end, path))
    keys = [t.key for t in found]
    twice = next((k for k in keys if keys.count(k) > 1), None)
    if twice:
        raise ConfigError(f"{path}:{_line(text, text.rindex(f'## {twice}'))}: {twice}: the type is declared twice")
    return found


def _section(text: str, heading: re.Match[str], end: int, path: Path) -> EntityType:
    import yaml  # only when entity types are declared

    key, line = heading["key"], _line(text, heading.start())
    if not KEY.fullmatch(key):
        raise ConfigError(f"{path}:{line}: {key}: a type's key is a-z, 0-9 and _ (starting with a letter), at most 32")
    block = _BLOCK.search(text, heading.end(), end)
    if block is None:
        raise ConfigError(f"{path}:{line}: {key}: no ```yaml block follows the heading")
    first = _line(text, block.start("body"))
    try:
        node = yaml.compose(block["body"])
        data = yaml.safe_load(block["body"])
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = first + mark.line if mark is not None else first
        raise ConfigError(f"{path}:{at}: {key}: not valid YAML ({getattr(exc, 'problem', exc)})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:{first}: {key}: the block must be keys and values")
    lines = _lines(node, first)

    def where(name: str) -> str:
        parts = name.split(".")
        known = next((".".join(parts[:n]) for n in range(len(parts), 0, -1) if ".".join(parts[:n]) in lines), "")
        return f"{path}:{lines.get(known, first)}: {key}.{name}"

    return _checked(key, data, where)


def _lines(node: Any, first: int, prefix: str = "") -> dict[str, int]:
    """Each key's line in the file, by its dotted path (fields.amount.type), from YAML's nodes."""
    found: dict[str, int] = {}
    if node is None or not isinstance(node.value, list):
        return found
    for pair in node.value:
        if not isinstance(pair, tuple):
            continue
        name = f"{prefix}{pair[0].value}"
        found[name] = first + pair[0].start_mark.line
        found |= _lines(pair[1], first, f"{name}.")
    return found


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _checked(key: str, data: dict[str, Any], where: Any) -> EntityType:
    """The type from its block, every key checked; `where(name)` is the error's prefix."""
    unknown = sorted(set(data) - set(TYPE_KEYS))
    if unknown:
        raise ConfigError(f"{where(unknown[0])}: unknown key; the keys are {', '.join(TYPE_KEYS)}")
    for name in ("label", "directory", "id"):
        if not isinstance(data.get(name), str) or not data[name].strip():
            raise ConfigError(f"{where(name)}: required, a text")
    if not DIRECTORY.fullmatch(data["directory"]):
        raise ConfigError(f"{where('directory')}: one directory name of a-z, 0-9, _ and -, got {data['directory']!r}")
    if data["id"] not in ID_KINDS:
        raise ConfigError(f"{where('id')}: must be one of {', '.join(ID_KINDS)}, got {data['id']!r}")
    fields = _fields(data.get("fields") or {}, where)
    names = {f.name for f in fields}
    for name in ("slug_from", "status_field", "owner_field"):
        if data.get(name) not in (None, "") and data[name] not in names:
            raise ConfigError(f"{where(name)}: {data[name]!r} is not a declared field")
    if data["id"] != "singleton" and not data.get("slug_from"):
        raise ConfigError(f"{where('slug_from')}: required for id {data['id']}: the field its ids' slug is made from")
    prefix = str(data.get("prefix") or key.replace("_", "-"))
    if not ID.fullmatch(prefix):
        raise ConfigError(f"{where('prefix')}: lowercase letters, digits and -, got {prefix!r}")
    files = _files(data.get("files") or {}, where)
    return EntityType(
        key, data["label"], data["directory"], data["id"], prefix, str(data.get("slug_from") or ""), fields, files,
        str(data.get("status_field") or ""), str(data.get("owner_field") or ""),
    )  # fmt: skip


def _fields(value: Any, where: Any) -> tuple[Field, ...]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where('fields')}: must be field names, each with its type")
    found = []
    for name, spec in value.items():
        spec = {"type": spec} if isinstance(spec, str) else spec
        if not (isinstance(name, str) and KEY.fullmatch(name)) or not isinstance(spec, dict):
            raise ConfigError(f"{where(f'fields.{name}')}: a field is a name (a-z, 0-9, _) with a type or a table")
        unknown = sorted(set(spec) - set(FIELD_KEYS))
        if unknown:
            raise ConfigError(
                f"{where(f'fields.{name}.{unknown[0]}')}: unknown key; the keys are {', '.join(FIELD_KEYS)}"
            )
        kind = spec.get("type", "string")
        if kind not in FIELD_TYPES:
            raise ConfigError(f"{where(f'fields.{name}.type')}: must be one of {', '.join(FIELD_TYPES)}, got {kind!r}")
        if not isinstance(spec.get("required", False), bool):
            raise ConfigError(f"{where(f'fields.{name}.required')}: must be true or false")
        found.append(
            Field(name, kind, spec.get("required", False), spec.get("default"), str(spec.get("description") or ""))
        )
    return tuple(found)


def _files(value: Any, where: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where('files')}: must be file names, each with its template")
    for name, template in value.items():
        if not (isinstance(name, str) and FILE.fullmatch(name)) or name == "record.md":
            raise ConfigError(f"{where(f'files.{name}')}: a file name of its own (not record.md, no '/')")
        if not isinstance(template, str) or ".." in Path(template).parts or template.startswith("/"):
            raise ConfigError(f"{where(f'files.{name}')}: a template path inside entity-defs/, got {template!r}")
    return dict(value)


def slug(text: str) -> str:
    """Lowercase letters, digits and '-' from any text ('' when nothing is left)."""
    return re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9]+", "-", text.lower())).strip("-")[:80]


def checked_id(value: str) -> str:
    """An entity id as given; UsageError for one with '/', '..' or anything outside [a-z0-9-]."""
    if "/" in value or ".." in value or not ID.fullmatch(value):
        raise UsageError(f"entity id {value[:80]!r} is refused: use lowercase letters, digits and '-' (no '/' or '..')")
    return value


def entity_id(kind: EntityType, fields: dict[str, Any], taken: list[str], year: int) -> str:
    """The record's id, decided by its type's strategy from its fields (and, for year-sequence, the
    ids its type has): the same fields give the same id."""
    if kind.id == "singleton":
        return checked_id(kind.prefix)
    made = slug(str(fields.get(kind.slug_from) or ""))
    if not made:
        raise UsageError(f"{kind.slug_from} must have letters or digits: the {kind.label}'s id is made from it")
    if kind.id == "prefixed-slug":
        return checked_id(f"{kind.prefix}-{made}")
    pattern = re.compile(rf"{year}-(\d{{3,}})-")
    numbers = [int(m.group(1)) for t in taken if (m := pattern.match(t))]
    same = next((t for t in taken if pattern.match(t) and t.split("-", 2)[2] == made), None)
    return checked_id(same or f"{year}-{max(numbers, default=0) + 1:03d}-{made}")
