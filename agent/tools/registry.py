"""The tool record: what a capability is, what it takes, what it does, and how risky it is.

A leaf: it imports nothing of agent/ at run time but the errors leaf (agent/errors.py), so every
tool kind (agent/tools/files.py, ...) can import it first. A kind declares its tools as a list, `TOOLS = [Tool(...), ...]`;
agent/tools/builtin.py gathers the lists, agent/tools/gate.py runs the calls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent.errors import AgentError

if TYPE_CHECKING:
    from agent.safety.workspace import Workspace
    from agent.services import RunServices

RISKS = ("safe", "edit", "dangerous")
TOOL_SETS = ("common", "all")  # what a run without a tool list is shown (agent/tools/builtin.py)
ARGUMENTS_LIMIT = 2_000_000  # characters of JSON; a write of a big file is fine, a flood is not
# Keys of a parameter's spec that the gate enforces and the model is not sent: Ollama's client
# drops them anyway, so the description states the bounds in words (a length cap is only
# reached by a flood, and the gate's refusal names it).
GATE_ONLY_KEYS = frozenset({"minimum", "maximum", "maxLength", "binary_ok", "hidden"})
# A parameter spec with "hidden": True is taken by the gate but not shown to the model: a rarely needed
# knob (a timeout, a result count) costs every request of every run its tokens, and small models fill
# whatever optional argument they see. A hint names it where it helps (agent/hints.py).


class ToolFailed(AgentError):
    """Raised by a tool function; str(error) is the one line the model reads."""


ToolFn = Callable[[dict[str, Any], "Workspace"], str]


@dataclass(frozen=True)
class Tool:
    """One capability: what it is, what it takes, what it does, and how risky it is."""

    name: str
    description: str
    params: dict[str, dict[str, Any]]
    fn: ToolFn
    risk: str = "dangerous"
    required: tuple[str, ...] = ()
    # whether a run with these services can use the tool at all (None: always); a tool that
    # cannot work in a run is not shown, which keeps small context windows for the rest
    available: Callable[[RunServices], bool] | None = None
    # whether running it may change files in the workspace (a checkpoint after the run is owed)
    writes: bool = False
    # the risk of one call from its checked arguments, when it depends on them (write_self_config:
    # a change that widens security is dangerous); None: always `risk`. It may only raise the risk.
    risk_of_call: Callable[[dict[str, Any], Workspace], str] | None = None
    # where its results come from when that is outside the box: "url" (its url argument), or a
    # name (an MCP server); the gate envelopes such a result as data (agent/context/envelope.py)
    outside: str = ""

    def __post_init__(self) -> None:
        if self.risk not in RISKS:
            raise ValueError(f"tool {self.name}: risk must be one of {RISKS}, not {self.risk!r}")

    def schema(self) -> dict[str, Any]:
        """The tool as Ollama's `tools` field wants it."""
        properties = {
            name: {k: v for k, v in spec.items() if k not in GATE_ONLY_KEYS}
            for name, spec in self.params.items()
            if not spec.get("hidden")
        }
        parameters: dict[str, Any] = {"type": "object", "properties": properties}
        if self.required:
            parameters["required"] = list(self.required)
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": parameters},
        }


def arguments_size(value: Any, limit: int = ARGUMENTS_LIMIT, max_depth: int = 32) -> int | None:
    """About the characters `value` takes as JSON, counted without building it and stopping as soon
    as it passes `limit` (a 500 MB string is measured, never copied); None when nested past `max_depth`."""
    size, stack = 0, [(value, 0)]
    while stack and size <= limit:
        item, depth = stack.pop()
        if depth > max_depth:
            return None
        if isinstance(item, str):
            size += len(item) + 2
        elif isinstance(item, dict):
            size += 2 + 2 * len(item)
            stack.extend((part, depth + 1) for pair in item.items() for part in pair)
        elif isinstance(item, list | tuple):
            size += 2 + len(item)
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, int) and not isinstance(item, bool):
            size += item.bit_length() // 3 + 1  # never str() of it: a huge int is slow to print
        else:
            size += 24
    return size


@dataclass
class ToolResult:
    ok: bool
    output: str
    verdict: str = "run"  # the policy side: run | approved | denied | invalid | unknown
    truncated: bool = False
    duration_s: float = 0.0
    detail: dict[str, Any] = field(default_factory=dict)
