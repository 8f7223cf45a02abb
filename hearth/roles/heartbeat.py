"""A role's heartbeat: which prompt it takes, the request it queues, and a sweep of every role.

A role with `heartbeat = "hourly"` (any schedule a mission takes) wakes as a mission does
(hearth/leash/missions.py fires it: `hearth watch`, or a NixOS timer running `hearth heartbeat
NAME`). Each firing queues one request through the queue's front door, `heartbeat` set, so its run
continues the role's heartbeat conversation in its home (hearth/roles/runs.py).

The runtime chooses only which prompt the turn takes, never what the turn does:

    strategic-review   when asked (`hearth heartbeat NAME --strategic-review`), or when the record's
                       last_strategic_review is missing, unreadable or older than the role's
                       `strategic_review` (24 h unless set); its goal is prompts/strategic-review.md
    upkeep             otherwise; its goal is prompts/heartbeat.md

Both prompts are the home's (made from templates, hearth/roles/home.py). A role switched off
(hearth/roles/switch.py) is not woken: the skip is recorded. Every firing and every skip is a row of
`operator_actions` in the audit (area `roles`), with the prompt chosen and why.
"""

from __future__ import annotations

import logging
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hearth.audit import operator
from hearth.audit.store import AuditStore
from hearth.dispatch.launchers import heal
from hearth.errors import ConfigError, HearthError, UsageError
from hearth.limits import parse_duration
from hearth.queue.request import Request
from hearth.queue.submit import submit
from hearth.roles.home import (
    HEARTBEAT_PROMPT,
    RECORD,
    REVIEW_PROMPT,
    home_of,
    last_review,
    read_record,
    template_text,
)
from hearth.roles.switch import off_reason
from hearth.run.profiles import SETTINGS_FILE, Profile, load_profile, profile_names
from hearth.settings import Settings

log = logging.getLogger(__name__)
REVIEW_EVERY = timedelta(hours=24)
UPKEEP, REVIEW = "upkeep", "strategic-review"
AREA = "roles"
TAGS = {UPKEEP: "beat", REVIEW: "review"}  # in the request's id
ID_ROOM = 40  # of a request id's 64 characters, what the role's name may take (the rest is the time)


@dataclass(frozen=True)
class Fired:
    """One role's heartbeat: the request queued, or why it was skipped."""

    role: str
    kind: str = ""  # upkeep | strategic-review; "" when skipped
    why: str = ""  # why this prompt, or why skipped
    request: str = ""  # the queued request's id; "" when skipped
    path: Path | None = None  # the queued request's file

    @property
    def skipped(self) -> bool:
        return not self.request


def role_profile(settings: Settings, name: str) -> Profile:
    """The role called `name`; UsageError when the profile is not a role."""
    profile = load_profile(settings.config_dir, name)
    if not profile.home:
        raise UsageError(f"agent profile {name!r} is not a role; add home = true to its {SETTINGS_FILE}")
    return profile


def roles(settings: Settings) -> tuple[list[Profile], list[str]]:
    """Every configured role, and one line per profile that does not load (skipped)."""
    found, problems = [], []
    for name in profile_names(settings.config_dir):
        try:
            profile = load_profile(settings.config_dir, name)
        except HearthError as exc:
            problems.append(f"{name}: {exc}")
            continue
        if profile.home:
            found.append(profile)
    return found, problems


def choose(home: Path, profile: Profile, now: datetime, *, asked: bool = False) -> tuple[str, str]:
    """(upkeep or strategic-review, why): the prompt this heartbeat takes."""
    if asked:
        return REVIEW, "a strategic review was asked for"
    every = timedelta(seconds=parse_duration(profile.strategic_review)) if profile.strategic_review else REVIEW_EVERY
    if not (home / RECORD).exists():
        return REVIEW, "the role has no record yet"
    try:
        last = last_review(read_record(home))
    except ConfigError as exc:
        return REVIEW, f"last_strategic_review cannot be read ({exc})"
    if last is None:
        return REVIEW, "the record has no last_strategic_review"
    if now - last >= every:
        return REVIEW, f"the last strategic review ({last.isoformat(timespec='seconds')}) is older than {_span(every)}"
    return UPKEEP, f"the last strategic review ({last.isoformat(timespec='seconds')}) is within {_span(every)}"


