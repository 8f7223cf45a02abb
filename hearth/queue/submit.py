"""Submitting a request: the queue's front door, the one path `hearth enqueue`, the command center,
missions and swarms write the queue through.

`submit(request, settings)` stamps when and by whom, checks the request against this host,
refuses an id already queued or used and writes the file atomically (queue-spec/README.md).
It knows nothing of who starts requests: a caller that wants the launcher to make sure the
request will be seen passes `heal` (hearth.dispatch.launchers.heal), whose notes come back in
`Submitted.notes`. A refusal is `SubmitRefused`, whose text is the one line the sender reads and
whose `kind` says which wall it hit:

    invalid     the request itself (its text is the queue's own reason)
    duplicate   the id is queued already or names a run
    queue       the queue directory cannot be written
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hearth.audit.requests import run_status_readonly
from hearth.errors import UsageError
from hearth.queue.directory import Queue
from hearth.queue.intake import RequestRefused, check
from hearth.queue.request import Request
from hearth.settings import Settings


class SubmitRefused(UsageError):
    """The request was not queued; str() is the one-line reason, `kind` which check refused it."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Submitted:
    id: str
    path: Path
    notes: list[str] = field(default_factory=list)  # what the launcher check did, one line each


Heal = Callable[[Settings], list[str]]  # after the write: make sure the request will be seen; notes


def submit(request: Request, settings: Settings, *, requested_by: str, heal: Heal | None = None) -> Submitted:
    """Queue `request` (stamped now and by `requested_by` where it says nothing), then `heal`;
    SubmitRefused if it was not queued."""
    request = stamped(request, requested_by)
    try:
        check(request)
    except RequestRefused as exc:
        raise SubmitRefused(f"invalid request: {exc}", "invalid") from None
    queue = Queue(settings.queue_dir)
    refuse_duplicate(request.id, queue, settings)
    path = _write(queue, request)
    return Submitted(request.id, path, heal(settings) if heal else [])


def stamped(request: Request, requested_by: str) -> Request:
    """Fill when and by whom, if the request does not say."""
    update: dict[str, Any] = {}
    if request.created_at is None:
        update["created_at"] = datetime.now(UTC)
    if not request.requested_by:
        update["requested_by"] = requested_by
    return request.model_copy(update=update)


def refuse_duplicate(request_id: str, queue: Queue, settings: Settings) -> None:
    """Fail early on an id already used; the spawner checks again, so what cannot be read is skipped."""
    where = queue.known(request_id) if queue.root.is_dir() else None
    if where:
        raise SubmitRefused(f"duplicate id: a request {request_id} is already in queue/{where}/", "duplicate")
    status = run_status_readonly(settings.audit_path, request_id)
    if status:
        raise SubmitRefused(f"duplicate id: run {request_id} already exists (status {status})", "duplicate")


def _write(queue: Queue, request: Request) -> Path:
    try:
        # Only the queue itself: its subdirectories are the spawner's (a submitter running this
        # must not own claimed/ or rejected/, or hearth could not move files into them).
        queue.root.mkdir(parents=True, exist_ok=True)
        return queue.enqueue(request)
    except FileExistsError:
        raise SubmitRefused(f"duplicate id: a request {request.id} is already queued", "duplicate") from None
    except OSError as exc:
        raise SubmitRefused(f"cannot write to the queue {queue.root}: {exc.strerror or exc}", "queue") from None
