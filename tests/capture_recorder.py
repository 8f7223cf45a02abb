"""A second recorder, as another machine's would be: it keeps a run's whole stream as JSON lines.

`CaptureRecorder` takes every record a run makes, keeps it as the line a recorder on another
machine would be sent (`hearth.run.events.to_json`), and hands it on to the recorder it wraps
(this machine's audit, so the run can read back an approval someone else decides). `heard`
hears each record after it was written: the marker a test waits on (an approval just asked).
`replay` writes captured lines into an audit through the SQLite recorder, as the audit's
machine would on receiving them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from hearth.audit.approvals import Approval
from hearth.audit.store import AuditStore
from hearth.run.events import RunEvent, RunRecorder, SqliteRecorder, from_json, to_json


class CaptureRecorder:
    def __init__(self, inner: RunRecorder, *, heard: Callable[[RunEvent], None] | None = None) -> None:
        self.inner = inner
        self.heard = heard
        self.lines: list[str] = []

    def record(self, event: RunEvent) -> None:
        self.lines.append(to_json(event))
        self.inner.record(event)
        if self.heard is not None:
            self.heard(event)

    def approval(self, approval_id: str) -> Approval | None:
        return self.inner.approval(approval_id)

    def kinds(self) -> list[str]:
        """The records' names, in the order the run made them."""
        return [type(from_json(line)).__name__ for line in self.lines]


def replay(lines: Iterable[str], audit: AuditStore) -> None:
    """Each captured line, decoded, into `audit` through this machine's recorder."""
    recorder = SqliteRecorder(audit)
    for line in lines:
        recorder.record(from_json(line))
