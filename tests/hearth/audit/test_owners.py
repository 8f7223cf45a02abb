"""Each audit table has one owner module in hearth/audit/ holding every statement on it: the owner
table in the package's docstring names each table once, and no code outside hearth/audit/ (the
web's reads, the benchmarks included) writes SQL naming an audit table, hands the store a table
name, or reaches into the store's connection. The knowledge base, a file of its own that the engine
keeps, has its two owners in agent/knowledge/: store.py (documents, chunks, lessons) and vectors.py
(the embedding sets); no other code of agent/ or hearth/ names its tables (its benchmarks seed it
in bulk)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import hearth.audit
from agent.knowledge.store import KnowledgeStore
from hearth.audit.store import AuditStore

ROOT = Path(__file__).resolve().parents[3]
SCANNED = ("agent", "hearth", "bench", "scripts")
STORE_METHODS = {"insert", "insert_many", "update", "rows", "find_by_id_or_prefix", "ids_with_prefix", "table"}


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """Every table of a new audit (the full-text index's own tables are the index's)."""
    with AuditStore(tmp_path_factory.mktemp("audit") / "audit.db") as audit:
        rows = audit.rows("select name from sqlite_master where type = 'table' and name not like '\\_%' escape '\\'")
    return {row["name"] for row in rows if not row["name"].startswith("runs_fts_")}


def owner_table() -> dict[str, str]:
    """table -> owner module, from the rows `  table, table ...   module.py   what` of the docstring."""
    doc = hearth.audit.__doc__ or ""
    owners: dict[str, str] = {}
    for line in doc.splitlines():
        found = re.match(r"\s+([a-z_, ]+?)\s{2,}([a-z_]+\.py)\b", line)
        if found:
            for table in found.group(1).replace(",", " ").split():
                assert table not in owners, f"{table} has two owners in the docstring"
                owners[table] = found.group(2)
    return owners


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def _texts(tree: ast.AST) -> list[tuple[int, str]]:
    """Every string literal, f-strings as their literal parts joined, docstrings left out."""
    skip = _docstrings(tree)
    inside = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = [v.value if isinstance(v, ast.Constant) else " x " for v in node.values]
            found.append((node.lineno, "".join(str(p) for p in parts)))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip | inside:
            found.append((node.lineno, node.value))
    return found


def offences(path: Path, tables: set[str], *, audit: bool = True) -> list[str]:
    """What in a file names one of `tables` outside its owner; with `audit`, a reach into the
    AuditStore's connection too."""
    source = path.read_text()
    tree = ast.parse(source, str(path))
    names = "|".join(sorted(tables, key=len, reverse=True))
    sql = re.compile(rf"\b(from|into|update|join|table|exists)\s+[\"'`]?({names})\b(?!\s*[a-z(]*\s*=)", re.I)
    found = [f"{path}:{line}: SQL on {m.group(2)}" for line, text in _texts(tree) for m in [sql.search(text)] if m]
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in STORE_METHODS:
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and first.value in tables:
                found.append(f"{path}:{node.lineno}: .{node.func.attr}({first.value!r}, ...) outside its owner")
        if audit and isinstance(node, ast.Attribute) and node.attr in ("conn", "db"):
            held = ast.get_source_segment(source, node.value) or ""
            if "audit" in held.lower():
                found.append(f"{path}:{node.lineno}: {held}.{node.attr}: the store's connection outside hearth/audit")
    return found


def _scanned() -> list[Path]:
    paths = [p for top in SCANNED if (ROOT / top).is_dir() for p in sorted((ROOT / top).rglob("*.py"))]
    return [p for p in paths if not p.relative_to(ROOT).as_posix().startswith("hearth/audit/")]


def test_no_statement_on_an_audit_table_outside_its_owner(tables: set[str]) -> None:
    found = {}
    for path in _scanned():
        hits = offences(path, tables)
        if hits:
            found[path.relative_to(ROOT).as_posix()] = hits
    assert not found, "\n".join(hit for hits in found.values() for hit in hits)


KNOWLEDGE_OWNERS = {"agent/knowledge/store.py", "agent/knowledge/vectors.py", "agent/knowledge/migrations.py"}


def test_no_statement_on_a_knowledge_table_outside_its_two_owners(tmp_path: Path) -> None:
    with KnowledgeStore(tmp_path / "knowledge.db") as store:
        rows = store.rows("select name from sqlite_master where type = 'table' and name not like '\\_%' escape '\\'")
    tables = {row["name"] for row in rows} | {"emb_", "vec_"}  # a set's tables: emb_<key>_<kind>, vec_<key>_<kind>
    assert {"documents", "chunks", "lessons", "embed_models"} <= tables
    paths = [p for top in ("agent", "hearth") for p in sorted((ROOT / top).rglob("*.py"))]
    found = [
        hit
        for p in paths
        if p.relative_to(ROOT).as_posix() not in KNOWLEDGE_OWNERS
        for hit in offences(p, tables, audit=False)
    ]
    assert not found, "\n".join(found)


def test_every_audit_table_has_one_owner_module_that_exists(tables: set[str]) -> None:
    owners = owner_table()
    assert set(owners) == tables
    for module in set(owners.values()):
        assert (ROOT / "hearth" / "audit" / module).is_file(), module


@pytest.mark.parametrize(
    "text",
    [
        'audit.rows("select * from runs where id = ?", [run_id])',
        'audit.conn.execute("update approvals set status = ?", [s])',
        'audit.insert("alerts", row)',
        'f"insert into fleet_events ({columns}) values ({marks})"',
    ],
)
def test_the_check_finds_a_statement_written_outside(tmp_path: Path, tables: set[str], text: str) -> None:
    path = tmp_path / "leak.py"
    path.write_text(text + "\n")
    assert offences(path, tables) != []
