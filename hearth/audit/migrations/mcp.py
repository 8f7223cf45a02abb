"""The MCP tools an operator approved (pinned).

Part of the list in hearth/audit/migrations/__init__.py. Never edit a shipped migration: its
name is recorded in each audit.db's `_migrations` as applied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils


def m130_mcp_pins(db: sqlite_utils.Database) -> None:
    """The MCP tools an operator approved (hearth/mcp/pins.py): per server and tool, the SHA-256 of
    its name, description and input schema as approved, that description and schema, who and when.
    Approving again replaces the row."""
    db.table("mcp_pins").create(
        {
            "server": str,
            "tool": str,
            "sha256": str,
            "description": str,
            "schema": str,
            "approved_by": str,
            "approved_at": str,
        },
        pk=("server", "tool"),
    )


def m210_mcp_drift_index(db: sqlite_utils.Database) -> None:
    """The drift runs found (`mcp` steps with the verdict `drift`), read at every start of a run that
    has MCP tools (hearth/mcp/pins.py: a tool known changed is not offered until approved again): a
    partial index holding only those steps, so the read costs nothing per other step."""
    db.execute("create index if not exists idx_steps_mcp_drift on steps(id) where kind = 'mcp' and verdict = 'drift'")
