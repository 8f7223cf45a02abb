"""Following a queued run from the audit: what it has done since last asked, in short lines.

A door's caller waits on a run it queued; `Follower.poll()` reads the run's row, its steps after
the last one seen and its pending approvals, and returns one line per new thing (a tool called,
its result, an approval that waits and where to decide it). It only reads: the run writes its own
record, and a reader that stops reading stops nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hearth.web.reader import Reader

ACTIVE = ("", "queued", "claimed", "running", "waiting", "paused")  # a run that has not ended
LINE_CHARS = 160


@dataclass
class Follower:
    reader: Reader
    run_id: str
    base_url: str  # where the command center is, for the link to decide an approval
    seen_steps: set[int] = field(default_factory=set)
    shown_results: set[int] = field(default_factory=set)
    shown_approvals: set[str] = field(default_factory=set)
    run: dict[str, Any] | None = None

    @property
    def ended(self) -> bool:
        return self.run is not None and (self.run.get("status") or "") not in ACTIVE

    def poll(self) -> list[str]:
        """Lines for what happened since the last poll; `run` is the row as it is now."""
        self.run = self.reader.run(self.run_id)
        if self.run is None:
            return []
        lines: list[str] = []
        for step in self.reader.steps(self.run_id, cap=400):
            lines += self._step_lines(step)
        for approval in self.reader.approvals_of(self.run_id):
            if approval["status"] == "pending" and approval["id"] not in self.shown_approvals:
                self.shown_approvals.add(approval["id"])
                lines.append(self.waiting_line(approval))
        return lines

    def skip_said(self) -> None:
        """Follow from here: the steps so far are not said again (an approval still waiting is)."""
        self.poll()
        self.shown_approvals.clear()

    def _step_lines(self, step: dict[str, Any]) -> list[str]:
        if step["kind"] != "tool" or not step.get("tool"):
            return []
        lines = []
        if step["seq"] not in self.seen_steps:
            self.seen_steps.add(step["seq"])
            lines.append(one_line(f"> {step['tool']} {_arguments(step.get('arguments'))}"))
        if step.get("ok") is not None and step["seq"] not in self.shown_results:
            self.shown_results.add(step["seq"])
            verdict = "ok" if step["ok"] else "failed"
            lines.append(one_line(f"< {verdict}: {(step.get('output') or '').strip()}"))
        return lines

    def waiting_line(self, approval: dict[str, Any]) -> str:
        call = one_line(f"{approval['tool']} {_arguments(approval.get('arguments'))}")
        return (
            f"waiting for a person to approve {call} (until {approval.get('expires_at') or '?'}): "
            f"decide at {self.base_url}/approvals or `hearth approve {approval['id']}`"
        )

    def answer(self) -> str:
        """The run's final answer: its summary, or what ended it."""
        run = self.run or {}
        status = run.get("status") or ""
        summary = (run.get("summary") or "").strip()
        if status == "done":
            return summary or "(the run ended without a summary)"
        reason = (run.get("error") or "").strip()
        said = f"{summary}\n\n" if summary else ""
        return f"{said}(run {self.run_id} ended {status}{': ' + reason if reason else ''})"

    def usage(self) -> dict[str, int]:
        run = self.run or {}
        prompt, completion = int(run.get("tokens_in") or 0), int(run.get("tokens_out") or 0)
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _arguments(text: str | None) -> str:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return text or ""
    if isinstance(value, dict) and len(value) == 1:
        return str(next(iter(value.values())))
    return json.dumps(value, ensure_ascii=False)


def one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= LINE_CHARS else flat[: LINE_CHARS - 3] + "..."
