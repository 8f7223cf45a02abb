"""A worker's outbox: every event of its runs, on disk until the hub has written it.

A run on a worker records through `FleetRecorder`: each event goes into the worker's own audit (what
the run reads back, and what a resumed run goes on from) and into `<state>/fleet/outbox.db` with an
id of its own. The worker's `Sender` sends the outbox in order, in batches, to the hub's
`/fleet/events` and removes a batch only once the hub answered that it is written; a hub that does
not answer (down, unreachable, restarting) costs nothing but time: the events wait on disk, and a
batch sent twice (the answer was lost) is written once, since the hub skips an id it has.

An event the hub refuses (it names which) would be refused again: it is moved to the outbox's
`refused` table with the hub's reason, where it can be read, and the rest goes on.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hearth.run.events import RunEvent, SqliteRecorder, to_json

if TYPE_CHECKING:
    from hearth.audit.approvals import Approval
    from hearth.audit.store import AuditStore
    from hearth.remote.client import HubClient
    from hearth.settings import Settings

log = logging.getLogger("hearth.fleet")
BATCH_BYTES = 512 * 1024  # under the command center's 1 MiB body limit, whatever a batch holds
BATCH_EVENTS = 200
SCHEMA = """
create table if not exists outbox (seq integer primary key autoincrement, id text unique not null,
    run_id text, line text not null, kept_at real not null);
create table if not exists refused (id text primary key, run_id text, line text not null, reason text not null,
    refused_at real not null);
"""


class Outbox:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
        self.conn.execute("pragma journal_mode=wal")
        self.conn.execute("pragma synchronous=full")  # an event kept is on disk before the run goes on
        self.conn.executescript(SCHEMA)
        self.lock = threading.Lock()

    def keep(self, event: RunEvent) -> str:
        event_id = uuid.uuid4().hex
        run_id = getattr(event, "run_id", None) or (getattr(event, "row", None) or {}).get("run_id")
        with self.lock:
            self.conn.execute(
                "insert into outbox (id, run_id, line, kept_at) values (?, ?, ?, ?)",
                [event_id, run_id, to_json(event), time.time()],
            )
        return event_id

    def batch(self) -> list[tuple[int, str, str]]:
        """The oldest events, in order, within BATCH_BYTES and BATCH_EVENTS (at least one)."""
        with self.lock:
            rows = self.conn.execute("select seq, id, line from outbox order by seq limit ?", [BATCH_EVENTS]).fetchall()
        size, taken = 0, list[tuple[int, str, str]]()
        for row in rows:
            size += len(row[2]) + 64
            if taken and size > BATCH_BYTES:
                break
            taken.append(row)
        return taken

    def sent(self, last_seq: int) -> None:
        with self.lock:
            self.conn.execute("delete from outbox where seq <= ?", [last_seq])

    def refuse(self, seq: int, reason: str) -> None:
        with self.lock:
            self.conn.execute(
                "insert or replace into refused (id, run_id, line, reason, refused_at) "
                "select id, run_id, line, ?, ? from outbox where seq = ?",
                [reason, time.time(), seq],
            )
            self.conn.execute("delete from outbox where seq = ?", [seq])

    def runs(self) -> list[str]:
        """The runs whose events wait here: they are still going, as far as the hub can tell."""
        with self.lock:
            return [r[0] for r in self.conn.execute("select distinct run_id from outbox where run_id is not null")]

    def waiting(self) -> int:
        with self.lock:
            return int(self.conn.execute("select count(*) from outbox").fetchone()[0])

    def close(self) -> None:
        self.conn.close()


class Sender:
    """Sends the outbox to the hub from a thread of its own until `stop()`."""

    def __init__(self, outbox: Outbox, client: HubClient, *, idle_s: float = 0.05) -> None:
        self.outbox, self.client, self.idle_s = outbox, client, idle_s
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="hearth-fleet-sender", daemon=True)

    def start(self) -> Sender:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=10)

    def _run(self) -> None:
        backoff = 0.0
        while not self.stopping.is_set():
            try:
                more = self.send_once()
                backoff = 0.0
            except OSError as exc:  # the hub does not answer: try again, a little later each time
                backoff = min(5.0, backoff * 2 or 0.25)
                log.warning("hub not reachable (%s): %d events wait in the outbox", exc, self.outbox.waiting())
                more = False
            if not more:
                self.stopping.wait(backoff or self.idle_s)

    def send_once(self) -> bool:
        """Send one batch; whether there may be more. OSError: the hub did not answer."""
        rows = self.outbox.batch()
        if not rows:
            return False
        status, body = self.client.post("/fleet/events", {"events": [{"id": r[1], "event": r[2]} for r in rows]})
        if status == 200:
            self.outbox.sent(rows[-1][0])
            return True
        index = body.get("index")
        if 400 <= status < 500 and status != 401 and isinstance(index, int) and 0 <= index < len(rows):
            reason = str(body.get("error") or f"refused with HTTP {status}")
            log.error(
                "the hub refused event %s: %s (kept in %s, table refused)", rows[index][1], reason, self.outbox.path
            )
            if index:
                return self._partial(rows[:index]) or True
            self.outbox.refuse(rows[index][0], reason)
            return True
        raise OSError(f"the hub answered {status}: {body.get('error', '')}")

    def _partial(self, rows: list[tuple[int, str, str]]) -> bool:
        """Send the events before a refused one alone (they were fine); the next call meets it first."""
        status, body = self.client.post("/fleet/events", {"events": [{"id": r[1], "event": r[2]} for r in rows]})
        if status != 200:
            raise OSError(f"the hub answered {status}: {body.get('error', '')}")
        self.outbox.sent(rows[-1][0])
        return True


class FleetRecorder:
    """A worker's run records into its own audit and its outbox; approvals are read at the hub."""

    def __init__(self, local: SqliteRecorder, outbox: Outbox, client: HubClient) -> None:
        self.local, self.outbox, self.client = local, outbox, client

    def record(self, event: RunEvent) -> None:
        self.outbox.keep(event)
        self.local.record(event)

    def approval(self, approval_id: str) -> Approval | None:
        """The hub's word, where approvals are decided; this box's own copy when the hub is away."""
        from hearth.audit import approvals

        try:
            status, body = self.client.get(f"/fleet/approvals/{approval_id}")
        except OSError:
            status, body = 0, {}
        here = self.local.approval(approval_id)
        if status != 200:
            return here
        there = approvals.from_row(body)
        if here is not None and here.status == "pending" and there.status != "pending":
            approvals.copy_verdict(self.local.audit, there)
        return there


