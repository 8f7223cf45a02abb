"""One event stream: everything a run records, as plain records into one recorder.

A run (hearth/run/runner.py, and the holding run of a marathon or a swarm) never writes the audit
itself. Each thing it keeps is one frozen record below, handed to the `RunRecorder` it was given:

    RunStarted       the run's row as admitted (its links to other runs: `parent_run`, `link`)
    RunUpdated       columns learned later (what it is allowed, its workspace, its sandbox)
    RunFinished      its final status and totals
    StepRecorded     one step of its timeline (a model turn, a tool call started, a note ...)
    StepClosed       the outcome of a step that was recorded as started (a tool call)
    ApprovalAsked    an approval the run asked for (pending), or one decided on the spot
    ApprovalDecided  how an approval ended, as the run closed it or saw it closed by someone else
    ConnectionMade   a connection its commands made through the run's proxy
    TripwireTripped  a decoy touched
    CheckpointKept   a workspace checkpoint (before, after, a swarm's seed)
    MessagesKept     messages the model has read, appended to the run's conversation (or, after a
                     compaction, its whole new history): what a resumed run goes on with
    ResearchKept     a row of a research run's record: its plan, a source, a page's snapshot, a
                     piece of evidence, a claim (hearth/audit/research.py names the tables)

Every record carries what it writes and, where the audit keeps a time, the time it was made
(`at`, stamped when the record is built): a recorder writes what it is handed and adds nothing of
its own, so the same stream gives the same rows wherever and whenever it is written. Records are
JSON-native (`to_json` / `from_json`), redacted before they are made (hearth/run/recorder.py is
the choke point), and a step that is closed later is named by a key the run chose (`opens`), never
by a row id of one database.

`SqliteRecorder` (this machine's audit.db, through hearth/audit/store.py) is the one recorder
today. A second one (a run on another machine whose audit lives elsewhere) plugs in here: a class
with the two methods of `RunRecorder`, for instance one that sends `to_json(event)` lines to the
audit's machine, where a `SqliteRecorder` there writes `from_json(line)`; hand it to `run_goal`
(`recorder=`), `run_marathon` or `run_swarm` (a queued run starts in hearth/dispatch/claimed.py,
where a launcher that runs it elsewhere would pass its own). tests/capture_recorder.py is such a
recorder: it captures a whole run and replays it into an empty audit with the same rows
(tests/hearth/run/test_event_stream.py). Without one, a run records into the audit it opens for reading.

What a run still reads (reads are not recording, so they stay reads):
- through its recorder, `RunRecorder.approval`: an approval someone else may decide (`hearth
  approve`, the command center), polled while the run waits; it is the recorder's because the
  decision is written where the run's approvals are;
- from the audit it opens, other runs' history, before or around the stream: a follow-up's parent
  (its row, steps, checkpoints: hearth/run/long/followup.py), a swarm child's seed (the swarm's
  checkpoints), the router's check that a linked run's id is free, the day's token spend for the
  budget (hearth/leash/budget.py), a swarm's children, each recorded by its own run (rows, refusals,
  checkpoints). A marathon hears what it needs of its legs' record on its way to the recorder
  (hearth/run/long/marathon.py) and a swarm keeps its plan's problem: neither reads its own stream back.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from agent.clock import utc_now

if TYPE_CHECKING:
    from hearth.audit.approvals import Approval
    from hearth.audit.store import AuditStore, RunRecord
    from hearth.settings import Settings

__all__ = [
    "ApprovalAsked",
    "ApprovalDecided",
    "CheckpointKept",
    "ConnectionMade",
    "MessagesKept",
    "ResearchKept",
    "RunEvent",
    "RunFinished",
    "RunRecorder",
    "RunStarted",
    "RunUpdated",
    "SqliteRecorder",
    "default_recorder",
    "StepClosed",
    "StepRecorded",
    "TripwireTripped",
    "check",
    "from_json",
    "to_json",
]


@dataclass(frozen=True)
class RunStarted:
    """The run's row as admitted: the columns of hearth.audit.store.RunRecord."""

    run_id: str
    row: dict[str, Any]
    at: str = field(default_factory=utc_now)

    @classmethod
    def of(cls, record: RunRecord) -> RunStarted:
        at = record.started_at or utc_now()
        return cls(record.id, {**dataclasses.asdict(record), "started_at": at}, at)


@dataclass(frozen=True)
class RunUpdated:
    run_id: str
    columns: dict[str, Any]


@dataclass(frozen=True)
class RunFinished:
    """The final status and whatever totals come with it; `if_running` leaves a run that already
    has a final status as it is (a leg cut off by a signal, whose loop may have closed it)."""

    run_id: str
    status: str
    columns: dict[str, Any] = field(default_factory=dict)
    if_running: bool = False
    at: str = field(default_factory=utc_now)


