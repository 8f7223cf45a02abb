"""Roles for the tests: a role's profile in a config directory, its heartbeats queued and run for
real (the queue file read back, admitted and run against the fake Ollama), and the audit's rows."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path
from typing import Any

from hearth.queue.request import Request
from hearth.roles.heartbeat import Fired
from hearth.run.admission import goal_request
from hearth.run.runner import run_goal
from hearth.settings import Settings


def make_role(config: Path, name: str, toml: str = "home = true\n", role: str = "You keep the house.\n") -> Path:
    directory = config / "agents" / name
    directory.mkdir(parents=True)
    (directory / "AGENTS.md").write_text(role)
    (directory / "agent.toml").write_text(toml)
    return directory


def settings_for(tmp_path: Path, url: str = "http://127.0.0.1:9") -> Settings:
    return Settings.from_env(
        {
            "HEARTH_STATE_DIR": str(tmp_path / "state"),
            "HEARTH_CONFIG_DIR": str(tmp_path / "config"),
            "OLLAMA_HOST": url,
            "HEARTH_OLLAMA_BACKOFF_S": "0.01",
        }
    )


def run_queued(fired: Fired, settings: Settings) -> tuple[str, str]:
    """The heartbeat's queued request run as `hearth agent` would: (run id, status)."""
    assert fired.path is not None, f"nothing was queued: {fired.why}"
    request = Request.model_validate_json(fired.path.read_bytes())
    run_id, outcome = run_goal(goal_request(request, settings), settings, out=io.StringIO())
    return run_id, outcome.status


def rows(settings: Settings, sql: str, *args: Any) -> list[dict[str, Any]]:
    conn = sqlite3.connect(settings.audit_path)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(sql, args)]
    finally:
        conn.close()