def prompt_text(settings: Settings, name: str, home: Path, relative: str) -> str:
    """The home's prompt, else (not made yet: the role's first run makes it) its template; nothing
    is written, so a timer that may write only the queue fires a heartbeat."""
    path = home / relative
    if not path.exists():
        return template_text(settings.config_dir, name, relative)
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read role {name}'s prompt {path}: {exc}; hearth doctor checks it") from None


def _span(every: timedelta) -> str:
    hours = every.total_seconds() / 3600
    return f"{hours:g} h"


def fire(
    settings: Settings, name: str, *, by: str, source: str, now: datetime | None = None, review: bool = False
) -> Fired:
    """Queue one heartbeat of the role (or record why it is skipped); UsageError for a profile that
    is not a role, SubmitRefused when the queue would not take it."""
    now = now or datetime.now(UTC)
    profile = role_profile(settings, name)
    off = off_reason(settings, name, profile.enabled)
    if off:
        fired = Fired(name, why=f"skipped: {off}")
        _record(settings, fired, by, now)
        return fired
    home = home_of(settings, name)
    kind, why = choose(home, profile, now, asked=review)
    prompt = prompt_text(settings, name, home, REVIEW_PROMPT if kind == REVIEW else HEARTBEAT_PROMPT)
    request = Request.model_validate(
        {
            "id": f"{name[:ID_ROOM]}-{TAGS[kind]}-{now.strftime('%Y%m%dT%H%M%S')}-{now.strftime('%f')[:3]}",
            "goal": prompt,
            "agent_name": name,
            "heartbeat": kind,
            "label": f"{name} {'strategic review' if kind == REVIEW else 'heartbeat'}",
            "source": source,
        }
    )
    done = submit(request, settings, requested_by=by, heal=heal)
    fired = Fired(name, kind, why, done.id, done.path)
    _record(settings, fired, by, now)
    return fired


def sweep(settings: Settings, *, by: str, source: str, now: datetime | None = None) -> tuple[list[Fired], list[str]]:
    """One heartbeat of every role that has a heartbeat (the switched-off ones skipped, recorded);
    and one line per role or profile that could not be fired."""
    fired: list[Fired] = []
    found, problems = roles(settings)
    for profile in found:
        if not profile.heartbeat:
            continue
        try:
            fired.append(fire(settings, profile.name, by=by, source=source, now=now))
        except HearthError as exc:
            problems.append(f"{profile.name}: {exc}")
    return fired, problems


def _record(settings: Settings, fired: Fired, by: str, now: datetime) -> None:
    """The firing or the skip, in the audit."""
    detail = f"{fired.kind}: {fired.why}; request {fired.request}" if fired.request else fired.why
    _action(settings, "heartbeat", fired.role, by, detail, ok=not fired.skipped, now=now)


def record_switch(settings: Settings, name: str, by: str, detail: str) -> None:
    """A role switched off or on, in the audit."""
    _action(settings, "switch", name, by, detail, ok=True, now=datetime.now(UTC))


def _action(settings: Settings, action: str, role: str, by: str, detail: str, *, ok: bool, now: datetime) -> None:
    """One row of `operator_actions`, area roles."""
    row: dict[str, Any] = {"at": now.isoformat(timespec="seconds"), "by": by, "area": AREA, "action": action}
    row |= {"subject": role, "ok": int(ok), "detail": detail}
    try:
        settings.writable_state_dir()
        with AuditStore(settings.audit_path) as audit:
            operator.record(audit, row)
    except (HearthError, OSError, sqlite3.Error) as exc:  # the request is queued (or the skip kept): said, not lost
        log.warning("role %s: %s not recorded in the audit %s: %s", role, action, settings.audit_path, exc)