@dataclass(frozen=True)
class StepRecorded:
    """One step; with `opens`, a step that has started, whose outcome a StepClosed with the same key writes."""

    run_id: str
    kind: str
    columns: dict[str, Any] = field(default_factory=dict)
    opens: str | None = None
    at: str = field(default_factory=utc_now)


@dataclass(frozen=True)
class StepClosed:
    run_id: str
    opened: str  # the `opens` key of the StepRecorded it completes
    columns: dict[str, Any]


@dataclass(frozen=True)
class ApprovalAsked:
    """An approval's whole row (hearth.audit.approvals.Approval): pending, or born decided at a terminal."""

    row: dict[str, Any]

    @classmethod
    def of(cls, approval: Approval) -> ApprovalAsked:
        return cls(dataclasses.asdict(approval))


@dataclass(frozen=True)
class ApprovalDecided:
    """A pending approval moved to `status` (expired, cancelled, or what someone else decided);
    applied only while it is still pending, so the first decision written wins.

    The run sends the decision it saw even when someone else wrote it (a no-op where it was
    written), so a recorder that never saw that write has it. The one case a replay does not
    reproduce: an operator's decision written in the instant after the run found the approval past
    its deadline and before its expiry was written (there the operator's wins; in a replay, the expiry)."""

    approval_id: str
    status: str
    decided_at: str | None
    decided_by: str | None
    note: str | None = None

    @classmethod
    def of(cls, approval: Approval) -> ApprovalDecided:
        return cls(approval.id, approval.status, approval.decided_at, approval.decided_by, approval.note)


@dataclass(frozen=True)
class ConnectionMade:
    run_id: str
    host: str
    port: int
    method: str
    allowed: bool
    reason: str | None = None
    bytes_up: int = 0
    bytes_down: int = 0
    at: str = field(default_factory=utc_now)


@dataclass(frozen=True)
class TripwireTripped:
    run_id: str
    decoy: str
    how: str
    tool: str
    action: str  # stop | record
    at: str = field(default_factory=utc_now)


@dataclass(frozen=True)
class CheckpointKept:
    run_id: str
    phase: str  # before | after | seed
    status: str
    commit_sha: str | None
    tag: str | None
    files: int
    detail: str | None
    workspace: str
    git_dir: str | None
    at: str = field(default_factory=utc_now)


@dataclass(frozen=True)
class MessagesKept:
    """Messages `start`, `start + 1`, ... of the conversation's `generation` (0 until a compaction)."""

    run_id: str
    generation: int
    start: int
    messages: list[dict[str, Any]]
    iteration: int
    worked_ms: int
    at: str = field(default_factory=utc_now)


@dataclass(frozen=True)
class ResearchKept:
    """One row of a research run's record; `what` is one of hearth/audit/research.py's TABLES."""

    run_id: str
    what: str
    row: dict[str, Any]
    at: str = field(default_factory=utc_now)


RunEvent = (
    RunStarted
    | RunUpdated
    | RunFinished
    | StepRecorded
    | StepClosed
    | ApprovalAsked
    | ApprovalDecided
    | ConnectionMade
    | TripwireTripped
    | CheckpointKept
    | MessagesKept
    | ResearchKept
)
EVENTS: dict[str, type[RunEvent]] = {
    cls.__name__: cls
    for cls in (
        RunStarted,
        RunUpdated,
        RunFinished,
        StepRecorded,
        StepClosed,
        ApprovalAsked,
        ApprovalDecided,
        ConnectionMade,
        TripwireTripped,
        CheckpointKept,
        MessagesKept,
        ResearchKept,
    )
}


def to_json(event: RunEvent) -> str:
    """One line: `{"event": "StepRecorded", ...its fields}`."""
    record = {"event": type(event).__name__, **dataclasses.asdict(event)}
    return json.dumps(record, ensure_ascii=False, default=str)


def from_json(line: str) -> RunEvent:
    """The record `to_json` wrote; ValueError names an event this hearth does not know."""
    record = json.loads(line)
    name = record.pop("event", None)
    if name not in EVENTS:
        raise ValueError(f"unknown run event {name!r}; known: {', '.join(EVENTS)}")
    return EVENTS[name](**record)


# What a record's columns may not name, per record: what the stream says itself (the run, a step's
# place and time, a run's final status), so that no record writes another run's rows or moves a step.
STEP_PLACE = ("id", "run_id", "seq", "kind", "at", "opens")
SET_BY_THE_STREAM: dict[type, tuple[str, str, tuple[str, ...]]] = {
    RunStarted: ("runs", "row", ()),
    RunUpdated: ("runs", "columns", ("id",)),
    RunFinished: ("runs", "columns", ("id", "status", "ended_at")),
    StepRecorded: ("steps", "columns", STEP_PLACE),
    StepClosed: ("steps", "columns", STEP_PLACE),
    ApprovalAsked: ("approvals", "row", ()),
}
SCALARS = (str, int, float, bool, type(None))


