"""Compaction: keeps a long run inside the model's window (`num_ctx`).

(Its twin for single tool outputs, `OutputSpill`, is in agent/tools/spill.py.)

`Compactor`: before a model call, when the estimated prompt nears the window (TRIGGER of
num_ctx), the middle of the conversation becomes a summary. Kept: the system prompt, the goal
message, and the last messages verbatim, starting at an assistant turn so roles stay legal, as
many as bring the whole back to about TARGET of the window (at most TAIL_SHARE of it, at least
the last turn), so the next compaction is several turns away rather than on every turn.
The summary is appended to the goal message under a heading that labels it reference only. It
comes from one model call without tools; when that fails or is unusable, from a deterministic
list of the steps.

This is the only routine break of the prompt prefix: the loop emits a `compaction` event with the
sizes before and after, and every later request again extends the previous one.

Token estimate: the last reply's prompt_eval_count plus what was appended since (at
CHARS_PER_TOKEN characters a token), or all characters / CHARS_PER_TOKEN when no count is known.
The larger of the two is used: some Ollama versions counted only the uncached part of the prompt
(ollama#16414), and an underestimate lets Ollama silently drop the start of the prompt.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from agent.model.reply import ChatModel, ModelError

CHARS_PER_TOKEN = 4
TRIGGER = 0.75  # of num_ctx: the rest is room for the reply and the next tool results
TARGET = 0.5  # of num_ctx: where a compaction aims to bring the conversation back to
TAIL_SHARE = 0.3  # of the window at most, for the messages kept verbatim
MAX_KEPT = 8
MESSAGE_OVERHEAD = 16  # characters: role markers and separators the template adds per message
SUMMARY_SYSTEM = (
    "You write the working notes of an agent whose conversation became too long for its memory. "
    "From the transcript, write what the agent must remember to finish the goal: facts found, files "
    "read and changed, commands run and their results, errors, decisions, and what is left to do. "
    "Plain text, at most {words} words. Do not call tools and do not address anyone."
)
HEADING = "## Earlier work (summary, reference only)"

Message = dict[str, Any]


@dataclass(frozen=True)
class Usage:
    """What the server said about the last request: its prompt tokens and how many messages it had."""

    prompt_tokens: int
    messages: int


@dataclass
class CompactionRecord:
    before_chars: int
    after_chars: int
    before_tokens: int
    after_tokens: int
    summarised: int
    kept: int
    summary_by: str  # model | fallback
    summary: str
    tokens_in: int = 0
    tokens_out: int = 0
    error: str = ""

    def as_event(self) -> dict[str, Any]:
        return asdict(self)


def message_chars(messages: list[Message]) -> int:
    total = 0
    for m in messages:
        total += len(m.get("content") or "") + MESSAGE_OVERHEAD
        if m.get("tool_calls"):
            total += len(json.dumps(m["tool_calls"], ensure_ascii=False, default=str))
    return total


def estimate_tokens(messages: list[Message], tools: list[dict[str, Any]], usage: Usage | None = None) -> int:
    by_chars = (message_chars(messages) + len(json.dumps(tools))) // CHARS_PER_TOKEN
    if usage is None or usage.prompt_tokens <= 0:
        return by_chars
    since = message_chars(messages[usage.messages :]) // CHARS_PER_TOKEN
    return max(by_chars, usage.prompt_tokens + since)


class RunningCount:
    """Characters of an append-only message list, each message measured once (the loop's history
    only grows between compactions; a compaction hands over a new list, which starts a new count)."""

    def __init__(self) -> None:
        self._of: list[Message] | None = None
        self._counted = 0
        self.chars = 0

    def __call__(self, messages: list[Message]) -> int:
        if messages is not self._of or len(messages) < self._counted:
            self._of, self._counted, self.chars = messages, 0, 0
        self.chars += message_chars(messages[self._counted :])
        self._counted = len(messages)
        return self.chars


class Compactor:
    def __init__(
        self, num_ctx: int, model: ChatModel | None = None, *, trigger: float = TRIGGER, tail_share: float = TAIL_SHARE
    ) -> None:
        self.num_ctx = num_ctx
        self.model = model
        self.limit = int(num_ctx * trigger)
        self.tail_chars = int(num_ctx * CHARS_PER_TOKEN * tail_share)
        self.summary_chars = max(600, num_ctx * CHARS_PER_TOKEN // 10)
        self.goal: str | None = None  # the goal message as it was before the first compaction
        self.summary = ""
        self._count = RunningCount()
        self._tools: tuple[int, int] = (0, 0)  # id() and JSON length of the tool schemas last seen

    def maybe_compact(
        self, messages: list[Message], tools: list[dict[str, Any]], usage: Usage | None
    ) -> tuple[list[Message], CompactionRecord] | None:
        """The compacted conversation and what was done, or None when it fits or cannot shrink."""
        before = self._estimate(messages, tools, usage)
        if before < self.limit:
            return None
        goal = self.goal if self.goal is not None else str(messages[1].get("content") or "")
        start = self._tail_start(messages, self._tail_budget(messages[0], goal, tools))
        if start is None:
            return None
        middle = messages[2:start]
        record = self._summarise(goal, middle)
        self.goal, self.summary = goal, record.summary
        block = (
            f"{HEADING}\nhearth compacted earlier messages to stay within the model's context. "
            f"This summary may be incomplete: re-read a file before relying on details from it.\n\n"
            f"{record.summary}"
        )
        compacted = [messages[0], {"role": "user", "content": f"{goal}\n\n{block}"}, *messages[start:]]
        record.before_chars, record.after_chars = message_chars(messages), message_chars(compacted)
        record.before_tokens, record.after_tokens = before, estimate_tokens(compacted, tools)
        record.summarised, record.kept = len(middle), len(messages) - start
        return compacted, record

    def _estimate(self, messages: list[Message], tools: list[dict[str, Any]], usage: Usage | None) -> int:
        """estimate_tokens(), from a running count: the history is not measured again every turn."""
        if self._tools[0] != id(tools):
            self._tools = (id(tools), len(json.dumps(tools)))
        by_chars = (self._count(messages) + self._tools[1]) // CHARS_PER_TOKEN
        if usage is None or usage.prompt_tokens <= 0:
            return by_chars
        return max(by_chars, usage.prompt_tokens + message_chars(messages[usage.messages :]) // CHARS_PER_TOKEN)

    def _tail_budget(self, system: Message, goal: str, tools: list[dict[str, Any]]) -> int:
        """Characters the kept tail may take so the compacted whole lands near TARGET of the window."""
        fixed = estimate_tokens([system, {"role": "user", "content": goal}], tools) * CHARS_PER_TOKEN
        room = int(self.num_ctx * CHARS_PER_TOKEN * TARGET) - fixed - self.summary_chars
        return max(0, min(self.tail_chars, room))

    def _tail_start(self, messages: list[Message], budget: int) -> int | None:
        """Where the verbatim tail starts: an assistant turn, as far back as the budget allows."""
        turns = [i for i in range(3, len(messages)) if messages[i]["role"] == "assistant"]
        if not turns:
            return None
        start = turns[-1]
        for i in reversed(turns[:-1]):
            if message_chars(messages[i:]) > budget or len(messages) - i > MAX_KEPT:
                break
            start = i
        return start if start - 2 >= 2 else None

    def _summarise(self, goal: str, middle: list[Message]) -> CompactionRecord:
        record = CompactionRecord(0, 0, 0, 0, 0, 0, "fallback", "")
        if self.model is not None:
            try:
                self._ask_model(goal, middle, record)
            except ModelError as exc:
                record.error = str(exc)
        if record.summary_by != "model":
            record.summary = self._clip(step_list(middle, self.summary))
        return record

    def _ask_model(self, goal: str, middle: list[Message], record: CompactionRecord) -> None:
        words = self.summary_chars // 6
        earlier = f"Earlier notes:\n{self.summary}\n\n" if self.summary else ""
        transcript = render_transcript(middle, self.num_ctx * CHARS_PER_TOKEN // 2)
        request = [
            {"role": "system", "content": SUMMARY_SYSTEM.format(words=words)},
            {"role": "user", "content": f"Goal:\n{goal}\n\n{earlier}Transcript:\n{transcript}"},
        ]
        reply = self.model.chat(request, [])  # type: ignore[union-attr]
        record.tokens_in, record.tokens_out = reply.tokens_in, reply.tokens_out
        text = reply.content.strip()
        if text and not reply.tool_calls and not reply.malformed:
            record.summary, record.summary_by = self._clip(text), "model"
        else:
            record.error = "the model's summary was empty or called a tool"

    def _clip(self, text: str) -> str:
        return text if len(text) <= self.summary_chars else text[: self.summary_chars - 30].rstrip() + "\n[summary cut]"


def render_transcript(messages: list[Message], budget: int) -> str:
    """The messages as plain text for the summariser, each clipped so the whole fits `budget`."""
    each = max(300, budget // max(1, len(messages)))
    lines = []
    for m in messages:
        calls = "".join(
            f"\n[called {c['function']['name']} {json.dumps(c['function'].get('arguments'), default=str)}]"
            for c in m.get("tool_calls") or []
        )
        who = f"tool {m.get('tool_name', '')}".rstrip() if m["role"] == "tool" else m["role"]
        lines.append(f"{who}: {_clip_middle(str(m.get('content') or ''), each)}{calls}")
    return "\n\n".join(lines)


def step_list(middle: list[Message], previous: str = "") -> str:
    """The deterministic summary: one line per call and its result, one per remark of the model."""
    lines = [previous] if previous else []
    pending: list[str] = []
    for m in middle:
        if m["role"] == "assistant":
            pending = [_call_text(c) for c in m.get("tool_calls") or []]
            said = (m.get("content") or "").strip()
            if said:
                lines.append(f"- you wrote: {_first_line(said)}")
        elif m["role"] == "tool":
            call = pending.pop(0) if pending else m.get("tool_name", "tool")
            output = str(m.get("content") or "")
            state = "failed" if output.startswith(("Error:", "Denied:")) else "ok"
            lines.append(f"- {call} -> {state}: {_first_line(output)}")
    return "\n".join(lines)


def _call_text(call: dict[str, Any]) -> str:
    fn = call.get("function") or {}
    args = fn["arguments"] if isinstance(fn.get("arguments"), dict) else {}
    shown = ", ".join(f"{k}={_first_line(str(v), 40)!r}" for k, v in args.items())
    return f"{fn.get('name', '?')}({shown})"


def _first_line(text: str, limit: int = 120) -> str:
    line = (text.strip().splitlines() or [""])[0]
    return line if len(line) <= limit else line[:limit] + "..."


def _clip_middle(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = int(limit * 0.7)
    return f"{text[:head]} [...] {text[-(limit - head) :]}"
