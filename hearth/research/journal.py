"""A research run's steps, each recorded before it runs, under a key that names what it does.

Every search, page read and model call of a research run is a step of its timeline opened before it
starts (`verdict` started) under a key made of what it does (`search:<the query's words>`,
`fetch:S3`, `extract:S3`, `decide:2`) and closed with its outcome and the data a later process needs
(`done`, `failed`, `refused`). A restarted run reads them back first: a step closed is not done again
(its data stands for it); a step opened and never closed (its process stopped in the middle) is done
again as a second attempt, under its key with `#2`. So a page whose read was recorded is never read
twice, and the one read that was cut off is read once more.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from hearth.audit import steps
from hearth.audit.store import Rows
from hearth.run.events import StepClosed, StepRecorded
from hearth.run.recorder import Recorder

CLOSED = ("done", "failed", "refused", "approved", "denied", "expired")


@dataclass(frozen=True)
class Opened:
    kind: str
    key: str  # what the step does
    opens: str  # the key of this attempt, the step's `opens`
    started: float
    attempt: int = 1


class Journal:
    """The run's keyed steps: what is done, what each cost, and the time the run has worked."""

    def __init__(self, recorder: Recorder, rows: list[dict[str, Any]]) -> None:
        self.recorder = recorder
        self.closed: dict[str, dict[str, Any]] = {}  # key -> the data its closed step kept
        self.verdicts: dict[str, str] = {}
        self.attempts: dict[str, int] = {}
        self.cut: list[str] = []  # keys opened by an earlier process and never closed
        for row in rows:
            self._read(row)
        self.cut = [key for key in self.attempts if key not in self.closed]

    @classmethod
    def read(cls, db: Rows, recorder: Recorder) -> Journal:
        return cls(recorder, steps.for_resume(db, recorder.run_id))

    def _read(self, row: dict[str, Any]) -> None:
        opens = row.get("opens") or ""
        key, _, _ = opens.rpartition("#")
        if not key or not opens.startswith(f"{self.recorder.run_id}/"):
            return
        key = key.removeprefix(f"{self.recorder.run_id}/")
        self.attempts[key] = self.attempts.get(key, 0) + 1
        if row.get("verdict") in CLOSED:
            self.closed[key] = _data(row.get("data"))
            self.verdicts[key] = str(row["verdict"])

    def done(self, key: str) -> dict[str, Any] | None:
        """The data the closed step of `key` kept, or None when it has not been done."""
        return self.closed.get(key)

    def worked_ms(self) -> int:
        """The most time any closed step says the run had worked: where a new process goes on from."""
        return max([int(data.get("worked_ms") or 0) for data in self.closed.values()] + [0])

    def tokens(self) -> tuple[int, int]:
        """What the run's model calls recorded so far cost, in and out."""
        kept = [d for d in self.closed.values() if "tokens_in" in d]
        return sum(int(d["tokens_in"]) for d in kept), sum(int(d.get("tokens_out") or 0) for d in kept)

    def open(self, kind: str, key: str, **columns: Any) -> Opened:
        """The step, recorded as started before what it does begins (a second attempt of a step
        an earlier process left open says so when it closes)."""
        attempt = self.attempts.get(key, 0) + 1
        self.attempts[key] = attempt
        opened = Opened(kind, key, f"{self.recorder.run_id}/{key}#{attempt}", time.monotonic(), attempt)
        fields = self.recorder.redactor.data({**columns, "verdict": "started"})
        self.recorder.sink.record(StepRecorded(self.recorder.run_id, kind, fields, opens=opened.opens))
        return opened

    def close(self, opened: Opened, verdict: str, data: dict[str, Any], **columns: Any) -> None:
        """The step's outcome, and the data a later process goes on from (with the time worked)."""
        data = {**data, "worked_ms": self.recorder.worked_ms()}
        if opened.attempt > 1:
            columns["detail"] = f"{columns.get('detail', '')} (again: the run's process stopped during it)".strip()
        ran = int((time.monotonic() - opened.started) * 1000)
        fields = {**columns, "verdict": verdict, "ok": int(verdict == "done"), "duration_ms": ran}
        fields = self.recorder.redactor.data({**fields, "data": json.dumps(data, ensure_ascii=False)})
        self.recorder.sink.record(StepClosed(self.recorder.run_id, opened.opens, fields))
        self.closed[opened.key], self.verdicts[opened.key] = data, verdict

    def once(self, kind: str, key: str, data: dict[str, Any], **columns: Any) -> dict[str, Any]:
        """A step that does nothing outside (a decision of the run's own): recorded once, its data kept."""
        kept = self.done(key)
        if kept is not None:
            return kept
        self.close(self.open(kind, key, **columns), "done", data, **columns)
        return self.closed[key]


def _data(text: Any) -> dict[str, Any]:
    try:
        found = json.loads(text or "{}")
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}
