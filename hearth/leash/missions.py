"""Missions: goals on a schedule, each carrying a whole request, that the operator can see and steer.

    $HEARTH_CONFIG_DIR/missions/NAME.toml      (NixOS writes one per services.hearth.schedules.NAME)
        schedule = "*-*-* 06:00:00"            systemd OnCalendar (hearth/leash/schedule.py reads the common subset)
        goal = "Summarise yesterday's runs"    required
        agent = "notes"                        a profile (default: default)
        model = "auto"                         mode, allowed_tools, egress, credentials,
        max_iterations = 12                    max_tokens, timeout_s, label: as in a request
        timer = "systemd"                      a systemd timer fires it (NixOS); `hearth watch` does not
        eval = "chores"                        regression watch: when it fires after the router, a profile
        eval_drop = 0.1                        or the default model changed, run that suite; a pass-rate
                                               drop beyond eval_drop is alerted (hearth/eval/watch.py)
        deliver = "telegram:ada"               each run's answer goes to that user's chat on that channel
                                               ("email:ada": a mail to her linked address)
                                               (hearth/channels/follow.py: delivered, retried, or missing)

A role's heartbeat (`heartbeat = "hourly"` in a role's agent.toml, docs/roles.md) is a mission too,
named `heartbeat-ROLE`, made from the profile instead of a file: its firing is the role's
(hearth/roles/heartbeat.py: the prompt chosen then, a turn that continues the role's conversation).

A timer (or `hearth watch`, on a host without systemd) calls `fire`: it enqueues the request
through the same queue as any other, or, while the mission is paused, records a skip instead.
State is kept beside the audit in `<state_dir>/missions/`: NAME.paused.json (who, when) and
NAME.json (last fired, last skipped, how often skipped), each replaced atomically; the last run
and its status come from the audit (requested_by `mission:NAME`). A bad file is reported (by
`hearth doctor` and `hearth missions`) and skipped, never fatal.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agent.clock import utc_now
from hearth.atomic import write_atomic
from hearth.dispatch.launchers import heal
from hearth.errors import HearthError, NotFound
from hearth.leash.schedule import Calendar, CalendarError, parse_calendar
from hearth.queue.intake import describe
from hearth.queue.request import Request
from hearth.queue.submit import Submitted, submit
from hearth.roles.heartbeat import fire as heartbeat
from hearth.roles.heartbeat import roles
from hearth.run.profiles import profile_names
from hearth.settings import Settings

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$")  # room for -<time>-<hex> in a 64-character id
FIELDS = {  # mission key -> request field
    "goal": "goal",
    "agent": "agent_name",
    "model": "model",
    "mode": "mode",
    "allowed_tools": "allowed_tools",
    "egress": "egress",
    "credentials": "credentials",
    "max_iterations": "max_iterations",
    "max_tokens": "max_tokens",
    "timeout_s": "timeout_s",
    "label": "label",
}
KEYS = ("schedule", "timer", "eval", "eval_drop", "deliver", *FIELDS)
DELIVER = re.compile(r"^(telegram|email):[a-z][a-z0-9._-]{0,31}$")  # CHANNEL:USER
EVAL_DROP = 0.1
REQUEST_NAMES = {request: mission for mission, request in FIELDS.items()}


@dataclass(frozen=True)
class Mission:
    name: str
    schedule: str
    fields: dict[str, Any]  # request fields, checked
    timer: str = ""  # "systemd": a timer fires it
    calendar: Calendar | None = field(default=None, compare=False)  # None: not a schedule hearth reads
    eval: str = ""  # a suite the regression watch runs after a configuration change
    eval_drop: float = EVAL_DROP
    deliver: str = ""  # CHANNEL:USER, whose chat gets each run's answer
    role: str = ""  # a role's heartbeat: the role fires it (hearth/roles/heartbeat.py)

    def request(self, *, source: str, now: datetime) -> Request:
        stamp = now.strftime("%Y%m%dT%H%M%S")
        suffix = now.strftime("%f")[:3]
        body = {"id": f"{self.name}-{stamp}-{suffix}", **self.fields, "source": source}
        return Request.model_validate({**body, "requested_by": f"mission:{self.name}"})


@dataclass(frozen=True)
class Problem:
    path: Path
    reason: str

    def line(self) -> str:
        return f"{self.path}: {self.reason}"


def missions_dir(settings: Settings) -> Path:
    return settings.config_dir / "missions"


def load_missions(settings: Settings) -> tuple[list[Mission], list[Problem]]:
    """Every mission that loads, and one problem per file that does not (skipped)."""
    found: list[Mission] = []
    problems: list[Problem] = []
    directory = missions_dir(settings)
    for path in sorted(directory.glob("*.toml")) if directory.is_dir() else []:
        try:
            found.append(_load(path, settings))
        except _Bad as exc:
            problems.append(Problem(path, str(exc)))
    beats, bad = _heartbeats(settings, {m.name for m in found})
    return found + beats, problems + bad


HEARTBEAT_GOAL = "(the role's heartbeat or strategic-review prompt, chosen when it fires)"


def _heartbeats(settings: Settings, taken: set[str]) -> tuple[list[Mission], list[Problem]]:
    """A mission per role with a heartbeat (a mission file of the same name wins, reported)."""
    found, problems = [], []
    for profile in roles(settings)[0]:
        if not profile.heartbeat:
            continue
        name, path = f"heartbeat-{profile.name}", (profile.directory or settings.config_dir) / "agent.toml"
        if name in taken or not NAME.fullmatch(name):
            why = "a mission file has its name" if name in taken else "the role's name is too long for a mission's"
            problems.append(Problem(path, f"the heartbeat is not scheduled: {why} ({name})"))
            continue
        fields = {"goal": HEARTBEAT_GOAL, "agent_name": profile.name}
        calendar = parse_calendar(profile.heartbeat)
        found.append(Mission(name, profile.heartbeat, fields, profile.heartbeat_timer, calendar, role=profile.name))
    return found, problems


def find_mission(settings: Settings, name: str) -> Mission:
    missions, problems = load_missions(settings)
    for mission in missions:
        if mission.name == name:
            return mission
    bad = next((p for p in problems if p.path.stem == name), None)
    if bad:
        raise NotFound(f"mission {name} does not load: {bad.line()}")
    known = ", ".join(m.name for m in missions) or "none"
    raise NotFound(f"no mission {name!r} in {missions_dir(settings)}; missions: {known}")


class _Bad(Exception):
    pass


def _load(path: Path, settings: Settings) -> Mission:
    name = path.stem
    if not NAME.fullmatch(name):
        raise _Bad("a mission's file name is 1-40 characters from A-Z a-z 0-9 . _ - (starting with a letter or digit)")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise _Bad(f"cannot read it: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise _Bad(f"not valid TOML: {exc}") from None
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise _Bad(f"unknown key {unknown[0]!r}; the keys are {', '.join(KEYS)}")
    schedule, timer = data.get("schedule"), data.get("timer", "")
    if not (isinstance(schedule, str) and schedule.strip()):
        raise _Bad("schedule must be a systemd calendar event such as daily or *-*-* 06:00:00")
    if timer not in ("", "systemd"):
        raise _Bad(f'timer must be "systemd" or absent, got {timer!r}')
    fields = {FIELDS[k]: v for k, v in data.items() if k in FIELDS}
    _check_request(fields)
    watched, drop = _eval_keys(data)
    deliver = data.get("deliver", "")
    if not (isinstance(deliver, str) and (deliver == "" or DELIVER.fullmatch(deliver))):
        raise _Bad(f'deliver must be CHANNEL:USER such as "telegram:ada" (channels: telegram, email), got {deliver!r}')
    agent = fields.get("agent_name", "default")
    if agent not in profile_names(settings.config_dir):
        raise _Bad(f"agent {agent!r} is not a profile; profiles: {', '.join(profile_names(settings.config_dir))}")
    try:
        calendar: Calendar | None = parse_calendar(schedule)
    except CalendarError as exc:
        if timer != "systemd":  # hearth watch fires it, so it must read the schedule
            raise _Bad(f"schedule: {exc}") from None
        calendar = None
    return Mission(name, schedule.strip(), fields, timer, calendar, watched, drop, deliver)


def _eval_keys(data: dict[str, Any]) -> tuple[str, float]:
    watched, drop = data.get("eval", ""), data.get("eval_drop", EVAL_DROP)
    if not (isinstance(watched, str) and (watched == "" or NAME.fullmatch(watched))):
        raise _Bad(f"eval must name a suite ($HEARTH_CONFIG_DIR/evals/NAME.toml), got {watched!r}")
    if isinstance(drop, bool) or not isinstance(drop, int | float) or not 0 <= drop < 1:
        raise _Bad(f"eval_drop must be a share of the pass rate from 0 to below 1, such as 0.1, got {drop!r}")
    return watched, float(drop)


def _check_request(fields: dict[str, Any]) -> None:
    try:
        Request.model_validate({"id": "mission-check", **fields})
    except ValidationError as exc:
        raise _Bad(describe(exc, names=REQUEST_NAMES)) from None


# -- state ----------------------------------------------------------------------------------------
def state_dir(settings: Settings) -> Path:
    return settings.state_dir / "missions"


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def paused_by(settings: Settings, name: str) -> dict[str, Any] | None:
    path = state_dir(settings) / f"{name}.paused.json"
    return (_read(path) or {"by": "unknown", "since": "unknown"}) if path.exists() else None


def pause_mission(settings: Settings, mission: Mission, *, by: str) -> dict[str, Any]:
    current = paused_by(settings, mission.name)
    if current:
        return current
    record = {"by": by, "since": utc_now()}
    path = state_dir(settings) / f"{mission.name}.paused.json"
    write_atomic(path, json.dumps(record).encode() + b"\n")
    path.chmod(0o644)  # no secret in it; the mission's timer (user hearth) must read it
    return record


def resume_mission(settings: Settings, mission: Mission) -> dict[str, Any] | None:
    current = paused_by(settings, mission.name)
    (state_dir(settings) / f"{mission.name}.paused.json").unlink(missing_ok=True)
    return current


def history(settings: Settings, name: str) -> dict[str, Any]:
    return _read(state_dir(settings) / f"{name}.json")


def _note(settings: Settings, name: str, **update: Any) -> None:
    record = {**history(settings, name), **update}
    write_atomic(state_dir(settings) / f"{name}.json", json.dumps(record).encode() + b"\n")


def fire(
    settings: Settings, mission: Mission, *, source: str, by: str, now: datetime, force: bool = False
) -> Submitted | None:
    """Enqueue the mission's request now; None (and a skip recorded) while it is paused, unless `force`."""
    if not force and paused_by(settings, mission.name):
        seen = history(settings, mission.name)
        _note(settings, mission.name, last_skipped=utc_now(), skipped=int(seen.get("skipped", 0)) + 1)
        return None
    if mission.role:
        return _beat(settings, mission, source, by)
    done = submit(mission.request(source=source, now=now), settings, requested_by=by, heal=heal)
    _note(settings, mission.name, last_fired=utc_now(), last_request=done.id)
    if mission.eval:
        done.notes.append(_watch(settings, mission))
    return done


