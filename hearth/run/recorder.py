"""Turns the loop's events into audit steps, live state and what the user sees."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from agent.loop import Event
from agent.safety.redaction import Redactor
from hearth.audit.store import AuditStore
from hearth.render import json_line, visible_line
from hearth.run.state import StateFile


class Recorder:
    def __init__(
        self,
        audit: AuditStore,
        state: StateFile,
        run_id: str,
        *,
        json_lines: bool = False,
        out: TextIO = sys.stdout,
        redactor: Redactor | None = None,
    ) -> None:
        self.audit = audit
        self.redactor = redactor or Redactor()
        self.state = state
        self.run_id = run_id
        self.json_lines = json_lines
        self.out = out
        self.iteration = 0  # the loop's current iteration, for records made between its events
        self.tool = ""  # the tool running now, for the decisions made inside it
        self._open_tool: int | None = None  # the audit row of the tool step that has started

    def __call__(self, event: Event) -> None:
        self.iteration = event.iteration
        data = event.data
        if "arguments" in data:  # a flood of an argument is never copied, serialised or shown whole
            data = {**data, "arguments": preview(data["arguments"])}
        # the choke point for what is kept and shown: no credential value reaches audit, state or logs
        event = Event(event.kind, event.iteration, self.redactor.data(data))
        handler = getattr(self, f"_on_{event.kind}", None)
        if handler:
            handler(event)
        self._show(event)

    def note(self, kind: str, **fields: Any) -> None:
        """A step that does not come from the loop (a rejection, a compaction, a checkpoint)."""
        self.audit.record_step(self.run_id, kind, **self.redactor.data(fields))

    def decision(self, kind: str, detail: dict[str, Any]) -> None:
        """A decision made inside a tool (a credential used or refused, a header dropped at a
        redirect), kept with the tool, the run and the iteration it was made in."""
        detail = self.redactor.data(detail)
        self.audit.record_step(
            self.run_id,
            kind,
            iteration=self.iteration,
            tool=self.tool or None,
            verdict=detail.get("verdict"),
            detail=json.dumps(detail, ensure_ascii=False),
        )

    def notice(self, kind: str, message: str, *, data: dict[str, Any] | None = None, step: bool = True) -> None:
        """Something the operator should see (a flagged context file, a checkpoint), shown and, if `step`, audited."""
        message, data = self.redactor(message), self.redactor.data(data) if data else None
        if step:
            self.audit.record_step(
                self.run_id, kind, iteration=0, detail=message, data=json.dumps(data, default=str) if data else None
            )
        self._show(Event("notice", 0, {"kind": kind, "message": message, **({"data": data} if data else {})}))

    def _on_run_started(self, event: Event) -> None:
        self.state.update("starting", "run started", 0)

    def _on_thinking(self, event: Event) -> None:
        self.state.update("thinking", "waiting for the model", event.iteration)

    def _on_model(self, event: Event) -> None:
        d = event.data
        self.audit.record_step(
            self.run_id,
            "model",
            iteration=event.iteration,
            output=d["content"],
            tokens_in=d["tokens_in"],
            tokens_out=d["tokens_out"],
            duration_ms=_ms(d["duration_s"]),
        )

    def _on_tool_started(self, event: Event) -> None:
        """Recorded before it runs (one insert): a run killed mid-command still shows the command."""
        d = event.data
        self.tool = d["tool"]
        self._open_tool = self.audit.open_step(
            self.run_id,
            "tool",
            iteration=event.iteration,
            tool=d["tool"],
            arguments=d["arguments"],
            verdict="started",
            called_as=d.get("called_as"),
        )
        self.state.update("tool", f"running {d['tool']}", event.iteration, d["tool"])

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
            self.audit.record_step(
                self.run_id,
                "tool",
                iteration=event.iteration,
                tool=d["tool"],
                arguments=d["arguments"],
                called_as=d.get("called_as"),
                **outcome,
            )
        else:
            self.audit.close_step(self._open_tool, **outcome)
        self._open_tool, self.tool = None, ""

    def _on_nudge(self, event: Event) -> None:
        self.audit.record_step(self.run_id, "nudge", iteration=event.iteration, detail=event.data["reason"])

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
        self.audit.record_step(
            self.run_id,
            "compaction",
            iteration=event.iteration,
            detail=_compaction_line(d),
            output=d["summary"],
            data=json.dumps(sizes),
        )

    def _on_run_finished(self, event: Event) -> None:
        self.state.remove()

    def _show(self, event: Event) -> None:
        """What the terminal (or the run's log) shows: escaped, one line per event."""
        if self.json_lines:
            record = {"event": event.kind, "run_id": self.run_id, "iteration": event.iteration, **event.data}
            print(json_line(record), file=self.out, flush=True)
            return
        line = _human(event)
        if line:
            print(visible_line(line), file=self.out, flush=True)


def _human(event: Event) -> str | None:
    d = event.data
    if event.kind == "model":
        return (
            f"[{event.iteration}] model replied ({d['tokens_in']} in / {d['tokens_out']} out, {d['duration_s']:.2f}s)"
        )
    if event.kind == "tool":
        first = (d["output"].strip().splitlines() or [""])[0][:100]
        mark = "ok" if d["ok"] else d["verdict"]
        return (
            f"[{event.iteration}] {d['tool']} {json.dumps(d['arguments'], ensure_ascii=False)[:80]} -> {mark}: {first}"
        )
    if event.kind == "nudge":
        return f"[{event.iteration}] reply unusable ({d['reason']}); asked again"
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
