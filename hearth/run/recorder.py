"""Turns the loop's events into the run's record, live state and what the user sees.

The record goes out as hearth/run/events.py's records into the run's `RunRecorder` (the SQLite
audit today; that module says how another plugs in), redacted here first: this class is the one
choke point between what a run does and what is kept of it.

What the user sees: one line per event, the run id first; at a terminal, while the model thinks,
one live line with the seconds waited and the tokens streamed so far (redrawn in place, at most
every THINKING_EVERY_S, by a thread that lives only during the model's turn: nothing of it when
the output is a pipe, a file or --json, which stays one JSON event per line). A reader that closes
the pipe (`| head -1`) stops the showing, never the run.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any, TextIO

from agent.loop import Event
from agent.safety.redaction import Redactor
from hearth.render import json_line, tolerant, visible_line
from hearth.run.events import MessagesKept, RunEvent, RunRecorder, RunUpdated, StepClosed, StepRecorded
from hearth.run.state import StateFile

THINKING_EVERY_S = 0.5
CLEAR_LINE = "\r\x1b[K"


class Recorder:
    def __init__(
        self,
        sink: RunRecorder,
        state: StateFile,
        run_id: str,
        *,
        json_lines: bool = False,
        out: TextIO = sys.stdout,
        redactor: Redactor | None = None,
    ) -> None:
        self.sink = sink  # where every record of the run goes
        self.redactor = redactor or Redactor()
        self.state = state
        self.run_id = run_id
        self.json_lines = json_lines
        self.out = tolerant(out)
        self._lock = threading.Lock()  # the thinking line's thread and the run's own lines take turns
        self.thinking = Thinking(self.out, self._lock) if not json_lines and self.out.isatty() else None
        self.iteration = 0  # the loop's current iteration, for records made between its events
        self.tool = ""  # the tool running now, for the decisions made inside it
        self._open_tool: str | None = None  # the key of the tool step that has started
        self._opened = 0  # tool steps started so far, for their keys
        self._announced = False  # the run's id is on the screen already
        self.worked_before_ms = 0  # what earlier processes of the run worked (a resumed run)
        self._hosts: list[str] = []  # the Ollama hosts that answered so far, in order
        self._worked_from = time.monotonic()

    def worked_ms(self) -> int:
        """The time the run has worked, over all its processes (not the time it waited)."""
        return self.worked_before_ms + int((time.monotonic() - self._worked_from) * 1000)

    def resuming(
        self, worked_ms: int, tool_steps: int, open_tool: str | None, tool: str = "", iteration: int = 0
    ) -> None:
        """Go on from an earlier process of the run: its working time, the tool steps it opened
        (keys go on from there), the one still open that this process completes, and the iteration
        it is in (the decision recorded before the loop's first event belongs to it)."""
        self.worked_before_ms, self._worked_from = worked_ms, time.monotonic()
        self._opened, self._open_tool, self.tool = tool_steps, open_tool, tool
        self.iteration = iteration

    def tool_key(self, n: int) -> str:
        return f"{self.run_id}/tool/{n}"

    def __call__(self, event: Event) -> None:
        self.iteration = event.iteration
        data = event.data
        if event.kind == "messages":  # what the model read, kept for a resume: never shown
            self._on_messages(event)
            return
        if "arguments" in data:  # a flood of an argument is never copied, serialised or shown whole
            data = {**data, "arguments": preview(data["arguments"])}
        # the choke point for what is kept and shown: no credential value reaches audit, state or logs
        event = Event(event.kind, event.iteration, self.redactor.data(data))
        handler = getattr(self, f"_on_{event.kind}", None)
        if handler:
            handler(event)
        if self.thinking and event.kind != "thinking":
            self.thinking.stop()
        self._show(event)
        if self.thinking and event.kind == "thinking":
            self.thinking.start(event.iteration)

    def announce(self) -> None:
        """The run's id, first of all its lines (before its checkpoint, its recall, its first turn);
        JSON lines keep to the loop's events, and `run_started` says it there."""
        if not self.json_lines:
            self._show(Event("run_started", 0, {}))
            self._announced = True

    @property
    def progress(self) -> Any:
        """The model client's token callback when a terminal shows the thinking line, else None
        (then the stream is read with no callback at all)."""
        return self.thinking.tokens_seen if self.thinking else None

    def retrying(self, message: str) -> None:
        """The model client is about to try again: say what failed and when the next try is."""
        self._show(Event("retry", self.iteration, {"message": message}))

    def record(self, event: RunEvent) -> None:
        """A record of the run made outside the loop's events (its row, an approval, a checkpoint)."""
        self.sink.record(event)

    def note(self, kind: str, **fields: Any) -> None:
        """A step that does not come from the loop (a rejection, a compaction, a checkpoint)."""
        self.sink.record(StepRecorded(self.run_id, kind, self.redactor.data(fields)))

    def decision(self, kind: str, detail: dict[str, Any]) -> None:
        """A decision made inside a tool (a credential used or refused, a header dropped at a
        redirect), kept with the tool, the run and the iteration it was made in."""
        detail = self.redactor.data(detail)
        columns = {
            "iteration": self.iteration,
            "tool": self.tool or None,
            "verdict": detail.get("verdict"),
            "detail": json.dumps(detail, ensure_ascii=False),
        }
        self.sink.record(StepRecorded(self.run_id, kind, columns))

    def notice(self, kind: str, message: str, *, data: dict[str, Any] | None = None, step: bool = True) -> None:
        """Something the operator should see (a flagged context file, a checkpoint), shown and, if `step`, audited."""
        message, data = self.redactor(message), self.redactor.data(data) if data else None
        if step:
            columns = {"iteration": 0, "detail": message, "data": json.dumps(data, default=str) if data else None}
            self.sink.record(StepRecorded(self.run_id, kind, columns))
        self._show(Event("notice", 0, {"kind": kind, "message": message, **({"data": data} if data else {})}))

    def _on_run_started(self, event: Event) -> None:
        self.state.update("starting", "run started", 0)

    def _on_thinking(self, event: Event) -> None:
        self.state.update("thinking", "waiting for the model", event.iteration)

    def _on_model(self, event: Event) -> None:
        d = event.data
        columns = {
            "iteration": event.iteration,
            "output": d["content"],
            "tokens_in": d["tokens_in"],
            "tokens_out": d["tokens_out"],
            "duration_ms": _ms(d["duration_s"]),
        }
        # several hosts: which one answered; thinking, kept for the audit (the history gets it only for
        # the families that need it); what the server took from its prompt cache, when it first wrote,
        # and whether the reply was cut at its length cap
        data = {k: d[k] for k in ("host", "thinking", "cut", "runaway", "reasked") if d.get(k)}
        if "tokens_cached" in d:
            data["tokens_cached"] = d["tokens_cached"]
        if d.get("first_token_s"):
            data["first_token_ms"] = _ms(d["first_token_s"])
        if data:
            columns["data"] = json.dumps(data, ensure_ascii=False)
        self.sink.record(StepRecorded(self.run_id, "model", columns))
        if d.get("host") and d["host"] not in self._hosts:
            self._hosts.append(d["host"])
            self.sink.record(RunUpdated(self.run_id, {"model_host": ",".join(self._hosts)}))

    def _on_tool_started(self, event: Event) -> None:
        """Recorded before it runs (one insert): a run killed mid-command still shows the command."""
        d = event.data
        self.tool = d["tool"]
        self._opened += 1
        self._open_tool = self.tool_key(self._opened)
        columns = {
            "iteration": event.iteration,
            "tool": d["tool"],
            "arguments": d["arguments"],
            "verdict": "started",
            "called_as": d.get("called_as"),
        }
        self.sink.record(StepRecorded(self.run_id, "tool", columns, opens=self._open_tool))
        self.state.update("tool", f"running {d['tool']}", event.iteration, d["tool"])

    def _on_messages(self, event: Event) -> None:
        d = self.redactor.data(event.data)
        kept = MessagesKept(self.run_id, d["generation"], d["start"], d["messages"], event.iteration, self.worked_ms())
        self.sink.record(kept)

    def _on_tool(self, event: Event) -> None:
        """Completed after it ran (one update of the row `_on_tool_started` made)."""
        d = event.data
        outcome = {
            "output": d["output"],
            "ok": int(d["ok"]),
            "duration_ms": _ms(d["duration_s"]),
            "verdict": d["verdict"],
            "detail": json.dumps(d["detail"]) if d.get("detail") else None,
        }
        if self._open_tool is None:  # a tool event without its start (a caller of the loop's own)
            call = {"iteration": event.iteration, "tool": d["tool"], "arguments": d["arguments"]}
            self.sink.record(StepRecorded(self.run_id, "tool", {**call, "called_as": d.get("called_as"), **outcome}))
        else:
            self.sink.record(StepClosed(self.run_id, self._open_tool, outcome))
        self._open_tool, self.tool = None, ""

    def _on_reask(self, event: Event) -> None:
        """An unusable reply asked again with its shape held (agent/reask.py): whether that gave a step."""
        d = event.data
        detail = "asked again, held to one step: " + ("it gave one" if d["ok"] else "it gave none the run can use")
        self.sink.record(StepRecorded(self.run_id, "reask", {"iteration": event.iteration, "detail": detail}))

    def _on_repeat(self, event: Event) -> None:
        """A reply whose calls all repeated ones that worked, taken as the final answer (agent/repeats.py)."""
        d = event.data
        columns = {
            "iteration": event.iteration,
            "detail": f"repeated {', '.join(d['tools'])}: taken as the {d['taken_as']}",
        }
        self.sink.record(StepRecorded(self.run_id, "repeat", columns))

    def _on_nudge(self, event: Event) -> None:
        columns = {"iteration": event.iteration, "detail": event.data["reason"]}
        self.sink.record(StepRecorded(self.run_id, "nudge", columns))

    def _on_steer(self, event: Event) -> None:
        """A person's steer, as the model read it after the tool result (agent/steer.py)."""
        d = self.redactor.data(event.data)
        columns = {"iteration": event.iteration, "detail": f"from {d['by']}: {d['text']}", "data": json.dumps(d)}
        self.sink.record(StepRecorded(self.run_id, "steer", columns))

    def _on_compaction(self, event: Event) -> None:
        d = event.data
        sizes = {
            k: d[k]
            for k in (
                "before_chars",
                "after_chars",
                "before_tokens",
                "after_tokens",
                "summarised",
                "kept",
                "summary_by",
                "tokens_in",
                "tokens_out",
                "error",
            )
        }
        columns = {
            "iteration": event.iteration,
            "detail": _compaction_line(d),
            "output": d["summary"],
            "data": json.dumps(sizes),
        }
        self.sink.record(StepRecorded(self.run_id, "compaction", columns))

    def _on_run_finished(self, event: Event) -> None:
        self.state.remove()

    def _show(self, event: Event) -> None:
        """What the terminal (or the run's log) shows: escaped, one line per event."""
        if self.json_lines:
            record = {"event": event.kind, "run_id": self.run_id, "iteration": event.iteration, **event.data}
            print(json_line(record), file=self.out, flush=True)
            return
        line = _human(event, self.run_id)
        if event.kind == "run_started" and self._announced:
            line = None  # the loop's own start: the id was said when the run was admitted
        if line:
            with self._lock:
                if self.thinking and self.thinking.drawn:
                    self.out.write(CLEAR_LINE)
                    self.thinking.drawn = False
                print(visible_line(line), file=self.out, flush=True)


class Thinking:
    """The live `[2] thinking... 14 s, 57 tokens` line of a terminal, during one model turn."""

    def __init__(self, out: TextIO, lock: threading.Lock) -> None:
        self.out, self.lock = out, lock
        self.tokens = 0
        self.drawn = False  # the line is on the screen (and must be cleared before another)
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def tokens_seen(self, count: int) -> None:
        """The stream callback: only stores the count; the thread draws it at its next tick."""
        self.tokens = count

    def start(self, iteration: int) -> None:
        self.stop()
        self.tokens, self.iteration, self.started = 0, iteration, time.monotonic()
        self._done.clear()
        self._thread = threading.Thread(target=self._tick, name="hearth-thinking", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is None:
            return
        self._done.set()
        self._thread.join()
        self._thread = None
        with self.lock:
            if self.drawn:
                self.out.write(CLEAR_LINE)
                self.out.flush()
                self.drawn = False

    def _tick(self) -> None:
        while True:
            with self.lock:
                if self._done.is_set():
                    return
                self.out.write(f"{CLEAR_LINE}{self.line()}")
                self.out.flush()
                self.drawn = True
            if self._done.wait(THINKING_EVERY_S):
                return

    def line(self) -> str:
        waited = int(time.monotonic() - self.started)
        tokens = f", {self.tokens} tokens" if self.tokens else ""
        return f"[{self.iteration}] thinking... {waited} s{tokens}"


def _human(event: Event, run_id: str) -> str | None:
    d = event.data
    if event.kind == "run_started":
        return f"== run {run_id} (hearth show {run_id} --follow, from another shell)"
    if event.kind == "retry":
        return f"[{event.iteration}] {d['message']}"
    if event.kind == "model":
        took = d["duration_s"]
        shown = f"{took:.2f}s" if took >= 0.01 else f"{took * 1000:.1f} ms"  # a scripted turn takes under 10 ms
        return f"[{event.iteration}] model replied ({d['tokens_in']} in / {d['tokens_out']} out, {shown})"
    if event.kind == "tool":
        first = (d["output"].strip().splitlines() or [""])[0][:100]
        mark = "ok" if d["ok"] else d["verdict"]
        return (
            f"[{event.iteration}] {d['tool']} {json.dumps(d['arguments'], ensure_ascii=False)[:80]} -> {mark}: {first}"
        )
    if event.kind == "reask":
        return (
            f"[{event.iteration}] reply unusable; asked again held to one step: {'ok' if d['ok'] else 'still unusable'}"
        )
    if event.kind == "repeat":
        return f"[{event.iteration}] the reply repeated {', '.join(d['tools'])}, which worked: its words are the final answer"
    if event.kind == "nudge":
        return f"[{event.iteration}] reply unusable ({d['reason']}); asked again"
    if event.kind == "steer":
        return f"[{event.iteration}] steer from {d['by']}: {d['text']}"
    if event.kind == "notice":
        return f"[hearth] {d['message']}"
    if event.kind == "compaction":
        return f"[{event.iteration}] {_compaction_line(d)}"
    if event.kind == "run_finished":
        text = d["summary"] if d["status"] == "done" else d["error"]
        return f"== {d['status']}: {text}"
    return None


def _compaction_line(d: dict[str, Any]) -> str:
    return (
        f"compacted the conversation: ~{d['before_tokens']:,} -> ~{d['after_tokens']:,} tokens "
        f"({d['before_chars']:,} -> {d['after_chars']:,} characters); {d['summarised']} messages "
        f"summarised by the {'model' if d['summary_by'] == 'model' else 'fallback step list'}, {d['kept']} kept"
    )


PREVIEW_CHARS = 16_000  # of one argument value, in the audit, the live view and the terminal


def preview(value: Any, depth: int = 0) -> Any:
    """Arguments as hearth keeps and shows them: every long string cut, its length stated."""
    if isinstance(value, str):
        if len(value) <= PREVIEW_CHARS:
            return value
        return f"{value[:PREVIEW_CHARS]}[... {len(value) - PREVIEW_CHARS} more characters not kept]"
    if depth > 16:
        return "[nested too deeply to keep]"
    if isinstance(value, dict):
        return {preview(k, depth + 1): preview(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [preview(v, depth + 1) for v in value]
    return value


def _ms(seconds: float) -> int:
    return int(round(seconds * 1000))