def recorder_for(audit: AuditStore, settings: Settings) -> FleetRecorder:
    """The recorder of a run on a remote machine (hearth/run/events.py's `default_recorder`, where
    `settings.fleet_outbox` is set): its hub and its token come from its environment."""
    from hearth.remote.client import HubAddress, HubClient

    assert settings.fleet_outbox is not None
    address = HubAddress.from_env()
    return FleetRecorder(SqliteRecorder(audit), Outbox(settings.fleet_outbox), HubClient(address.hub, address.token))


def closing_events(audit: AuditStore, run_id: str) -> list[RunEvent]:
    """What a run could not say itself (it was settled after its process died, or refused before
    its first record): its row and final status as this machine's audit has them, sent after its
    own events (at the hub a repeat changes nothing)."""
    from hearth.run.events import RunFinished, RunStarted

    run = audit.run(run_id)
    if run is None:
        return []
    row = {k: v for k, v in run.items() if k in RUN_COLUMNS}
    events: list[RunEvent] = [RunStarted(run_id, row, str(run["started_at"]))]
    if run["status"] != "waiting":
        columns = {"error": run.get("error")}
        events.append(RunFinished(run_id, str(run["status"]), columns, if_running=True, at=str(run["ended_at"])))
    return events


def take_decisions(settings: Settings, run_id: str, rows: list[dict[str, Any]]) -> None:
    """The decisions made at the hub while the run was suspended (its claim's answer), into this
    machine's audit, where the run finds them when it goes on."""
    from hearth.audit import approvals
    from hearth.audit.store import AuditStore

    given = [
        row for row in rows if isinstance(row, dict) and row.get("run_id") == run_id and row.get("status") != "pending"
    ]
    with AuditStore(settings.audit_path) as audit:
        for row in given:
            try:
                approval = approvals.from_row(row)
            except TypeError:  # not an approval's whole row: nothing to copy
                continue
            approvals.copy_verdict(audit, approval)


RUN_COLUMNS = {
    "id", "agent_name", "model", "goal", "mode", "source", "requested_by", "workspace", "sandbox", "status",
    "started_at", "parent_run", "link", "kind", "label", "model_requested", "model_reason", "model_host",
}  # fmt: skip
