"""Runs one goal end to end: validate, record, prepare the workspace, loop, record the outcome.

`hearth-loop` and `hearth agent` (the queue's per-run unit) both come through `run_goal`, so a
run from any source is recorded the same way. Bad input is recorded too (status `rejected`).
"""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from agent.hearth_tools import call_tool, visible_tools
from agent.loop import Loop, Outcome, ToolBox
from agent.ollama_client import ChatModel, OllamaClient
from agent.parsing import ToolCall
from agent.policy import MODES, Approver
from agent.prompt import render_system_prompt
from agent.sandbox import SandboxPolicy, SandboxUnavailable, detect
from agent.services import RunServices
from agent.workspace import Workspace
from hearth.audit import AuditStore, RunRecord, new_run_id
from hearth.errors import UsageError
from hearth.recorder import Recorder
from hearth.settings import Settings, probe_writable
from hearth.state import StateFile

EXIT_CODES = {
    "done": 0,
    "failed": 1,
    "usage": 2,
    "iteration_limit": 3,
    "model_unavailable": 4,
    "denied": 5,
    "rejected": 2,
    "interrupted": 130,
    "internal": 70,
}
MAX_ITERS_CEILING = 100


@dataclass
class GoalRequest:
    goal: str
    model: str
    agent_name: str = "default"
    mode: str = "auto"
    max_iters: int = 12
    workspace: Path | None = None
    run_id: str | None = None
    source: str = "cli"
    requested_by: str = ""
    allowed_tools: list[str] | None = None
    network: bool = False
    timeout_s: float | None = None
    num_ctx: int = 8192
    credentials: list[str] | None = None
    egress: list[str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Interrupted(BaseException):
    """SIGTERM or SIGINT arrived; the run is recorded as interrupted."""


def validate(request: GoalRequest) -> str | None:
    """The one-line reason a request cannot run, or None."""
    if not request.goal.strip():
        return "the goal is empty; say what the agent should do"
    if request.mode not in MODES:
        return f"unknown mode {request.mode!r}; use one of {', '.join(MODES)}"
    if not 1 <= request.max_iters <= MAX_ITERS_CEILING:
        return f"max iterations must be between 1 and {MAX_ITERS_CEILING}, got {request.max_iters}"
    if not request.model.strip():
        return "no model given; pass --model NAME"
    return None


def prepare_workspace(path: Path) -> Path:
    """The workspace directory, created if missing; UsageError if it is a file or unwritable."""
    if path.exists() and not path.is_dir():
        raise UsageError(f"workspace {path} is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe_writable(path)
    except OSError as exc:
        raise UsageError(f"workspace {path} is not writable: {exc.strerror or exc}") from None
    return path.resolve()


def run_goal(
    request: GoalRequest,
    settings: Settings,
    *,
    model: ChatModel | None = None,
    approve: Approver | None = None,
    json_lines: bool = False,
    out: TextIO = sys.stdout,
    before_loop: Callable[[Loop, Recorder], None] | None = None,
) -> tuple[str, Outcome]:
    """Run and record one goal; returns (run id, outcome). Bad input raises UsageError, recorded."""
    state_dir = settings.writable_state_dir()
    run_id = request.run_id or new_run_id()
    with AuditStore(settings.audit_path) as audit:
        audit.start_run(RunRecord(
            id=run_id, agent_name=request.agent_name, model=request.model, goal=request.goal,
            mode=request.mode, source=request.source, requested_by=request.requested_by,
        ))
        try:
            root = _checked(request, settings, run_id)
        except UsageError as exc:
            audit.finish_run(run_id, status="rejected", error=str(exc), iterations=0)
            raise
        sandbox = _sandbox_label(settings.sandbox)
        audit.update_run(run_id, workspace=str(root), sandbox=sandbox)
        state = StateFile(settings.runs_state_dir, run_id, agent_name=request.agent_name, model=request.model)
        recorder = Recorder(audit, state, run_id, json_lines=json_lines, out=out)
        services = RunServices(sandbox=SandboxPolicy(kind=settings.sandbox, network=request.network,
                                                     hide=(str(state_dir),)))
        client = model or _client(request, settings)
        with Workspace(root, services=services) as ws:
            loop = _build_loop(request, ws, client, approve, recorder)
            if before_loop:
                before_loop(loop, recorder)
            outcome = _drive(loop, request, audit, run_id, state)
        if isinstance(client, OllamaClient) and model is None:
            client.close()
    return run_id, outcome


def _checked(request: GoalRequest, settings: Settings, run_id: str) -> Path:
    problem = validate(request)
    if problem:
        raise UsageError(problem)
    return prepare_workspace(request.workspace or settings.agents_dir / run_id)


def _sandbox_label(kind: str) -> str:
    try:
        return detect(kind)
    except SandboxUnavailable as exc:
        return f"unavailable: {exc}"


def _client(request: GoalRequest, settings: Settings) -> OllamaClient:
    return OllamaClient(request.model, settings.ollama_host, num_ctx=request.num_ctx,
                        timeout_s=settings.ollama_timeout_s, backoff_s=settings.ollama_backoff_s)


def _build_loop(request: GoalRequest, ws: Workspace, model: ChatModel,
                approve: Approver | None, recorder: Recorder) -> Loop:
    tools = visible_tools(request.allowed_tools, request.mode)
    schemas = [t.schema() for t in tools]

    def run(call: ToolCall) -> Any:
        return call_tool(call.name, call.arguments, ws, mode=request.mode,
                         allowed=request.allowed_tools, approve=approve)

    deadline = time.monotonic() + request.timeout_s if request.timeout_s else None
    return Loop(model, ToolBox(schemas, run), system_prompt=render_system_prompt(request.agent_name, schemas),
                max_iters=request.max_iters, on_event=recorder, deadline=deadline)


def _drive(loop: Loop, request: GoalRequest, audit: AuditStore, run_id: str, state: StateFile) -> Outcome:
    started = time.monotonic()
    previous = _trap_signals()
    try:
        outcome = loop.run(request.goal)
    except (Interrupted, KeyboardInterrupt):
        outcome = loop.outcome
        outcome.status, outcome.error, outcome.iterations = "interrupted", "interrupted by a signal", loop.iteration
        state.update("interrupted", outcome.error, loop.iteration)
    finally:
        _restore_signals(previous)
    audit.finish_run(
        run_id, status=outcome.status, iterations=outcome.iterations, tokens_in=outcome.tokens_in,
        tokens_out=outcome.tokens_out, latency_ms=int(outcome.model_seconds * 1000),
        duration_ms=int((time.monotonic() - started) * 1000), error=outcome.error or None,
        summary=outcome.summary,
    )
    return outcome


def _trap_signals() -> Any:
    def interrupted(signum: int, frame: Any) -> None:
        raise Interrupted()

    try:
        return signal.signal(signal.SIGTERM, interrupted)
    except ValueError:  # not the main thread: the caller owns signals
        return None


def _restore_signals(previous: Any) -> None:
    if previous is not None:
        signal.signal(signal.SIGTERM, previous)


def exit_code(status: str) -> int:
    return EXIT_CODES.get(status, EXIT_CODES["internal"])

