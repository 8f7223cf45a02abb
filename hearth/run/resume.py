"""Where a run goes on from, read from the audit: its kept conversation, counts, open step and approval.

A run's conversation is kept message by message as the model reads it (hearth/run/events.py's
MessagesKept, written before the turn is recorded), so a new process of the run rebuilds the
exact history: the system prompt and every earlier message byte for byte (Ollama's cache holds).
What the new process owes its last reply (hearth/run/suspend.py says why it goes on):

    the call that waited for a person    runs now with the decision (its start is recorded
                                         already: the same step is completed, not a second one)
    a delegate call                      runs again, completing its step: it is answered with its
                                         child run's end (hearth/run/delegate.py), or waits again
    a call that started and never ended  is NOT run again: the model reads that its outcome is
                                         unknown because the run's process stopped, and decides
                                         (its step is closed `unknown`; the workspace is as the
                                         call left it, and the checkpoints tell what changed)
    the calls after such a call          are not run either: the model reads that they were not
    calls of the reply not yet started   run, as the model asked

Time: a run's time limit counts the time it worked (`worked_ms`, kept with each message and at
suspension), never the time it waited with no process. Token budgets count tokens, as ever.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent.loop import INVALID_CALL, Resumed
from agent.parsing.calls import ToolCall
from agent.tools.delegate import NAME as DELEGATE
from hearth.audit import approvals
from hearth.audit import steps as step_rows
from hearth.audit.approvals import Approval
from hearth.audit.store import AuditStore
from hearth.run.suspend import SUSPEND, step_data, suspended_on

CHILD = "child"  # the step naming a child a run started (hearth/run/delegate.py)

UNKNOWN = (
    "Error: the outcome of this call is unknown: the run's process stopped while it ran (hearth, its "
    "unit or the machine restarted) and it was not run again. The workspace is as the call left it: "
    "check what it did before you go on, and call it again only if it is still needed."
)
NOT_RUN = (
    "Not run: the run's process stopped before this call started (an earlier call of the same reply "
    "had an unknown outcome). Call it again if it is still needed."
)


@dataclass
class ResumePoint:
    """Everything a new process of the run goes on from."""

    run_id: str
    cause: str  # approval decided | approval expired | restart ...
    resumed: Resumed
    worked_ms: int
    tool_steps: int  # tool steps its earlier processes opened (the next one's key goes on from there)
    open_key: str | None = None  # the open tool step this process completes (a call that waited)
    open_tool: str = ""
    unknown_key: str | None = None  # the open tool step to close as `unknown`
    approval: Approval | None = None  # what the waiting call was decided (or still waits on)
    child: str = ""  # the child run the open delegate call started (its end is the call's result)
    notes: list[str] = field(default_factory=list)

    @property
    def system_prompt(self) -> str:
        return str(self.resumed.messages[0]["content"])

    def line(self) -> str:
        r = self.resumed
        owed = len(r.pending) + len(r.answered)
        tail = f"; {owed} call(s) of its last reply owed" if owed else ""
        return (
            f"resumed ({self.cause}) at iteration {r.iteration}, message {len(r.messages)}, "
            f"after {self.worked_ms / 1000:.1f} s worked{tail}"
        )


def resume_point(audit: AuditStore, run: dict[str, Any], cause: str) -> ResumePoint:
    """The point a run goes on from; ValueError when it kept no conversation."""
    run_id = run["id"]
    messages, rows = audit.conversation(run_id)
    if not messages or messages[0].get("role") != "system":
        raise ValueError(f"run {run_id} kept no conversation to go on with")
    steps = step_rows.for_resume(audit, run_id)
    tools = [s for s in steps if s["kind"] == "tool" and s["opens"]]
    suspension = next((s for s in reversed(steps) if s["kind"] == SUSPEND), None)
    worked = max([int(r["worked_ms"] or 0) for r in rows] + [step_data(suspension).get("worked_ms", 0)])
    point = ResumePoint(run_id, cause, _resumed(messages, rows, steps), worked, len(tools))
    owed = _owed(messages)
    if not owed:
        return point  # the model's turn is next
    open_step = tools[-1] if tools and tools[-1]["verdict"] == "started" else None
    _answer_owed(point, owed, open_step, _waited_on(audit, run, suspension), suspension)
    if open_step is not None and point.open_tool == DELEGATE:
        _owed_child(point, open_step, steps, audit)
    return point


def _resumed(messages: list[dict[str, Any]], rows: list[dict[str, Any]], steps: list[dict[str, Any]]) -> Resumed:
    """The conversation, where its count stood, and what its model calls spent."""
    model = [s for s in steps if s["kind"] == "model"]
    return Resumed(
        messages=messages,
        iteration=int(rows[-1]["iteration"] or 0),
        generation=int(rows[-1]["generation"] or 0),
        tokens_in=sum(int(s["tokens_in"] or 0) for s in model),
        tokens_out=sum(int(s["tokens_out"] or 0) for s in model),
        model_seconds=sum(int(s["duration_ms"] or 0) for s in model) / 1000,
    )


def _owed_child(point: ResumePoint, open_step: dict[str, Any], steps: list[dict[str, Any]], audit: AuditStore) -> None:
    """The child the reopened delegate call started (none: it was never queued, and the call
    starts one), and its time, which counts as the run's own."""
    after = [step_data(s) for s in steps if s["kind"] == CHILD and s["id"] > open_step["id"]]
    point.child = str(after[-1].get("child") or "") if after else ""
    ended = audit.run(point.child) if point.child else None
    point.worked_ms += int(ended.get("duration_ms") or 0) if ended else 0


