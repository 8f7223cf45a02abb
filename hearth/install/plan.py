"""What `hearth install --systemd` puts on a host, as a list of steps that each know whether they are done.

A step is a record (an account, a directory with its owner and mode, a file with its text, a link);
`pending` says whether the root already has it, so a second install changes nothing, and a dry run
prints the pending ones. The settings come from `<root>/etc/hearth/install.toml` (keys of
`InstallConfig`, all optional) and the missions in `<root>/etc/hearth/missions/` whose `timer` is
"systemd"; the credential files live in `<root>/etc/hearth/credentials/` (0700, root's).
"""

from __future__ import annotations

import json
import secrets
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from hearth.errors import ConfigError, HearthError
from hearth.install.units import CONFIG_DIR, USERS_FILE, InstallConfig, Renderer, Unit, declaration, load

UNIT_DIR = "/etc/systemd/system"
TMPFILES = "/etc/tmpfiles.d/hearth.conf"
POLKIT = "/etc/polkit-1/rules.d/50-hearth.rules"
CREDENTIALS = f"{CONFIG_DIR}/credentials"
SETTINGS = f"{CONFIG_DIR}/install.toml"
CHANNEL_SECRETS = ("telegram-token", "email-password")  # hearth/channels/config.py's credentials
HEADER = "# written by `hearth install --systemd` from hearth/install/units.toml; edit install.toml, not this\n"


class InstallError(HearthError):
    """The install cannot go on (a bad install.toml, a name taken by another kind of file); str() says which."""


@dataclass(frozen=True)
class Account:
    """A system group, or a system user with its primary group and one more."""

    name: str
    kind: str  # "group" or "user"
    home: str = ""
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class Directory:
    path: str
    mode: int
    user: str = "root"
    group: str = "root"


@dataclass(frozen=True)
class File:
    path: str
    text: str
    mode: int = 0o644
    user: str = "root"
    group: str = "root"
    keep: bool = False  # written once, never replaced (a database, a token the operator may have shared)
    secret: bool = False  # never printed


@dataclass(frozen=True)
class Link:
    """An enable: <target>.wants/<unit> -> the unit file, as `systemctl enable` makes it."""

    path: str
    target: str


Step = Account | Directory | File | Link


def read_config(root: Path, hearth: str, hearth_loop: str) -> InstallConfig:
    """install.toml's values over the defaults, the missions with a systemd timer, the credentials found."""
    path = root / SETTINGS.lstrip("/")
    values: dict[str, Any] = {}
    if path.exists():
        try:
            values = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise InstallError(f"{path} is not TOML: {exc}; fix it or remove it for the defaults") from None
    known = {f.name for f in fields(InstallConfig)}
    if unknown := sorted(set(values) - known):
        raise InstallError(f"{path}: unknown setting {unknown[0]!r}; known: {', '.join(sorted(known))}")
    values.setdefault("schedules", _mission_calendars(root))
    values.setdefault("channels", (root / CONFIG_DIR.lstrip("/") / "channels.toml").is_file())
    values.setdefault("channel_credentials", _credential_files(root, CHANNEL_SECRETS))
    if "users" in values:
        _check_users(root, path, values["users"])
    values.setdefault("credentials", _run_credentials(root, values.get("users", {})))
    if values.get("web"):
        values.setdefault("operator_token_file", f"{CREDENTIALS}/operator-token")
    if values.get("self_test_calendar") == "":  # TOML has no null: "" means no self-test timer
        values["self_test_calendar"] = None
    if "agent_address_allow" in values:
        values["agent_address_allow"] = tuple(values["agent_address_allow"])
    return InstallConfig(**{"hearth": hearth, "hearth_loop": hearth_loop, **values})


def _mission_calendars(root: Path) -> dict[str, str]:
    found = {}
    for path in sorted((root / CONFIG_DIR.lstrip("/") / "missions").glob("*.toml")):
        try:
            mission = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError:
            continue  # `hearth doctor` and `hearth missions` report a bad mission file
        if mission.get("timer") == "systemd" and isinstance(mission.get("schedule"), str):
            found[path.stem] = mission["schedule"]
    return found