def check(event: RunEvent, audit: AuditStore) -> None:
    """ColumnRefused naming the first field of `event` a recorder must not write: a column its table
    does not have, one the stream sets itself, or a value that is not a plain value (a step's
    `arguments` alone may be an object, kept as JSON). For records from elsewhere (a fleet's worker)."""
    from hearth.audit.store import ColumnRefused

    if isinstance(event, ResearchKept):
        from hearth.audit import research

        research.check(audit, event.what, event.row)
        return
    table, name, fixed = SET_BY_THE_STREAM.get(type(event), ("", "", ()))
    if not table:
        return
    columns = getattr(event, name)
    if not isinstance(columns, dict):
        raise ColumnRefused(f"{type(event).__name__}: {name} must be an object of column names and values")
    audit.checked(table, columns, fixed=fixed)
    for key, value in columns.items():
        if not isinstance(value, SCALARS) and not (key == "arguments" and isinstance(value, dict | list)):
            raise ColumnRefused(f"{type(event).__name__}: {table}.{key} must be a plain value; nothing was written")


class RunRecorder(Protocol):
    """Where a run's record goes: every record of the stream, and the one thing the run reads back."""

    def record(self, event: RunEvent) -> None: ...

    def approval(self, approval_id: str) -> Approval | None:
        """The approval as it stands now (someone else may have decided it), or None."""
        ...


class SqliteRecorder:
    """The stream into this machine's audit (hearth/audit/store.py): one table write per record."""

    def __init__(self, audit: AuditStore) -> None:
        self.audit = audit
        self._opened: dict[str, int] = {}  # a started step's key -> its row id, for its StepClosed

    def record(self, event: RunEvent) -> None:
        from hearth.audit import approvals

        audit = self.audit
        match event:
            case RunStarted():
                audit.insert_run({**event.row, "started_at": event.at})
            case RunUpdated():
                audit.update_run(event.run_id, **event.columns)
            case RunFinished():
                columns = {"status": event.status, **event.columns, "ended_at": event.at}
                audit.finish_run(event.run_id, if_running=event.if_running, **columns)
            case StepRecorded(opens=None):
                audit.record_step(event.run_id, event.kind, at=event.at, **event.columns)
            case StepRecorded(opens=str() as key):
                columns = {**event.columns, "opens": key}
                self._opened[key] = audit.open_step(event.run_id, event.kind, at=event.at, **columns)
            case StepClosed():
                step = self._opened.pop(event.opened, None) or audit.opened_step(event.run_id, event.opened)
                if step is not None:  # opened by an earlier process of the run (a resumed one closes it)
                    audit.close_step(step, **event.columns)
            case ApprovalAsked():
                approvals.insert(audit, event.row)
            case ApprovalDecided():
                approvals.close(audit, event.approval_id, event.status, event.decided_at, event.decided_by, event.note)
            case ConnectionMade():
                audit.record_connection(event.run_id, **{**_columns(event), "allowed": int(event.allowed)})
            case TripwireTripped():
                audit.record_tripwire(event.run_id, **_columns(event))
            case CheckpointKept():
                audit.record_checkpoint(event.run_id, **_columns(event))
            case MessagesKept():
                audit.keep_messages(event)
            case ResearchKept():
                from hearth.audit import research

                research.keep(audit, event.run_id, event.what, event.row, event.at)

    def approval(self, approval_id: str) -> Approval | None:
        from hearth.audit import approvals

        row = approvals.row_of(self.audit, approval_id)
        return approvals.from_row(row) if row else None


# A fleet's worker's runs record into the worker's audit and its outbox to the hub; named by import
# path (as the launchers' table names its rows), so the stream does not import the fleet built on it.
FLEET_RECORDER = "hearth.remote.outbox:recorder_for"


def default_recorder(audit: AuditStore, settings: Settings) -> RunRecorder:
    """The recorder of a run handed none: this machine's audit, and on a fleet's worker
    (`settings.fleet_outbox`, which `hearth worker` sets for its watch) the outbox to the hub too."""
    if settings.fleet_outbox is None:
        return SqliteRecorder(audit)
    module, _, name = FLEET_RECORDER.partition(":")
    factory: Callable[[AuditStore, Settings], RunRecorder] = getattr(importlib.import_module(module), name)
    return factory(audit, settings)


def _columns(event: ConnectionMade | TripwireTripped | CheckpointKept) -> dict[str, Any]:
    """A record's fields as its table's columns (the run is the row's key, passed apart)."""
    columns = dataclasses.asdict(event)
    del columns["run_id"]
    return columns