def _answer_owed(
    point: ResumePoint,
    owed: list[dict[str, Any]],
    open_step: dict[str, Any] | None,
    waited: Approval | None,
    suspension: dict[str, Any] | None,
) -> None:
    """What becomes of the calls the last reply made and no tool message answered: the one that
    waited for a person runs with the decision; after a call that started and never ended, none
    runs; else they all run as asked."""
    resumed, first = point.resumed, owed[0]
    calls = [ToolCall(c["name"], c["arguments"]) for c in owed if c["name"] != INVALID_CALL]
    malformed = [c["name"] for c in owed if c["name"] == INVALID_CALL]
    problems = list(step_data(suspension).get("malformed", [])) if suspension else []
    problems = (problems + ["it could not be read as a call"] * len(malformed))[: len(malformed)]
    if open_step is not None and open_step["tool"] == first["name"] == DELEGATE:
        # a call that handed work to a child: it runs again, completing its step, answered with the child's end
        resumed.pending, resumed.malformed, resumed.reopened = calls, problems, True
        point.open_key, point.open_tool = open_step["opens"], DELEGATE
        return
    if (
        waited is not None
        and first["name"] != INVALID_CALL
        and waited.call_hash == approvals.call_hash(first["name"], first["arguments"])
    ):
        # the call that waited for a person: it runs now, with the decision, completing its own step
        resumed.pending, resumed.malformed, resumed.reopened = calls, problems, True
        point.approval = waited
        if open_step is not None and open_step["tool"] == first["name"]:
            point.open_key, point.open_tool = open_step["opens"], first["name"]
        else:
            resumed.reopened = False
        return
    if open_step is not None:
        # a call started and never ended: its outcome is unknown, and nothing after it runs
        point.unknown_key = open_step["opens"]
        resumed.answered = [(first["name"], UNKNOWN)] + [(c["name"], NOT_RUN) for c in owed[1:]]
        return
    resumed.pending, resumed.malformed = calls, problems  # none of them started: they run as asked


def _owed(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The calls of the last reply that have no result yet ({"name", "arguments"} each)."""
    for n in range(len(messages) - 1, -1, -1):
        message = messages[n]
        if message.get("role") == "assistant":
            wire = message.get("tool_calls") or []
            answered = sum(1 for m in messages[n + 1 :] if m.get("role") == "tool")
            return [
                {"name": str(c["function"]["name"]), "arguments": dict(c["function"].get("arguments") or {})}
                for c in wire[answered:]
            ]
        if message.get("role") == "user" and n > 1:
            return []  # a nudge: the model's turn
    return []


def _waited_on(audit: AuditStore, run: dict[str, Any], suspension: dict[str, Any] | None) -> Approval | None:
    """The approval the owed call waited on: the suspension's, else (the process was gone while it
    waited, before it suspended) the run's latest approval that no approval step has consumed."""
    if run["status"] == "waiting" and suspension is not None:
        return suspended_on(audit, run["id"])
    approval = approvals.latest_queued(audit, run["id"])
    if approval is None:
        return None
    used = step_rows.approval_consumed(audit, run["id"], approval.id)
    return None if used or approval.status == "cancelled" else approval
