"""The audit's migrations: an audit.db made by an older hearth opens and migrates, and nothing
already applied runs again (the names in `_migrations` are the contract, wherever the functions live)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hearth.audit.migrations import MIGRATIONS
from hearth.audit.store import AuditStore

OLD = Path(__file__).with_name("audit_m201.sql")  # made when every migration was in one file


def _schema(path: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("select name, sql from sqlite_master where sql is not null order by name").fetchall()
    finally:
        conn.close()
    return [(name, " ".join(sql.split())) for name, sql in rows]


def _old_audit(tmp_path: Path) -> Path:
    path = tmp_path / "old" / "audit.db"
    path.parent.mkdir()
    conn = sqlite3.connect(path)
    conn.executescript(OLD.read_text())
    conn.close()
    return path


def test_an_audit_made_before_the_split_opens_without_running_a_migration_again(tmp_path: Path) -> None:
    path = _old_audit(tmp_path)
    before = sqlite3.connect(path).execute("select name, applied_at from _migrations order by rowid").fetchall()
    with AuditStore(path) as audit:
        run = audit.run("20250102T030405-abc123")
        found = audit.runs(search="files")
    after = sqlite3.connect(path).execute("select name, applied_at from _migrations order by rowid").fetchall()
    assert after[: len(before)] == before  # applied once, never again
    assert [name for name, _ in after] == [m.__name__ for m in MIGRATIONS]
    assert run is not None and run["summary"] == "listed them"
    assert [r["id"] for r in found] == ["20250102T030405-abc123"]  # the full-text index came along


def test_an_old_audit_migrated_has_the_schema_of_a_new_one(tmp_path: Path) -> None:
    old = _old_audit(tmp_path)
    AuditStore(old).close()
    fresh = tmp_path / "audit.db"
    AuditStore(fresh).close()
    assert _schema(old) == _schema(fresh)


def test_every_migration_has_a_name_of_its_own() -> None:
    names = [m.__name__ for m in MIGRATIONS]
    assert len(set(names)) == len(names)


def test_a_keys_calls_made_before_it_was_made_belong_to_no_key_once_keys_have_ids(tmp_path: Path) -> None:
    """m211: a key made again under a removed key's name does not inherit the calls of the first."""
    path = _old_audit(tmp_path)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(
            "insert into api_keys (name, digest, agents, budget_tokens, rate_per_min, created_at, created_by)"
            " values ('webui', 'd', '[]', 0, 0, '2025-02-01T00:00:00.000Z', 'ana')"
        )
        calls = [
            ("2025-01-15T00:00:00.000Z", "old-run", "conv-old"),
            ("2025-02-02T00:00:00.000Z", "new-run", "conv-new"),
        ]
        conn.executemany("insert into api_calls (key, at, run_id, conversation) values ('webui', ?, ?, ?)", calls)
    conn.close()
    with AuditStore(path) as audit:
        [key] = audit.rows("select id from api_keys")
        found = {r["run_id"]: r["key_id"] for r in audit.rows("select run_id, key_id from api_calls")}
    assert key["id"].startswith("key-") and len(key["id"]) == 20
    assert found == {"old-run": None, "new-run": key["id"]}
