"""Every tool hearth ships, gathered from the kinds in one explicit order.

The one module that imports all the kinds. Each kind (files, search, edit, command, knowledge,
web, websearch, system, config_repo, delegate, skills) declares `TOOLS = [Tool(...), ...]` and imports only
agent/tools/registry.py and agent/tools/args.py of this folder, so any kind can be imported
first, alone. Tool names are the seed's and never change once shipped: audit rows refer to them.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent.tools import command, config_repo, delegate, edit, files, knowledge, search, skills, system, web, websearch
from agent.tools.registry import TOOL_SETS, Tool

__all__ = ["COMMON", "TOOLS", "TOOL_SETS", "gather", "manifest_of"]

KINDS = (files, search, edit, command, knowledge, web, websearch, system, config_repo, delegate, skills)


def gather(tools: Iterable[Tool]) -> dict[str, Tool]:
    """Name -> tool; a name given twice is a bug in the kinds, found at import."""
    table: dict[str, Tool] = {}
    for tool in tools:
        if tool.name in table:
            raise ValueError(f"two tools are named {tool.name!r}")
        table[tool.name] = tool
    return table


TOOLS: dict[str, Tool] = gather(tool for kind in KINDS for tool in kind.TOOLS)

# What a run is shown when nothing lists its tools: the common chores (look, change, run, look
# things up on the web), so a small window keeps room for the work. The rest is one setting away
# (`tool_set = "all"` in a profile, HEARTH_TOOL_SET=all for the box, or an allowed_tools list).
COMMON = (
    "read_file",
    "list_files",
    "search_files",
    "write_file",
    "edit_file",
    "run_command",
    "web_search",
    "web_fetch",
    "load_skill",  # shown only to a run offered a skill (agent/tools/skills.py)
)


def manifest_of(allowed: Iterable[str] | None, tool_set: str, added: Iterable[str] = ()) -> list[str] | None:
    """The run's manifest: a list given, else the tool set's (None: every tool). `added` are the
    appliance's own additions (approved MCP tools), which the common set keeps: they were chosen."""
    if allowed is not None:
        return list(allowed)
    if tool_set == "all":
        return None
    return [*COMMON, *added]
