"""The entity tools a role's run gets, one record each (agent/tools/registry.py), made from the
declared types (hearth/roles/entities.py) and handed to the run as its services' extra tools:

    create_<type>_record   risk edit: the record's id from its fields (the type's strategy), then
                           entities/<directory>/<id>/record.md (YAML frontmatter: id, type and the
                           fields, defaults filled) and each declared file from its template;
                           an existing record is never overwritten unless `overwrite` is true
    entity_lookup          risk safe: records by id, by type, or by a field's value

Every path goes through the run's Workspace, so the walls of any file tool hold (containment,
no symlink out); an id is checked before it becomes a path ('/' and '..' refused). A failure is
the tool's one-line result, as for any tool.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent.safety.workspace import Workspace
from agent.tools.registry import Tool, ToolFailed
from hearth.errors import HearthError
from hearth.roles.entities import EntityType, Field, checked_id, entity_id, load_types

ROOT = "entities"
DEFS_DIR = "entity-defs"  # where the types' file templates are, in the config
RECORD = "record.md"
READ_LIMIT = 200_000
SHOWN = 20  # records a lookup lists at most
SCHEMA = {"string": "string", "number": "number", "date": "string", "bool": "boolean", "list": "string"}


def role_tools(role: str, config_dir: Path) -> tuple[Tool, ...]:
    """The entity tools of a role's run (none for a run that is not a role's, or when the types do
    not load: `hearth doctor` names the mistake)."""
    if not role:
        return ()
    try:
        types = load_types(config_dir)
    except HearthError:
        return ()
    return tuple(entity_tools(types, config_dir / DEFS_DIR))


def entity_tools(types: list[EntityType], templates: Path) -> list[Tool]:
    """A create tool per type and one lookup, or none when no type is declared."""
    if not types:
        return []
    return [_creator(kind, templates) for kind in types] + [_lookup(types)]


def _creator(kind: EntityType, templates: Path) -> Tool:
    params: dict[str, dict[str, Any]] = {f.name: _param(f) for f in kind.fields}
    params["overwrite"] = {"type": "boolean", "description": "replace a record that exists (default false)"}

    def create(args: dict[str, Any], ws: Workspace) -> str:
        try:
            return _create(kind, templates, args, ws)
        except HearthError as exc:
            raise ToolFailed(str(exc)) from None

    return Tool(
        name=f"create_{kind.key}_record",
        description=f"Create a {kind.label} record (entities/{kind.directory}/ID/record.md) from its fields.",
        params=params,
        fn=create,
        risk="edit",
        required=tuple(f.name for f in kind.fields if f.required and f.default is None),
        writes=True,
    )


def _param(field: Field) -> dict[str, Any]:
    words = {"date": " (YYYY-MM-DD)", "list": " (items separated by commas)"}.get(field.type, "")
    return {"type": SCHEMA[field.type], "description": (field.description or field.name) + words}


def _create(kind: EntityType, templates: Path, args: dict[str, Any], ws: Workspace) -> str:
    values = {f.name: args[f.name] if args.get(f.name) is not None else f.default for f in kind.fields}
    missing = [f.name for f in kind.fields if f.required and values[f.name] in (None, "")]
    if missing:
        raise ToolFailed(f"{missing[0]} is required for a {kind.label} record")
    folder = f"{ROOT}/{kind.directory}"
    taken = [e.name for e in ws.iter_dir(folder)] if ws.stat(folder) else []
    ident = entity_id(kind, values, taken, datetime.now(UTC).year)
    where = f"{folder}/{ident}"
    if ws.stat(f"{where}/{RECORD}") and not args.get("overwrite"):
        return f"{kind.label} {ident} exists already at {where}/{RECORD}; nothing written (overwrite=true replaces it)"
    ws.write_bytes(f"{where}/{RECORD}", _record_text(kind, ident, values).encode())
    for name, template in kind.files.items():
        ws.write_bytes(f"{where}/{name}", _rendered(templates / template, ident, values).encode())
    made = ", ".join([RECORD, *kind.files])
    return f"{kind.label} {ident}: wrote {made} in {where}"


def _record_text(kind: EntityType, ident: str, values: dict[str, Any]) -> str:
    import yaml

    front = yaml.safe_dump({"id": ident, "type": kind.key, **values}, sort_keys=False, allow_unicode=True)
    return f"---\n{front}---\n# {kind.label} {ident}\n"


def _rendered(path: Path, ident: str, values: dict[str, Any]) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ToolFailed(
            f"the template {path} cannot be read ({exc}); the operator's entity-defs need fixing"
        ) from None
    for name, value in {"id": ident, **values}.items():
        text = text.replace(f"{{{name}}}", "" if value is None else str(value))
    return text


def _lookup(types: list[EntityType]) -> Tool:
    by_key = {t.key: t for t in types}

    def lookup(args: dict[str, Any], ws: Workspace) -> str:
        kind = by_key.get(str(args.get("type") or ""))
        if kind is None:
            raise ToolFailed(f"type must be one of {', '.join(by_key)}")
        try:
            ident = checked_id(str(args["id"])) if args.get("id") else ""
        except HearthError as exc:
            raise ToolFailed(str(exc)) from None
        return _found(kind, ws, ident, str(args.get("field") or ""), args.get("value"))

    return Tool(
        name="entity_lookup",
        description="Find entity records: one by type and id, or a type's records, or those whose field has a value.",
        params={
            "type": {"type": "string", "enum": list(by_key), "description": "the entity type"},
            "id": {"type": "string", "description": "one record's id"},
            "field": {"type": "string", "description": "a field to match (with value)"},
            "value": {"type": "string", "description": "the field's value to match"},
        },
        fn=lookup,
        risk="safe",
        required=("type",),
    )


def _found(kind: EntityType, ws: Workspace, ident: str, field: str, value: Any) -> str:
    folder = f"{ROOT}/{kind.directory}"
    if ident:
        if not ws.stat(f"{folder}/{ident}/{RECORD}"):
            return f"no {kind.label} {ident} (in {folder}/)"
        return ws.read_text(f"{folder}/{ident}/{RECORD}", limit=READ_LIMIT)[0]
    ids = sorted(e.name for e in ws.iter_dir(folder) if e.kind == "dir") if ws.stat(folder) else []
    rows = [(i, _front(ws, f"{folder}/{i}/{RECORD}")) for i in ids]
    if field:
        rows = [(i, front) for i, front in rows if str(front.get(field)) == str(value)]
    shown = [f"{i}: " + ", ".join(f"{k}={v}" for k, v in front.items() if k not in ("id", "type")) for i, front in rows]
    more = f"\n(and {len(shown) - SHOWN} more)" if len(shown) > SHOWN else ""
    return "\n".join(shown[:SHOWN]) + more if shown else f"no {kind.label} records match"


def _front(ws: Workspace, path: str) -> dict[str, Any]:
    import yaml

    try:
        text = ws.read_text(path, limit=READ_LIMIT)[0]
        front = yaml.safe_load(text.split("---", 2)[1]) if text.startswith("---") else {}
    except (OSError, ValueError, IndexError, yaml.YAMLError):
        return {}
    return front if isinstance(front, dict) else {}
