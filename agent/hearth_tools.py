"""The tool registry: a Tool record, the TOOLS registry, and call_tool().

Adding a capability is adding one `register(Tool(...))` in the module of its kind under
`agent/tools/`. `call_tool()` is the single gate every call goes through: it looks the name up
exactly (look-alike names never run), checks the run's manifest and the mode's policy, validates
the arguments against the schema, runs the tool, caps the output, and never raises because a tool
failed: the failure is the result the model reads.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from agent.safety import policy
from agent.parsing import suggest_tool_name
from agent.services import RunServices
from agent.safety.workspace import PathRefused, Workspace

RISKS = ("safe", "edit", "dangerous")
OUTPUT_LIMIT = 16_000
ARGUMENTS_LIMIT = 2_000_000  # characters of JSON; a write of a big file is fine, a flood is not
_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "boolean": (bool,)}


class ToolFailed(Exception):
    """Raised by a tool function; str(error) is the one line the model reads."""


ToolFn = Callable[[dict[str, Any], Workspace], str]


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

    def schema(self) -> dict[str, Any]:
        """The tool as Ollama's `tools` field wants it."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {"type": "object", "properties": self.params, "required": list(self.required)},
            },
        }


@dataclass
class ToolResult:
    ok: bool
    output: str
    verdict: str = "run"  # the policy side: run | approved | denied | invalid | unknown
    truncated: bool = False
    duration_s: float = 0.0
    detail: dict[str, Any] = field(default_factory=dict)


TOOLS: dict[str, Tool] = {}


def register(tool: Tool) -> Tool:
    if tool.risk not in RISKS:
        raise ValueError(f"tool {tool.name}: risk must be one of {RISKS}, not {tool.risk!r}")
    TOOLS[tool.name] = tool
    return tool


def risk_of(name: str) -> str:
    """A name without a class is dangerous."""
    tool = TOOLS.get(name)
    return tool.risk if tool else "dangerous"


def visible_tools(allowed: Iterable[str] | None, mode: str = "auto",
                  services: RunServices | None = None) -> list[Tool]:
    """The tools a run's model is shown: the manifest's, minus what the mode denies outright and
    what cannot work with the run's services (no config repo, not NixOS)."""
    services = services or RunServices()
    names = set(TOOLS) if allowed is None else set(allowed) & set(TOOLS)
    return [TOOLS[n] for n in sorted(names)
            if policy.decide(n, TOOLS[n].risk, mode, allowed).action != "deny"
            and (TOOLS[n].available is None or TOOLS[n].available(services))]


def call_tool(
    name: str,
    args: Any,
    workspace: Workspace | str | os.PathLike[str],
    *,
    mode: str = "auto",
    allowed: Iterable[str] | None = None,
    approve: policy.Approver | None = None,
    output_limit: int = OUTPUT_LIMIT,
) -> ToolResult:
    started = time.monotonic()
    result = _gate_and_run(name, args, workspace, mode, allowed, approve)
    if isinstance(workspace, Workspace):  # the choke point: no credential value leaves a tool
        result.output = workspace.services.redact(result.output)
    result.output, result.truncated = cap_output(result.output, output_limit)
    result.duration_s = time.monotonic() - started
    return result


def _gate_and_run(
    name: str,
    args: Any,
    workspace: Workspace | str | os.PathLike[str],
    mode: str,
    allowed: Iterable[str] | None,
    approve: policy.Approver | None,
) -> ToolResult:
    tool = TOOLS.get(name) if isinstance(name, str) else None
    if tool is None:  # exact names only: a look-alike never runs (the loop repairs names before this)
        return ToolResult(False, _unknown_tool_message(name, allowed), verdict="unknown")
    verdict = policy.decide(name, tool.risk, mode, allowed)  # the manifest and the mode come first
    if verdict.action != "deny":
        checked = validate_arguments(tool, args)
        if isinstance(checked, str):
            return ToolResult(False, checked, verdict="invalid")
        verdict = policy.decide(name, tool.risk, mode, allowed, checked, auto_commands=_auto_commands(workspace))
    if verdict.action == "deny":
        return ToolResult(False, policy.denied_message(name, verdict.reason), verdict="denied",
                          detail={"reason": verdict.reason})
    decided: dict[str, Any] = {"policy": verdict.reason} if verdict.reason else {}
    if verdict.action == "ask":
        decision = _ask(approve, name, checked, verdict.reason)
        decided = {"decided_by": decision.by, "reason": verdict.reason,
                   **({"approval": decision.ref} if decision.ref else {})}
        if not decision.granted:
            return ToolResult(False, policy.denied_message(name, decision.detail), verdict="denied",
                              detail=decided)
    result = _run(tool, checked, workspace)
    if "decided_by" in decided and result.verdict == "run":
        result.verdict = "approved"
    result.detail.update(decided)
    return result