def _beat(settings: Settings, mission: Mission, source: str, by: str) -> Submitted | None:
    """A role's heartbeat fired as its mission: None (a skip, recorded by the role) when the role is off."""
    fired = heartbeat(settings, mission.role, by=by, source=source)
    if fired.path is None:
        seen = history(settings, mission.name)
        _note(settings, mission.name, last_skipped=utc_now(), skipped=int(seen.get("skipped", 0)) + 1)
        return None
    _note(settings, mission.name, last_fired=utc_now(), last_request=fired.request)
    return Submitted(fired.request, fired.path, [f"{fired.kind}: {fired.why}"])


def _watch(settings: Settings, mission: Mission) -> str:
    """The regression watch's turn (hearth/eval/watch.py): a note, never a failure of the mission."""
    from hearth.eval.watch import watch_fired

    try:
        started = watch_fired(settings, mission.name, mission.eval, mission.eval_drop, heal=heal)
    except HearthError as exc:
        return f"eval {mission.eval} not run: {exc}"
    return f"eval {mission.eval} started as {started}" if started else f"eval {mission.eval}: nothing changed"


# -- seeing them ----------------------------------------------------------------------------------
def listing(settings: Settings, now: datetime) -> list[dict[str, Any]]:
    """Each mission with its schedule, next elapse, pause, skips and last run (from the audit)."""
    missions, _ = load_missions(settings)
    last = _last_runs(settings, [m.name for m in missions])
    rows = []
    for mission in missions:
        elapse = mission.calendar.next_after(now) if mission.calendar else None
        pause = paused_by(settings, mission.name)
        seen = history(settings, mission.name)
        run = last.get(mission.name) or {}
        rows.append(
            {
                "name": mission.name,
                "schedule": mission.schedule,
                "fired_by": "systemd timer" if mission.timer else "hearth watch",
                "next": elapse.isoformat(timespec="seconds") if elapse else "see: systemctl list-timers",
                "paused": f"since {pause['since']}, by {pause['by']}" if pause else None,
                "skipped": int(seen.get("skipped", 0)),
                "last_run": run.get("id"),
                "last_started": run.get("started_at"),
                "last_status": run.get("status"),
                "agent": mission.fields.get("agent_name", "default"),
                "goal": mission.fields["goal"],
            }
        )
    return rows


