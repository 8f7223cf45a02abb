"""A run's timeline (`steps`) and what its model read (`conversation`): every statement on them.

A run writes its steps through the AuditStore's methods (hearth/run/events.py's SqliteRecorder);
the reads below take the store or the command center's read-only connection (`Rows`).
"""

from __future__ import annotations

from typing import Any

from hearth.audit.store import Rows


def tool_calls(db: Rows, tool: str, limit: int) -> list[dict[str, Any]]:
    """The latest calls of one tool across runs, newest first."""
    return db.rows(
        "select run_id, seq, at, verdict, ok from steps where kind = 'tool' and tool = ? order by id desc limit ?",
        [tool, limit],
    )


def mcp_drift(db: Rows, limit: int = 50, since: str = "") -> list[dict[str, Any]]:
    """The `mcp` steps where a run found a server's tools changed since they were approved, newest
    first (those after `since` only, when given)."""
    return db.rows(
        "select run_id, at, detail from steps where kind = 'mcp' and verdict = 'drift' and at > ?"
        " order by id desc limit ?",
        [since, limit],
    )


def tool_steps(db: Rows, run_id: str) -> list[dict[str, Any]]:
    """A run's tool calls in order: the tool, its arguments, verdict and whether it succeeded."""
    return db.rows(
        "select tool, arguments, verdict, ok from steps where run_id = ? and kind = 'tool' order by seq", [run_id]
    )