def _ask(approve: policy.Approver | None, name: str, args: dict[str, Any], reason: str) -> policy.Decision:
    """The approver's decision; one that cannot be asked (its store is down) is a deny, never a run."""
    if approve is None:
        return policy.NO_APPROVER
    try:
        return approve(name, args, reason)
    except Exception as exc:
        return policy.Decision(False, by="policy", detail=f"approval could not be asked: {type(exc).__name__}: {exc}")


def _auto_commands(workspace: Workspace | str | os.PathLike[str]) -> tuple[str, ...]:
    return tuple(workspace.services.auto_commands) if isinstance(workspace, Workspace) else ()


def _run(tool: Tool, args: dict[str, Any], workspace: Workspace | str | os.PathLike[str]) -> ToolResult:
    try:
        if isinstance(workspace, Workspace):
            return ToolResult(True, tool.fn(args, workspace))
        with Workspace(workspace) as ws:
            return ToolResult(True, tool.fn(args, ws))
    except (ToolFailed, PathRefused) as failure:
        return ToolResult(False, f"Error: {failure}")
    except Exception as exc:  # a tool bug must not end the run: the model reads it
        return ToolResult(False, f"Error: {tool.name} failed: {type(exc).__name__}: {exc}")


def _unknown_tool_message(name: Any, allowed: Iterable[str] | None) -> str:
    shown = name if isinstance(name, str) else repr(name)
    shown = shown if len(shown) <= 80 else shown[:80] + "..."
    names = TOOLS if allowed is None else [n for n in allowed if n in TOOLS]
    guess = suggest_tool_name(shown, names) if isinstance(name, str) else None
    hint = f"; did you mean {guess}?" if guess else f"; available: {_few(sorted(names))}"
    return f"Error: no tool named {shown!r}{hint}"


def _few(names: list[str], most: int = 10) -> str:
    """At most `most` names: the model has the whole list already, and the error stays one short line."""
    more = f" and {len(names) - most} more (see the tool list)" if len(names) > most else ""
    return ", ".join(names[:most]) + more


def validate_arguments(tool: Tool, args: Any) -> dict[str, Any] | str:
    """The arguments, coerced where a weak model's intent is unambiguous, or an error line."""
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return f"Error: arguments of {tool.name} must be a JSON object, got {type(args).__name__}"
    try:
        size = len(json.dumps(args, default=str))
    except (RecursionError, ValueError):  # nested past any sense, or circular
        return f"Error: arguments of {tool.name} are nested too deeply; give flat values as its schema says"
    if size > ARGUMENTS_LIMIT:
        return f"Error: arguments of {tool.name} are larger than {ARGUMENTS_LIMIT} characters"
    unknown = sorted(set(args) - set(tool.params))
    if unknown:
        return f"Error: {tool.name} has no argument {unknown[0]!r}; it takes: {_signature(tool)}"
    missing = [p for p in tool.required if p not in args or args[p] is None]
    if missing:
        return f"Error: {tool.name} needs argument {missing[0]!r}; it takes: {_signature(tool)}"
    out: dict[str, Any] = {}
    for key, value in args.items():
        coerced = _coerce(value, tool.params[key])
        if isinstance(coerced, _Invalid):
            return f"Error: argument {key!r} of {tool.name} {coerced.reason}"
        out[key] = coerced
    return out


@dataclass(frozen=True)
class _Invalid:
    reason: str


def _coerce(value: Any, spec: dict[str, Any]) -> Any:
    kind = spec.get("type", "string")
    if kind == "integer" and isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value.strip())
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        value = int(value)
    if kind == "boolean" and isinstance(value, str) and value.strip().lower() in ("true", "false"):
        value = value.strip().lower() == "true"
    if kind == "string" and isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    expected = _TYPES.get(kind, (object,))
    if not isinstance(value, expected) or (kind == "integer" and isinstance(value, bool)):
        return _Invalid(f"must be {kind}, got {type(value).__name__}")
    if "enum" in spec and value not in spec["enum"]:
        return _Invalid(f"must be one of {', '.join(map(str, spec['enum']))}, got {value!r}")
    if kind == "string" and "\x00" in value and not spec.get("binary_ok"):
        return _Invalid("contains a NUL byte")
    if kind == "string" and len(value) > spec.get("maxLength", ARGUMENTS_LIMIT):
        return _Invalid(f"is {len(value)} characters long; the limit is {spec['maxLength']}")
    return value


def _signature(tool: Tool) -> str:
    parts = [f"{p} ({s.get('type', 'string')}{'' if p in tool.required else ', optional'})"
             for p, s in tool.params.items()]
    return ", ".join(parts) or "no arguments"


def cap_output(text: str, limit: int = OUTPUT_LIMIT) -> tuple[str, bool]:
    """Keep the head and a little of the tail; say how much was cut."""
    if len(text) <= limit:
        return text, False
    tail = limit // 8
    cut = len(text) - limit
    return f"{text[: limit - tail]}\n[... {cut} characters cut ...]\n{text[-tail:]}", True


def load_builtin_tools() -> None:
    """Import every tool module so its register() calls run."""
    from agent.tools import command, edit, files, knowledge, search, selfknow, web, websearch  # noqa: F401


load_builtin_tools()