def _last_runs(settings: Settings, names: list[str]) -> dict[str, dict[str, Any]]:
    """The latest run of each mission, read without writing (a missing audit is no runs)."""
    import sqlite3

    from hearth.audit import runs
    from hearth.audit.reader import AuditReader

    if not names or not settings.audit_path.exists():
        return {}
    found: dict[str, dict[str, Any]] = {}
    reader = AuditReader(settings.audit_path, timeout=2.0)
    try:
        for name in names:
            latest = runs.requested_by(reader, f"mission:{name}")
            if latest:
                found[name] = latest[0]
    except sqlite3.Error:
        return found
    finally:
        reader.forget()
    return found


def missed_since_last(settings: Settings, mission: Mission, now: datetime) -> bool:
    """An elapse came between the mission's last firing (or skip) and `now`; never for one that
    has not fired yet (as systemd, which catches up only from a recorded last trigger)."""
    seen = history(settings, mission.name)
    last = max((str(seen[k]) for k in ("last_fired", "last_skipped") if seen.get(k)), default="")
    if not last or mission.calendar is None:
        return False
    try:
        at = datetime.fromisoformat(last).astimezone().replace(tzinfo=None)  # local, as `now` is
    except ValueError:
        return False
    elapse = mission.calendar.next_after(at)
    return elapse is not None and elapse <= now


