"""Loop: query -> parse -> policy -> tool -> record, until the model answers or a limit stops it.

The history is append-only and the system prompt is rendered once, so every request is the
previous one plus new messages (Ollama reuses its KV cache). Roles stay legal: after the system
prompt and the goal, the model and hearth take turns; tool results follow only the assistant
message that carries their calls. A run stops by raising a StopRun subclass, caught in one place.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from agent import parsing
from agent.context.compaction import Compactor, Usage
from agent.hints import hint_for, unusable_reply
from agent.model.reply import ChatModel, ChatReply, ModelError, ModelUnavailable, keeps_thinking
from agent.parsing.calls import ToolCall
from agent.reask import call_shaped, read_step, step_schema
from agent.repeats import STUCK_AFTER, Repeats, answer
from agent.steer import Steering, steer_message
from agent.tools.registry import ToolResult
from agent.wire import INVALID_CALL, invalid_call, kept, repaired, short_args

MAX_UNPARSEABLE = 3


class StopRun(Exception):
    """Ends a run; the subclass says how."""

    status = "failed"

    def __init__(self, detail: str = "") -> None:
        super().__init__(detail)
        self.detail = detail


class Finished(StopRun):
    status = "done"


class IterationLimit(StopRun):
    status = "iteration_limit"


class ModelDown(StopRun):
    status = "model_unavailable"


class RunFailed(StopRun):
    status = "failed"


class TimeLimit(StopRun):
    status = "failed"


class Stuck(StopRun):
    """The model made the same call again and again with nothing changed (agent/repeats.py)."""

    status = "stuck"


class BudgetExceeded(StopRun):
    """Raised by a guard (the appliance's token budgets) before a model call."""

    status = "budget_exceeded"


@dataclass
class Event:
    """Something the appliance records: a model turn, a tool call, a nudge, the end."""

    kind: str  # run_started | thinking | model | tool_started | tool | nudge | compaction | run_finished
    iteration: int
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Outcome:
    status: str
    summary: str
    iterations: int
    tokens_in: int = 0
    tokens_out: int = 0
    model_seconds: float = 0.0
    error: str = ""


@dataclass
class Resumed:
    """A conversation an earlier process of the run kept, to go on with (`Loop.resume`).

    `answered` are results appended first (a call whose outcome is unknown, say); `pending` the
    calls of the last reply still to run, then `malformed` its unparseable calls' problems;
    `reopened`: the first pending call's start is recorded already (it waited for a decision)."""

    messages: list[dict[str, Any]]
    iteration: int
    generation: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    model_seconds: float = 0.0
    answered: list[tuple[str, str]] = field(default_factory=list)
    pending: list[ToolCall] = field(default_factory=list)
    malformed: list[str] = field(default_factory=list)
    reopened: bool = False


class Tools(Protocol):
    """What the loop needs from the tools (agent/tools/gate.py's ToolRunner): what the model is
    shown, and one call run through the gate."""

    schemas: list[dict[str, Any]]
    names: list[str]

    def run(self, call: ToolCall) -> ToolResult: ...


class Loop:
    def __init__(
        self,
        model: ChatModel,
        tools: Tools,
        *,
        system_prompt: str,
        max_iters: int = 12,
        on_event: Callable[[Event], None] = lambda event: None,
        deadline: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        compactor: Compactor | None = None,
        guard: Callable[[Outcome], None] | None = None,
        reask: bool = False,
        steering: Steering | None = None,
    ) -> None:
        self.model = model
        self.tools = tools
        self.max_iters = max_iters
        self.emit = on_event
        self.deadline = deadline
        self.clock = clock
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}]
        self.iteration = 0
        self.outcome = Outcome("failed", "", 0)
        self.done_steps: list[str] = []
        self._unparseable = 0
        self.repeats = Repeats(parsing.parameter_order(tools.schemas))
        self.compactor = compactor
        self.guard = guard  # may raise a StopRun (BudgetExceeded) before a model call
        self.reask = reask  # an unusable reply is asked again with its shape held (agent/reask.py)
        self._usage: Usage | None = None
        self.generation = 0  # compactions so far: each starts a new history
        self._kept = 0  # messages of this generation already handed on in a `messages` event
        self.owed_malformed: list[str] = []
        self.steering = steering  # a person's steers, taken after a tool result (agent/steer.py)

    def run(self, goal: str, context: str = "") -> Outcome:
        first = f"{context}\n\n## Goal\n{goal}" if context else goal
        self.messages.append({"role": "user", "content": first})
        self._keep()
        self.emit(Event("run_started", 0, {"goal": goal}))
        return self._drive(lambda: None)

    def carry_on(self, messages: list[dict[str, Any]], goal: str, context: str = "") -> Outcome:
        """Run `goal` as the next turn of an earlier conversation (a role's heartbeat), or as the first
        when `messages` is empty: its messages byte for byte, system prompt first, then the goal, all
        kept as this run's own (the earlier run's are left as they were)."""
        if messages:
            self.messages = [dict(message) for message in messages]
        return self.run(goal, context)

    def resume(self, resumed: Resumed) -> Outcome:
        """Go on with a conversation kept by an earlier process of this run (hearth/run/resume.py):
        the same messages, the same counts; first the answers still owed to its last reply."""
        self.messages = [dict(message) for message in resumed.messages]
        self.iteration, self.generation, self._kept = resumed.iteration, resumed.generation, len(resumed.messages)
        self.outcome.tokens_in, self.outcome.tokens_out = resumed.tokens_in, resumed.tokens_out
        self.outcome.model_seconds = resumed.model_seconds

        def owed() -> None:
            for name, text in resumed.answered:
                self._append_result(name, text)
            self._answer(resumed.pending, resumed.malformed, reopened=resumed.reopened)

        return self._drive(owed)

    def _drive(self, first: Callable[[], None]) -> Outcome:
        try:
            first()
            while True:
                self._check_limits()
                self._step()
        except StopRun as stop:
            self.outcome.status = stop.status
            self.outcome.summary = stop.detail if stop.status == "done" else self._summary(stop)
            self.outcome.error = "" if stop.status == "done" else stop.detail
        self.outcome.iterations = self.iteration
        self.emit(
            Event(
                "run_finished",
                self.iteration,
                {"status": self.outcome.status, "summary": self.outcome.summary, "error": self.outcome.error},
            )
        )
        return self.outcome

    def _keep(self) -> None:
        """The messages appended since the last call, handed on (the appliance keeps them, so a new
        process can go on with exactly this conversation)."""
        new = self.messages[self._kept :]
        if new:
            data = {"generation": self.generation, "start": self._kept, "messages": new}
            self.emit(Event("messages", self.iteration, data))
            self._kept = len(self.messages)

    def _check_limits(self) -> None:
        if self.iteration >= self.max_iters:
            raise IterationLimit(f"stopped at the limit of {self.max_iters} iterations")
        if self.deadline is not None and self.clock() >= self.deadline:
            raise TimeLimit("stopped at the run's time limit")
        if self.guard is not None:
            self.guard(self.outcome)

    def _step(self) -> None:
        self.iteration += 1
        self._compact_if_needed()
        reply = self._ask_model()
        calls = self._calls_in(reply)
        if self.reask and not calls and not reply.malformed and self._unusable(reply):
            again = self._reasked(reply)
            if again is not None:
                reply, calls = again, self._calls_in(again)
        if calls and not reply.malformed and self.repeats.done_before(calls):
            self._repeat_is_final(reply, calls)
        if calls or reply.malformed:
            # Calls found in the text are written back as structured calls, so the history shows
            # the model the format we want and tool results follow a message that carries calls.
            wire = [{"function": {"name": c.name, "arguments": kept(c.arguments)}} for c in calls]
            wire += [invalid_call() for _ in reply.malformed]
            self._unparseable = 0
            self._said(
                reply, {"role": "assistant", "content": reply.content, **self._thought(reply), "tool_calls": wire}
            )
            self._answer(calls, reply.malformed)
            return
        if self._unusable(reply):
            self._nudge(reply)
            return
        self._said(reply, {"role": "assistant", "content": reply.content})
        raise Finished(reply.content.strip())

    def _unusable(self, reply: ChatReply) -> bool:
        """Empty, or a call that could not be read, or nothing but a call's JSON that was not one (a
        final answer is none of these)."""
        text = reply.content
        if not text.strip():
            return True
        return parsing.may_hold_a_call(text) and (
            parsing.looks_like_tool_call(text) or call_shaped(text, self.tools.names)
        )

    def _reasked(self, reply: ChatReply) -> ChatReply | None:
        """The same turn asked again, its reply held to one step (agent/reask.py); the unusable reply
        is recorded, never kept. None when the server cannot hold it or the step cannot be read."""
        self._record_turn(reply, {"reasked": True})
        if self.guard is not None:
            self.guard(self.outcome)
        try:
            again = self._ask_model(step_schema(self.tools.schemas))
        except RunFailed:  # the server refused the schema: the nudge then
            return None
        step = read_step(again.content, self.tools.names)
        self.emit(Event("reask", self.iteration, {"ok": step is not None, "content": again.content}))
        if step is None:
            return None
        if step.answer:
            return replace(again, content=step.answer, tool_calls=[])
        return replace(again, content="", tool_calls=list(step.calls))

    def _repeat_is_final(self, reply: ChatReply, calls: list[ToolCall]) -> None:
        """A reply whose every call repeats one that worked, with nothing changed since, and that says
        something beside them: the model is done and did not know how to stop. Its words are the final
        answer; its calls are not run again. Without words beside them, the calls are answered as repeats."""
        said = reply.content.strip() if reply.tool_calls else parsing.prose(reply.content, self.tools.names)
        if len(said.split()) < 3:
            return
        self._said(reply, {"role": "assistant", "content": reply.content})
        self.emit(Event("repeat", self.iteration, {"tools": [c.name for c in calls], "taken_as": "final answer"}))
        raise Finished(said)

    def _ask_model(self, schema: dict[str, Any] | None = None) -> ChatReply:
        self.emit(Event("thinking", self.iteration, {}))
        try:
            reply = self.model.chat(self.messages, self.tools.schemas, schema) if schema else self._chat()
        except ModelUnavailable as exc:
            raise ModelDown(str(exc)) from None
        except ModelError as exc:
            raise RunFailed(str(exc)) from None
        self._usage = Usage(reply.tokens_in, len(self.messages))
        self.outcome.tokens_in += reply.tokens_in
        self.outcome.tokens_out += reply.tokens_out
        self.outcome.model_seconds += reply.duration_s
        return reply

    def _chat(self) -> ChatReply:
        return self.model.chat(self.messages, self.tools.schemas)

    def _thought(self, reply: ChatReply) -> dict[str, str]:
        """The turn's thinking, for the history only when the model's family needs it back
        (agent/model/reply.py's THINKING_KEPT); the audit keeps it either way."""
        return {"thinking": reply.thinking} if reply.thinking and keeps_thinking(self.model.model) else {}

    def _said(self, reply: ChatReply, message: dict[str, Any], *after: dict[str, Any]) -> None:
        """The model's turn into the history, kept, then recorded: a turn is recorded once it is
        kept, so a run resumed after a crash never asks (or records) the same turn twice."""
        self.messages.append(message)
        self.messages.extend(after)
        self._keep()
        self._record_turn(reply)

    def _record_turn(self, reply: ChatReply, extra: dict[str, Any] | None = None) -> None:
        self.emit(
            Event(
                "model",
                self.iteration,
                {
                    "content": reply.content,
                    "tokens_in": reply.tokens_in,
                    "tokens_out": reply.tokens_out,
                    "duration_s": reply.duration_s,
                    "tool_calls": len(reply.tool_calls),
                    **({"tokens_cached": reply.tokens_cached} if reply.tokens_cached >= 0 else {}),
                    **({"first_token_s": reply.first_token_s} if reply.first_token_s else {}),
                    **({"cut": True} if reply.cut else {}),
                    **({"runaway": True} if reply.runaway else {}),
                    **({"host": reply.host} if reply.host else {}),
                    **({"thinking": reply.thinking} if reply.thinking else {}),
                    **(extra or {}),
                },
            )
        )

    def _compact_if_needed(self) -> None:
        """The one routine break of the prompt prefix: recorded, then the history is append-only again."""
        done = self.compactor.maybe_compact(self.messages, self.tools.schemas, self._usage) if self.compactor else None
        if done is None:
            return
        self.messages, record = done
        self.repeats.forget()  # the earlier results are summarised away: a call made again may be needed
        self.generation, self._kept = self.generation + 1, 0
        self._keep()
        self._usage = None
        self.outcome.tokens_in += record.tokens_in
        self.outcome.tokens_out += record.tokens_out
        self.emit(Event("compaction", self.iteration, record.as_event()))

    def _calls_in(self, reply: ChatReply) -> list[ToolCall]:
        if reply.tool_calls:
            return [repaired(call, self.tools.names) for call in reply.tool_calls]
        # the parameter order names positional arguments (`read_file("a.txt")`) and checks flattened ones
        if not parsing.may_hold_a_call(reply.content):  # plain prose: the readers need not even load
            return []
        return parsing.parse_tool_calls(reply.content, parsing.parameter_order(self.tools.schemas))

    def _answer(self, calls: list[ToolCall], malformed: list[str], *, reopened: bool = False) -> None:
        """Run the calls of the last reply and answer its malformed ones; with `reopened`, the
        first call's start was recorded by an earlier process of this run (it waited for a person)."""
        self.owed_malformed = list(malformed)  # what a run that suspends inside these calls still owes
        for n, call in enumerate(calls):
            if n and self.deadline is not None and self.clock() >= self.deadline:
                raise TimeLimit("stopped at the run's time limit")  # the limit holds inside a step too
            self._append_result(call.name, self._run_one(call, started=reopened and n == 0))
        for problem in malformed:
            text = f"Error: your tool call could not be parsed: {problem}"
            self._append_result(INVALID_CALL, f"{text}\n{hint_for(text) or ''}".rstrip())
        if self.repeats.stuck:
            raise Stuck(f"stopped: the model made the same call {STUCK_AFTER} times in a row with nothing changed")
        self._take_steers()

    def _take_steers(self) -> None:
        """The steers given since the last boundary, as one user message after the tool results:
        kept, recorded, then taken from where they waited."""
        steers = self.steering.pending() if self.steering is not None else []
        if not steers:
            return
        self.messages.append(steer_message(steers))
        self._keep()
        for steer in steers:
            self.emit(Event("steer", self.iteration, {"by": steer.by, "text": steer.text, "at": steer.at}))
        self.steering.taken(steers)  # type: ignore[union-attr]

    def _run_one(self, call: ToolCall, *, started: bool = False) -> str:
        written = {"called_as": call.written} if call.written else {}
        if not started:
            self.emit(
                Event("tool_started", self.iteration, {"tool": call.name, "arguments": call.arguments, **written})
            )
        seen = self.repeats.repeat_of(call)
        if seen is not None:
            self.repeats.repeated()
            result = ToolResult(False, answer(seen, STUCK_AFTER - self.repeats.in_a_row), verdict="repeat")
        else:
            result = self.tools.run(call)
            self.repeats.ran(call, result.ok, self.iteration)
        output = result.output
        if not result.ok and seen is None:
            hint = hint_for(output, call.name)
            output = f"{output}\n{hint}" if hint else output
        shown = "ok" if result.ok else "repeated" if seen is not None else "failed"
        self.done_steps.append(f"{call.name}({short_args(call.arguments)}) -> {shown}")
        self.emit(
            Event(
                "tool",
                self.iteration,
                {
                    "tool": call.name,
                    "arguments": call.arguments,
                    "ok": result.ok,
                    "output": output,
                    "verdict": result.verdict,
                    "duration_s": result.duration_s,
                    "detail": result.detail,
                    **written,
                },
            )
        )
        return output

    def _append_result(self, name: str, output: str) -> None:
        self.messages.append({"role": "tool", "content": output, "tool_name": name})
        self._keep()

    def _nudge(self, reply: ChatReply) -> None:
        """The unusable reply kept as a call that could not be read, what to do its result: no user
        message is made up, and the model sees the call format it missed."""
        self._unparseable += 1
        if self._unparseable >= MAX_UNPARSEABLE:
            self._said(reply, {"role": "assistant", "content": reply.content})
            raise RunFailed(f"the model gave {MAX_UNPARSEABLE} unusable replies in a row")
        said = {"role": "assistant", "content": reply.content, **self._thought(reply), "tool_calls": [invalid_call()]}
        result = {"role": "tool", "content": unusable_reply(not reply.content.strip()), "tool_name": INVALID_CALL}
        self._said(reply, said, result)  # kept as one: a resumed run never owes this call
        what = "was empty" if not reply.content.strip() else "looked like a tool call but could not be parsed"
        self.emit(Event("nudge", self.iteration, {"reason": what, "count": self._unparseable}))
        self._take_steers()

    def _summary(self, stop: StopRun) -> str:
        steps = "; ".join(self.done_steps[-20:]) or "no tool calls"
        return f"{stop.detail}. Steps taken: {steps}."
