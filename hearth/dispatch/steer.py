"""A person's steer to a run (`hearth steer RUN "text"`), left where the run takes it.

    give_as(settings, run_id, user, text, by=...)   asked of hearth/users/access.py first
                                            (`approve` in the run's profile: whoever may decide its
                                            calls may steer it); refused with the reason when the
                                            run has ended; else one file in the run's steers
                                            directory (hearth/run/steers.py), taken at its next
                                            boundary. `by` names the person as the door does
                                            (`web:ana`, `channel:telegram:ana`; the CLI: `ana`)

Every door is this one function: the CLI, the run page's form, `/v1` (a conversation's message
while its run is busy), the MCP server's `steer_run` and a channel's chat.

A run not started yet (its request waiting or claimed) takes it at its first boundary; a run
waiting for a person takes it with the decision, right after the decided call's result.
"""

from __future__ import annotations

import json
import re
import secrets

from agent.clock import utc_now
from agent.steer import Steer
from hearth.atomic import write_atomic
from hearth.audit.store import AuditStore
from hearth.dispatch.stop import run_profile
from hearth.errors import HearthError, NotFound, UsageError
from hearth.ids import ID_PATTERN
from hearth.run.state import FINAL_STATES
from hearth.run.steers import SteerBox, steers_dir
from hearth.settings import Settings
from hearth.users.access import User, require

MAX_STEER = 4_000  # characters: a steer is a word in the model's ear, not a document
MAX_WAITING = 20  # steers not yet read by one run: past it a door's flood waits for the run


class SteerRefused(HearthError):
    """The run cannot take a steer (it has ended, `status`); nothing was written (exit 1)."""

    def __init__(self, message: str, status: str) -> None:
        super().__init__(message)
        self.status = status


def give_as(settings: Settings, run_id: str, user: User, text: str, *, by: str = "") -> Steer:
    """Leave a steer for a run that is working or waiting, from `by` (default: the user's name):
    Forbidden, SteerRefused, NotFound or UsageError (naming what to do) otherwise."""
    text = text.strip()
    if not text:
        raise UsageError("the steer is empty; say what the run should know (e.g. 'use staging')")
    if len(text) > MAX_STEER:
        raise UsageError(
            f"the steer is {len(text):,} characters, over {MAX_STEER:,}; put the rest in a file the run can read"
        )
    if not re.fullmatch(ID_PATTERN, run_id):
        raise NotFound(f"no run {run_id!r}; hearth runs lists them")
    require(user, "approve", run_profile(settings, run_id))
    _check_open(settings, run_id)
    if len(SteerBox(steers_dir(settings, run_id)).pending()) >= MAX_WAITING:
        raise SteerRefused(
            f"{MAX_WAITING} steers wait for run {run_id} already; it reads them after its next tool result", "full"
        )
    steer = Steer(by=by or user.name, text=text, at=utc_now(), key=f"{utc_now()}-{secrets.token_hex(4)}.json")
    body = json.dumps({"by": steer.by, "text": steer.text, "at": steer.at}, ensure_ascii=False).encode()
    write_atomic(steers_dir(settings, run_id) / steer.key, body + b"\n")
    return steer


def _check_open(settings: Settings, run_id: str) -> None:
    """NotFound for a run hearth does not know; SteerRefused for one that has ended."""
    run = None
    if settings.audit_path.exists():
        audit = AuditStore.read_only(settings.audit_path)
        try:
            run = audit.run(run_id)
        finally:
            audit.close()
    if run is None:
        queued = settings.queue_dir / f"{run_id}.json", settings.queue_dir / "claimed" / f"{run_id}.json"
        if any(path.exists() for path in queued):
            return  # not started yet: it takes the steer at its first boundary
        raise NotFound(f"no run {run_id!r}; hearth runs lists them")
    if run["status"] in FINAL_STATES:
        raise SteerRefused(
            f"run {run_id} has ended ({run['status']}), so no model will read a steer; "
            f"to go on from it, start a follow-up: hearth continue {run_id} 'what next'",
            run["status"],
        )