class Timetable:
    """`hearth watch`'s timers: the next elapse of each mission it fires (not those a systemd timer fires)."""

    def __init__(self, settings: Settings, now: datetime) -> None:
        self.settings = settings
        self.next: dict[str, tuple[Mission, datetime]] = {}
        self.problems: list[Problem] = []
        self.missed: set[str] = set()  # fired at start for an elapse that passed while nothing watched
        self.reload(now, catch_up=True)

    def reload(self, now: datetime, *, catch_up: bool = False) -> None:
        """Read the definitions again; an unchanged schedule keeps its next elapse. At start
        (`catch_up`), a mission whose elapse passed since it last fired fires now, once, as a
        systemd timer with Persistent=true does after the machine was off."""
        missions, self.problems = load_missions(self.settings)
        kept: dict[str, tuple[Mission, datetime]] = {}
        for mission in missions:
            if mission.timer or mission.calendar is None:
                continue
            old = self.next.get(mission.name)
            if old and old[0].schedule == mission.schedule:
                kept[mission.name] = (mission, old[1])
                continue
            elapse = mission.calendar.next_after(now)
            if catch_up and missed_since_last(self.settings, mission, now):
                elapse = now
                self.missed.add(mission.name)
            if elapse is not None:
                kept[mission.name] = (mission, elapse)
        self.next = kept

    def due(self, now: datetime) -> list[Mission]:
        """The missions whose time has come; each moves on to its next elapse."""
        ready = []
        for name, (mission, elapse) in list(self.next.items()):
            if elapse <= now:
                ready.append(mission)
                following = mission.calendar.next_after(now) if mission.calendar else None
                if following is None:
                    del self.next[name]
                else:
                    self.next[name] = (mission, following)
        return ready

    def wait_s(self, now: datetime) -> float | None:
        if not self.next:
            return None
        return max(0.0, min((elapse - now).total_seconds() for _, elapse in self.next.values()))
