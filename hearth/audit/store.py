"""AuditStore: the only writer of audit.db (SQLite through sqlite-utils, WAL, migrations).

A row per run and a row per step; later tables (approvals, rejections, ...) come as migrations
in `hearth/audit_migrations.py`. The file stays plain SQLite, readable as-is by sqlite-utils
and Datasette. Several processes write at once (one per run): WAL plus a busy timeout.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent.clock import utc_now
from agent.sqlite_store import immediate, migrate, open_database
from hearth.audit.migrations import MIGRATIONS

__all__ = ["AuditStore", "RunRecord", "cap", "immediate", "new_run_id"]

ARGUMENTS_CAP = 4_000
OUTPUT_CAP = 8_000


def new_run_id(now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> str:
    return f"{now().strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(3)}"


def cap(text: str | None, limit: int) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} characters not stored]"


@dataclass
class RunRecord:
    id: str
    agent_name: str
    model: str
    goal: str
    mode: str
    source: str = "cli"
    requested_by: str = ""
    workspace: str = ""
    sandbox: str = ""
    status: str = "running"
    started_at: str = ""


class AuditStore:
    def __init__(self, path: str | Path, *, clock: Callable[[], str] = utc_now) -> None:
        self.path = Path(path)
        self.clock = clock
        self.db = open_database(self.path)
        migrate(self.db, MIGRATIONS)

    def close(self) -> None:
        self.db.conn.close()

    def __enter__(self) -> AuditStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- runs ------------------------------------------------------------------------------
    def start_run(self, run: RunRecord) -> None:
        run.started_at = run.started_at or self.clock()
        self.db.table("runs").insert(asdict(run))

    def finish_run(self, run_id: str, **fields: Any) -> None:
        fields.setdefault("ended_at", self.clock())
        if "error" in fields:
            fields["error"] = cap(fields["error"], ARGUMENTS_CAP)
        self.db.table("runs").update(run_id, fields)

    def update_run(self, run_id: str, **fields: Any) -> None:
        self.db.table("runs").update(run_id, fields)

    def run(self, run_id: str) -> dict[str, Any] | None:
        rows = list(self.db["runs"].rows_where("id = ?", [run_id]))
        return rows[0] if rows else None

    def runs(self, limit: int = 20, **where: Any) -> list[dict[str, Any]]:
        clause = " and ".join(f"{k} = :{k}" for k in where) or None
        return list(self.db["runs"].rows_where(clause, where, order_by="started_at desc, rowid desc", limit=limit))

    def find_run(self, prefix: str) -> dict[str, Any] | None:
        """A run by its id or a unique prefix of it."""
        return self.find_by_id_or_prefix("runs", prefix)

    def find_by_id_or_prefix(self, table: str, ident: str) -> dict[str, Any] | None:
        """A row of `table` by its id, else by a prefix that matches exactly one id (`_` and `%` literal)."""
        rows = list(self.db[table].rows_where("id = ?", [ident], limit=1))
        if not rows:
            rows = list(self.db[table].rows_where("id like ? escape '\\'", [_like_prefix(ident)], limit=2))
        return rows[0] if len(rows) == 1 else None

    # -- steps -----------------------------------------------------------------------------
    def record_step(self, run_id: str, kind: str, **fields: Any) -> int:
        if "arguments" in fields and not isinstance(fields["arguments"], str | None):
            fields["arguments"] = json.dumps(fields["arguments"], ensure_ascii=False, default=str)
        fields["arguments"] = cap(fields.get("arguments"), ARGUMENTS_CAP)
        fields["output"] = cap(fields.get("output"), OUTPUT_CAP)
        with immediate(self.db):
            seq = self.db.execute("select coalesce(max(seq), 0) + 1 from steps where run_id = ?", [run_id]).fetchone()[
                0
            ]
            self.db.table("steps").insert({"run_id": run_id, "seq": seq, "at": self.clock(), "kind": kind, **fields})
        return seq

    def steps(self, run_id: str) -> list[dict[str, Any]]:
        return list(self.db["steps"].rows_where("run_id = ?", [run_id], order_by="seq"))

    # -- workspace checkpoints -------------------------------------------------------------
    def record_checkpoint(self, run_id: str, **fields: Any) -> None:
        self.db.table("checkpoints").insert({"run_id": run_id, "at": self.clock(), **fields})

    def checkpoints(self, run_id: str) -> list[dict[str, Any]]:
        return list(self.db["checkpoints"].rows_where("run_id = ?", [run_id], order_by="id"))


def _like_prefix(prefix: str) -> str:
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"
