"""Reply text -> list[ToolCall]; all JSON repair lives in this package and nowhere else.

extractors.py    parse_tool_calls, and the rule of what is and is not a call
calls.py         ToolCall and the records extractors share; the name rule (resolve)
reasoning.py     the reply without its reasoning channels
layout.py        where a span stands in the reply, and how the prose before it frames it
xml_calls.py     families whose arguments are elements (invoke/parameter, <function=...>, GLM)
tagged.py        families that name the tool in their own syntax (Mistral, DeepSeek, Kimi, ...)
json_calls.py    calls as JSON values, bare, fenced or after a marker
python_calls.py  calls in Python syntax
names.py         tool names as weak models spell them (resolve, suggest)
json_repair.py   lenient JSON: the repairs a weak model's output needs, and nothing more
"""

from agent.parsing.calls import ToolCall, coerce_arguments, parameter_order
from agent.parsing.extractors import looks_like_tool_call, parse_tool_calls
from agent.parsing.json_repair import loads_lenient
from agent.parsing.names import resolve_tool_name, suggest_tool_name

__all__ = [
    "ToolCall",
    "coerce_arguments",
    "loads_lenient",
    "looks_like_tool_call",
    "parameter_order",
    "parse_tool_calls",
    "resolve_tool_name",
    "suggest_tool_name",
]
