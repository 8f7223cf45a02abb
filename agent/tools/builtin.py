"""Every tool hearth ships, gathered from the kinds in one explicit order.

The one module that imports all the kinds. Each kind (files, search, edit, command, knowledge,
web, websearch, system, config_repo) declares `TOOLS = [Tool(...), ...]` and imports only
agent/tools/registry.py and agent/tools/args.py of this folder, so any kind can be imported
first, alone. Tool names are the seed's and never change once shipped: audit rows refer to them.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent.tools import command, config_repo, edit, files, knowledge, search, system, web, websearch
from agent.tools.registry import Tool

KINDS = (files, search, edit, command, knowledge, web, websearch, system, config_repo)


def gather(tools: Iterable[Tool]) -> dict[str, Tool]:
    """Name -> tool; a name given twice is a bug in the kinds, found at import."""
    table: dict[str, Tool] = {}
    for tool in tools:
        if tool.name in table:
            raise ValueError(f"two tools are named {tool.name!r}")
        table[tool.name] = tool
    return table


TOOLS: dict[str, Tool] = gather(tool for kind in KINDS for tool in kind.TOOLS)
