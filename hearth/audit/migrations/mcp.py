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
