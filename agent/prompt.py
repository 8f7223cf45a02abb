"""The system prompt: rendered once per run, byte-identical in every request of it."""

from __future__ import annotations

import json
from typing import Any

BASE_PROMPT = """\
You are {agent_name}, an agent running on hearth, a local and sandboxed agent appliance.
You work inside one workspace directory; every path you give a tool is relative to it.

How to work:
- Use the tools to reach the goal: look before you change, check what you changed.
- Call a tool through the tool-calling interface. If you cannot, write exactly one JSON object
  on its own, like {{"name": "read_file", "arguments": {{"path": "notes.txt"}}}}.
- A tool result that starts with "Error:" tells you what went wrong; fix the call, do not repeat it.
- A result that starts with "Denied:" is final: do not retry it or reach the same end another way.
- When the goal is reached, or cannot be, answer in plain text with no tool call: a short final
  summary of what you did, what you found, and which files you changed.

Tools you may call:
{tool_lines}
"""


def render_system_prompt(agent_name: str, tool_schemas: list[dict[str, Any]]) -> str:
    return BASE_PROMPT.format(agent_name=agent_name, tool_lines=_tool_lines(tool_schemas))


def _tool_lines(tool_schemas: list[dict[str, Any]]) -> str:
    lines = []
    for schema in tool_schemas:
        fn = schema["function"]
        params = fn["parameters"]
        args = {p: spec.get("type", "string") for p, spec in params["properties"].items()}
        lines.append(f"- {fn['name']} {json.dumps(args)}: {fn['description']}")
    return "\n".join(lines) if lines else "- (none: answer from what you know)"