def _credential_files(root: Path, only: tuple[str, ...] | None = None) -> dict[str, str]:
    """The files in /etc/hearth/credentials (those named in `only`), each name to its path."""
    where = root / CREDENTIALS.lstrip("/")
    names = sorted(p.name for p in where.iterdir() if p.is_file()) if where.is_dir() else []
    return {n: f"{CREDENTIALS}/{n}" for n in names if only is None or n in only}


def _run_credentials(root: Path, users: dict[str, Any]) -> dict[str, str]:
    """A run's LoadCredential=: every credential file but what is the doors' (the command center's
    tokens, the channels' secrets, the declared users' tokens and keys)."""
    _, theirs = declaration(users)
    doors = {"operator-token", "viewer-token", *CHANNEL_SECRETS}
    return {n: p for n, p in _credential_files(root).items() if n not in doors and p not in theirs.values()}


def _check_users(root: Path, path: Path, users: Any) -> None:
    """install.toml's [users] read as `hearth users apply` will read it, secrets' files included
    (below `root`): a bad one stops the install before anything is written."""
    from hearth.users.declared import parse

    try:
        parse(users, path, None, root)
    except ConfigError as exc:
        raise InstallError(str(exc)) from None


def _tmpfiles_steps(lines: list[str]) -> list[Step]:
    steps: list[Step] = []
    for line in lines:
        kind, path, mode, user, group = line.split()[:5]
        if kind == "d":
            steps.append(Directory(path, int(mode, 8), user, group))
        elif kind == "f":  # an empty SQLite file is an empty database; its mode is what matters
            steps.append(File(path, "", int(mode, 8), user, group, keep=True))
    return steps


def steps(config: InstallConfig) -> list[Step]:
    """Everything an install makes, in the order it must be made."""
    data = load()
    renderer = Renderer(config, data)
    units = renderer.units()
    tmpfiles = renderer.fill(data["tmpfiles"]["rules"])
    found: list[Step] = [
        Account("hearth", "group"),
        Account("hearth-submit", "group"),
        Account("hearth", "user", home=config.state_dir, groups=("hearth", "hearth-submit")),
        Directory(CONFIG_DIR, 0o755),
        Directory(f"{CONFIG_DIR}/missions", 0o755),
        Directory(CREDENTIALS, 0o700),
        *_tmpfiles_steps(tmpfiles),
        File(TMPFILES, HEADER + "\n".join(tmpfiles) + "\n"),
        File(
            POLKIT, "// " + HEADER.removeprefix("# ") + renderer.fill(data["polkit"]["rule"], stop=_stop(config, data))
        ),
    ]
    if config.web and config.operator_token_file:
        found.append(File(config.operator_token_file, secrets.token_urlsafe(32) + "\n", 0o600, keep=True, secret=True))
    if config.users:
        found.append(File(USERS_FILE, json.dumps(declaration(config.users)[0], indent=2) + "\n"))
    if config.schedules:
        found.append(Directory(config.script_dir, 0o755))
    for name in sorted(config.schedules):
        script = "#!/bin/sh\nset -e\n" + renderer.schedule_script(name)
        found.append(File(f"{config.script_dir}/hearth-schedule-{name}", script, 0o755))
    found += [File(f"{UNIT_DIR}/{u.name}", HEADER + u.text()) for u in units]
    found += [Link(f"{UNIT_DIR}/{t}.wants/{u.name}", f"{UNIT_DIR}/{u.name}") for u in units for t in u.wanted_by]
    return found


def _stop(config: InstallConfig, data: dict[str, Any]) -> str:
    return str(data["polkit"]["stop"]) if config.web or config.channels else ""


def enabled(units: list[Unit]) -> list[str]:
    """The units an install starts: those with an [Install] section (the path unit, timers, the web)."""
    return [u.name for u in units if u.wanted_by]
