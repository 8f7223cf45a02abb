"""Reply text -> list[ToolCall]; all JSON repair lives in this package and nowhere else.

extractors.py   the call extraction, with the rule of what is and is not a call
names.py        tool names as weak models spell them (resolve, suggest)
json_repair.py  lenient JSON: the repairs a weak model's output needs, and nothing more
"""

from agent.parsing.extractors import ToolCall, coerce_arguments, looks_like_tool_call, parse_tool_calls
from agent.parsing.json_repair import loads_lenient
from agent.parsing.names import resolve_tool_name, suggest_tool_name

__all__ = [
    "ToolCall",
    "coerce_arguments",
    "loads_lenient",
    "looks_like_tool_call",
    "parse_tool_calls",
    "resolve_tool_name",
    "suggest_tool_name",
]
