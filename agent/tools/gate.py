"""The gate every tool call goes through, and the ToolRunner a run's loop calls.

One call, in this order, in one place:

    before      the run's before hooks (`ToolRunner(before=...)`), in order: the first that
                refuses makes its refusal the result (a `denied` like the policy's, and no step
                below runs, nor any later before hook); one may raise a StopRun to end the run
    lookup      the exact name (look-alikes never run; the loop repairs names before this)
    policy      the run's manifest and mode (agent/safety/policy.py), then with the checked
                arguments: the command floor and the auto-approved heads
    validation  types, enums, lengths and numeric bounds from the tool's params
                (agent/tools/arguments.py)
    approval    an `ask` goes to the run's approver; no approver or no answer is a deny
    tool        its function; ToolFailed / PathRefused / any bug become the result's text
    redaction   no credential value leaves a tool (the run's redactor)
    spill       an output too long for the window is saved in the workspace, a preview shown
    notes       context files of subdirectories the call reached first, once each
    cap         ONE cap of what the model reads (`output_limit`)
    after       the run's after hooks (`ToolRunner(after=...)`), in order, each with the call and
                its result as the model will read it, refused or not; one may raise a StopRun

`call_tool()` is that path for one call, without hooks; `ToolRunner` is it for a run (its tools'
schemas, its spill and notes, its hooks). Neither raises because a tool failed: the failure is
the result the model reads. Only a hook's StopRun leaves the gate, and the loop catches it. The
appliance extends a run's calls by hooks (hearth/run/walls.py: the tripwires, the proxy's
connections), never by subclassing; it records only what comes back.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent.context.files import SubdirectoryNotes
from agent.parsing import ToolCall, suggest_tool_name
from agent.safety import policy
from agent.safety.display import bounded, shorten
from agent.safety.workspace import PathRefused, Workspace
from agent.services import RunServices
from agent.tools.arguments import validate_arguments
from agent.tools.builtin import TOOLS
from agent.tools.registry import RISKS, Tool, ToolFailed, ToolResult
from agent.tools.spill import OUTPUT_LIMIT, OutputSpill, cap_output

__all__ = [
    "OUTPUT_LIMIT",
    "TOOLS",
    "AfterHook",
    "BeforeHook",
    "Clearance",
    "ToolRunner",
    "call_tool",
    "cap_output",
    "risk_of",
    "tools_of",
    "validate_arguments",
    "visible_tools",
]

Finish = Callable[[str, Any, ToolResult], str]  # (name, raw arguments, result) -> the output to keep


class BeforeHook(Protocol):
    """Asked before the gate about each call: a reason to refuse it (the model reads it as a denial,
    the audit records it as one), or None to let the gate decide. It may raise a StopRun."""

    def __call__(self, call: ToolCall, /) -> str | None: ...


class AfterHook(Protocol):
    """Shown each call and its result as the model will read it (refusals too). It may raise a StopRun."""

    def __call__(self, call: ToolCall, result: ToolResult, /) -> None: ...


def risk_of(name: str) -> str:
    """A name without a class is dangerous."""
    tool = TOOLS.get(name)
    return tool.risk if tool else "dangerous"


def tools_of(services: RunServices) -> Mapping[str, Tool]:
    """Every tool a run with these services has: hearth's own, and those the appliance added
    (approved MCP tools, `<server>__<tool>`: a name of hearth's own is never replaced)."""
    if not services.tools:
        return TOOLS
    added: dict[str, Tool] = {t.name: t for t in services.tools if isinstance(t, Tool) and t.name not in TOOLS}
    return {**TOOLS, **added}


def visible_tools(allowed: Iterable[str] | None, mode: str = "auto", services: RunServices | None = None) -> list[Tool]:
    """The tools a run's model is shown: the manifest's, minus what the mode denies outright and
    what cannot work with the run's services (no config repo, not NixOS)."""
    services = services or RunServices()
    table = tools_of(services)
    names = set(table) if allowed is None else set(allowed) & set(table)
    return [
        table[n]
        for n in sorted(names)
        if policy.decide(n, table[n].risk, mode, allowed).action != "deny" and _usable(table[n], services)
    ]


def _usable(tool: Tool, services: RunServices) -> bool:
    return tool.available is None or tool.available(services)


@dataclass
class Clearance:
    """The gate's one decision about a call, before anything runs.

    `verdict` is run | approved (may run) or denied | invalid | unknown (does not); `arguments`
    are the checked ones, `refusal` is what the model reads when it does not run, and `detail`
    (the policy's reason, who decided, the approval's id) goes into the audit either way.
    """

    verdict: str
    tool: Tool | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    refusal: str = ""
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def cleared(self) -> bool:
        return self.verdict in ("run", "approved")


def clear(
    name: Any, args: Any, ws: Workspace, mode: str, allowed: Iterable[str] | None, approve: policy.Approver | None
) -> Clearance:
    """Lookup, policy, validation and approval of one call."""
    table = tools_of(ws.services)
    tool = table.get(name) if isinstance(name, str) else None
    if tool is None:
        return Clearance("unknown", refusal=_unknown_tool_message(name, allowed, table))
    verdict = policy.decide(name, tool.risk, mode, allowed)  # the manifest and the mode come first
    checked: dict[str, Any] = {}
    if verdict.action != "deny":
        validated = validate_arguments(tool, args)
        if isinstance(validated, str):
            return Clearance("invalid", tool, refusal=validated)
        checked = validated
        risk = _call_risk(tool, checked, ws)
        verdict = policy.decide(name, risk, mode, allowed, checked, auto_commands=ws.services.auto_commands)
    if verdict.action == "deny":
        return Clearance(
            "denied", tool, refusal=policy.denied_message(name, verdict.reason), detail={"reason": verdict.reason}
        )
    if verdict.action == "run":
        return Clearance("run", tool, checked, detail={"policy": verdict.reason} if verdict.reason else {})
    decision = _ask(approve, name, checked, verdict.reason)
    detail = {
        "decided_by": decision.by,
        "reason": verdict.reason,
        **({"approval": decision.ref} if decision.ref else {}),
    }
    if not decision.granted:
        return Clearance("denied", tool, refusal=policy.denied_message(name, decision.detail), detail=detail)
    return Clearance("approved", tool, checked, detail=detail)


def _call_risk(tool: Tool, checked: dict[str, Any], ws: Workspace) -> str:
    """The tool's risk for these arguments: never below its declared one; dangerous if it cannot be judged."""
    if tool.risk_of_call is None:
        return tool.risk
    try:
        risk = tool.risk_of_call(checked, ws)
    except Exception:  # a call whose risk cannot be judged is treated as the riskiest
        return "dangerous"
    return max(tool.risk, risk, key=RISKS.index) if risk in RISKS else "dangerous"


def pass_through(
    name: Any,
    args: Any,
    ws: Workspace,
    *,
    mode: str,
    allowed: Iterable[str] | None,
    approve: policy.Approver | None,
    output_limit: int,
    refused: Clearance | None = None,
    finish: Finish | None = None,
) -> ToolResult:
    """The whole path of one call on an open workspace: clear (unless a hook `refused` it already),
    run, redact, `finish`, cap."""
    started = time.monotonic()
    clearance = refused or clear(name, args, ws, mode, allowed, approve)
    if clearance.cleared and clearance.tool is not None:
        result = _run(clearance.tool, clearance.arguments, ws)
        if result.verdict == "run":
            result.verdict = clearance.verdict
    else:
        result = ToolResult(False, bounded(clearance.refusal), verdict=clearance.verdict)
    result.detail.update(clearance.detail)
    result.output = ws.services.redact(result.output)  # the choke point: no credential value leaves a tool
    if result.ok and clearance.tool is not None and clearance.tool.outside:
        result.output = ws.services.envelope.wrap(result.output, _source(clearance.tool, clearance.arguments))
    if finish is not None:
        result.output = finish(name, args, result)
    result.output, result.truncated = cap_output(result.output, output_limit)
    result.duration_s = time.monotonic() - started
    return result


def _source(tool: Tool, arguments: dict[str, Any]) -> str:
    """Where an outside result came from, for its envelope: the URL asked, or the tool's source."""
    if tool.outside == "url":
        return str(arguments.get("url") or tool.name)
    return f"{tool.outside} ({tool.name})"


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
    """One call through the gate; a path for `workspace` opens a Workspace with default services."""
    with _opened(workspace) as ws:
        return pass_through(name, args, ws, mode=mode, allowed=allowed, approve=approve, output_limit=output_limit)


@contextlib.contextmanager
def _opened(workspace: Workspace | str | os.PathLike[str]) -> Iterator[Workspace]:
    """The workspace argument normalised once: a Workspace as given, or one opened (and closed) for a path."""
    if isinstance(workspace, Workspace):
        yield workspace
        return
    with Workspace(workspace) as ws:
        yield ws


class ToolRunner:
    """A run's tools: what its model is shown, and the gate every one of its calls goes through.

    `spill` and `notes` are the run's (the appliance builds them: the spill knows the run id, the
    notes report flagged files); without them an output is only capped. `before` and `after` are
    its hooks, asked in the order given (the module's docstring says where in the path).
    """

    def __init__(
        self,
        workspace: Workspace,
        *,
        mode: str = "auto",
        allowed: Iterable[str] | None = None,
        approve: policy.Approver | None = None,
        spill: OutputSpill | None = None,
        notes: SubdirectoryNotes | None = None,
        output_limit: int = OUTPUT_LIMIT,
        before: Sequence[BeforeHook] = (),
        after: Sequence[AfterHook] = (),
    ) -> None:
        self.workspace = workspace
        self.mode = mode
        self.allowed = None if allowed is None else list(allowed)
        self.approve = approve
        self.spill = spill
        self.notes = notes
        self.output_limit = output_limit
        self.before = tuple(before)
        self.after = tuple(after)
        visible = visible_tools(self.allowed, mode, workspace.services)
        self.schemas = [t.schema() for t in visible]
        self.names = [t.name for t in visible]
        self.touched = False  # a tool that may change the workspace has run (not: was refused)

    def run(self, call: ToolCall) -> ToolResult:
        result = pass_through(
            call.name,
            call.arguments,
            self.workspace,
            mode=self.mode,
            allowed=self.allowed,
            approve=self.approve,
            output_limit=self.output_limit,
            refused=self._refusal(call),
            finish=self._finish,
        )
        tool = tools_of(self.workspace.services).get(call.name)
        self.touched |= tool is not None and tool.writes and result.verdict in ("run", "approved")
        for hook in self.after:
            hook(call, result)
        return result

    def _refusal(self, call: ToolCall) -> Clearance | None:
        """The first before hook's refusal, as the gate's own denials read and are recorded."""
        for hook in self.before:
            reason = hook(call)
            if reason is not None:
                refusal = policy.denied_message(shorten(call.name), reason)
                return Clearance(
                    "denied",
                    tools_of(self.workspace.services).get(call.name),
                    refusal=refusal,
                    detail={"reason": reason, "decided_by": "hook"},
                )
        return None

    def _finish(self, name: str, arguments: Any, result: ToolResult) -> str:
        output = self.spill(name, arguments, result.output) if self.spill else result.output
        return output + (self.notes.after_tool(arguments, result.ok) if self.notes else "")


def _ask(approve: policy.Approver | None, name: str, args: dict[str, Any], reason: str) -> policy.Decision:
    """The approver's decision; one that cannot be asked (its store is down) is a deny, never a run."""
    if approve is None:
        return policy.NO_APPROVER
    try:
        return approve(name, args, reason)
    except Exception as exc:
        return policy.Decision(False, by="policy", detail=f"approval could not be asked: {type(exc).__name__}: {exc}")


def _run(tool: Tool, args: dict[str, Any], ws: Workspace) -> ToolResult:
    try:
        return ToolResult(True, tool.fn(args, ws))
    except PathRefused as failure:
        return ToolResult(False, bounded(f"Error: {failure}"))
    except ToolFailed as failure:  # the line saying what failed is bounded; a command's output below it is capped
        head, newline, output = str(failure).partition("\n")
        return ToolResult(False, bounded(f"Error: {head}") + newline + output)
    except Exception as exc:  # a tool bug must not end the run: the model reads it
        return ToolResult(False, bounded(f"Error: {tool.name} failed: {type(exc).__name__}: {exc}"))


def _unknown_tool_message(name: Any, allowed: Iterable[str] | None, table: Mapping[str, Tool] = TOOLS) -> str:
    shown = shorten(name if isinstance(name, str) else repr(name))
    names = list(table) if allowed is None else [n for n in allowed if n in table]
    guess = suggest_tool_name(shown, names) if isinstance(name, str) else None
    hint = f"; did you mean {guess}?" if guess else f"; the tools are: {_described(sorted(names), table)}"
    return f"Error: no tool named {shown!r}{hint}"


def _described(names: list[str], table: Mapping[str, Tool], most: int = 10) -> str:
    """Each tool with what it does: a small model that invents a tool named after its goal
    (`set_web_server_port`, `hello`) learns which one does the job, not only their names."""
    if len(names) > most:
        return _few(names, most)
    return "; ".join(f"{n} ({table[n].description.rstrip('.')})" for n in names)


def _few(names: list[str], most: int = 10) -> str:
    """At most `most` names: the model has the whole list already, and the error stays one short line."""
    more = f" and {len(names) - most} more (see the tool list)" if len(names) > most else ""
    return ", ".join(names[:most]) + more
