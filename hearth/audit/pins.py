"""The MCP tools an operator approved (`mcp_pins`): one row per server and tool, replaced when the
tool is approved again. hearth/mcp/pins.py makes its records of these rows and compares them with
what a server lists."""

from __future__ import annotations

from typing import Any

from hearth.audit.store import AuditStore, Rows

COLUMNS = ("server", "tool", "sha256", "description", "schema", "approved_by", "approved_at")


def save(audit: AuditStore, row: dict[str, Any]) -> None:
    """Approve a tool as `row` says (every one of COLUMNS): it replaces the server's earlier pin of it."""
    audit.conn.execute(
        "insert or replace into mcp_pins (server, tool, sha256, description, schema, approved_by, approved_at)"
        " values (:server, :tool, :sha256, :description, :schema, :approved_by, :approved_at)",
        {name: row[name] for name in COLUMNS},
    )


def of_server(db: Rows, server: str) -> list[dict[str, Any]]:
    """The server's pins, by tool name."""
    return db.rows("select * from mcp_pins where server = ? order by tool", [server])
