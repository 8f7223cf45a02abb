"""A declaration of users (`hearth users apply FILE`): what NixOS' `services.hearth.users` and
install.toml's `[users]` say, read and checked whole before anything is changed.

    [users.ada]                          # one table per user (TOML; a .json file holds the same)
    role = "operator"                    # owner, operator or viewer
    default_profile = "builder"          # the profile her chats run under (default "default")
    disabled = false
    memberships = { builder = ["launch", "approve"], "*" = ["approve"] }   # an operator's rights
    token_files = ["user-ada-token-1"]   # sign-in tokens: a credential's name, or a file's path
    telegram = ["123456789"]             # her chat identities
    email = ["ada@example.org"]
    [users.ada.keys.laptop]              # a /v1 key: its secret's file, as token_files
    file = "/etc/hearth/credentials/ada-laptop"
    agents = ["builder"]                 # profiles it may use (none: any); budget, rate as `hearth keys add`

A secret is named by a path, or by a systemd credential's name (no slash): the file in
$CREDENTIALS_DIRECTORY, where hearth-users.service's LoadCredential= puts it; only its SHA-256 is
kept. A bad declaration is one ConfigError naming the file, the user and the key.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hearth.audit.keys import NAME as KEY_NAME
from hearth.audit.keys import RESERVED
from hearth.errors import ConfigError, HearthError
from hearth.tomlcheck import known_table, read_toml
from hearth.users.access import RIGHTS, ROLES, digest
from hearth.users.roster import NAME, PROFILE, checked_address

USER_KEYS = ("role", "default_profile", "disabled", "memberships", "token_files", "keys", "telegram", "email")
KEY_KEYS = ("file", "agents", "budget", "rate")
IDENTITIES = ("telegram", "email")
Bad = Callable[[str, str], ConfigError]  # (key, what is wrong) -> the error naming file, user and key
Reader = Callable[[Bad], Callable[[str, str], str]]  # -> (key, a secret's path or name) -> its SHA-256


@dataclass(frozen=True)
class DeclaredKey:
    name: str
    digest: str
    agents: tuple[str, ...] = ()
    budget: int = 0
    rate: int = 0


@dataclass(frozen=True)
class Declared:
    """One user as declared; secrets only as their SHA-256."""

    name: str
    role: str
    default_profile: str = "default"
    disabled: bool = False
    rights: frozenset[tuple[str, str]] = frozenset()  # (profile, right)
    tokens: frozenset[str] = frozenset()  # digests
    keys: tuple[DeclaredKey, ...] = ()
    identities: frozenset[tuple[str, str]] = frozenset()  # (channel, address)


def read(path: Path, credentials: Path | None = None) -> list[Declared]:
    """Every user `path` declares (TOML, or JSON for a .json file); ConfigError for the first thing wrong."""
    data = _load(path)
    known_table(path, "the file", data, ("users",))
    return parse(data.get("users", {}), path, credentials or _credentials_dir())


def parse(table: Any, path: Path, credentials: Path | None, root: Path = Path("/")) -> list[Declared]:
    """The users of a [users] table read from `path`; a secret's path is read below `root` (an
    install into another root file system checks the files it will have)."""
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [users] must be a table of users")
    found = [_user(path, name, raw, _secret_reader(credentials, root)) for name, raw in table.items()]
    _unique(path, found, "identity", lambda u: [f"{c}:{a}" for c, a in u.identities])
    _unique(path, found, "key", lambda u: [k.name for k in u.keys])
    _unique(path, found, "secret", lambda u: [*u.tokens, *(k.digest for k in u.keys)])
    return found


def _load(path: Path) -> dict[str, Any]:
    if path.suffix != ".json":
        if not path.is_file():
            raise ConfigError(f"{path}: no such file")
        return read_toml(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read it as JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must hold an object with a `users` object")
    return data


def _user(path: Path, name: str, raw: Any, reader: Reader) -> Declared:
    where = f"[users.{name}]"
    table = known_table(path, where, raw, USER_KEYS)

    def bad(key: str, what: str) -> ConfigError:
        return ConfigError(f"{path}: {where} {key}: {what}")

    if not NAME.fullmatch(name):
        raise ConfigError(f"{path}: {where}: the name must be 1-32 of a-z 0-9 . _ - starting with a letter")
    role = table.get("role")
    if role not in ROLES:
        raise bad("role", f"{role!r} is not a role; one of {', '.join(ROLES)}")
    profile = table.get("default_profile", "default")
    if not isinstance(profile, str) or profile == "*" or not PROFILE.fullmatch(profile):
        raise bad("default_profile", f"{profile!r} is not a profile name")
    disabled = table.get("disabled", False)
    if not isinstance(disabled, bool):
        raise bad("disabled", "must be true or false")
    rights = _rights(table.get("memberships", {}), role, bad)
    secret = reader(bad)
    tokens = frozenset(secret("token_files", ref) for ref in _strings(table.get("token_files", []), "token_files", bad))
    keys = tuple(_key(k, v, secret, bad) for k, v in _table(table.get("keys", {}), "keys", bad).items())
    identities = frozenset(_identities(table, bad))
    return Declared(name, role, profile, disabled, rights, tokens, keys, identities)


def _table(value: Any, key: str, bad: Bad) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise bad(key, "must be a table")
    return value


def _strings(value: Any, key: str, bad: Bad) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise bad(key, "must be a list of strings")
    return value


def _rights(raw: Any, role: str, bad: Bad) -> frozenset[tuple[str, str]]:
    found = set()
    for profile, rights in _table(raw, "memberships", bad).items():
        if not PROFILE.fullmatch(profile):
            raise bad("memberships", f"{profile!r} is not a profile name (or * for every profile)")
        for right in _strings(rights, f"memberships.{profile}", bad):
            if right not in RIGHTS:
                raise bad(f"memberships.{profile}", f"{right!r} is not a right; one of {', '.join(RIGHTS)}")
            found.add((profile, right))
    if found and role != "operator":
        raise bad("memberships", f"memberships are an operator's; a {role} has none")
    return frozenset(found)


def _identities(table: dict[str, Any], bad: Bad) -> list[tuple[str, str]]:
    found = []
    for channel in IDENTITIES:
        raw = table.get(channel, [])
        values = (
            [str(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in raw]
            if isinstance(raw, list)
            else raw
        )
        for value in _strings(values, channel, bad):
            try:
                found.append((channel, checked_address(channel, value)))
            except HearthError as exc:
                raise bad(channel, str(exc)) from None
    return found


def _key(name: str, raw: Any, secret: Callable[[str, str], str], bad: Bad) -> DeclaredKey:
    key = f"keys.{name}"
    table = _table(raw, key, bad)
    if unknown := sorted(set(table) - set(KEY_KEYS)):
        raise bad(key, f"unknown key {unknown[0]!r}; the keys are {', '.join(KEY_KEYS)}")
    if not KEY_NAME.fullmatch(name) or name == RESERVED:
        raise bad(key, "a key's name is 1-64 of A-Z a-z 0-9 . _ - (and not mcp)")
    if "file" not in table or not isinstance(table["file"], str):
        raise bad(f"{key}.file", "the key's secret file (a path, or a credential's name) is required")
    agents = tuple(_strings(table.get("agents", []), f"{key}.agents", bad))
    limits = [table.get(limit, 0) for limit in ("budget", "rate")]
    for limit, value in zip(("budget", "rate"), limits, strict=True):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise bad(f"{key}.{limit}", "must be a whole number, 0 (no limit) or more")
    return DeclaredKey(name, secret(f"{key}.file", table["file"]), agents, limits[0], limits[1])


def _secret_reader(credentials: Path | None, root: Path) -> Reader:
    """For one user's errors (`bad`): what reads a secret's file (a path, or a credential's name)
    and gives its SHA-256."""
    return lambda bad: _secret(credentials, root, bad)


def _secret(credentials: Path | None, root: Path, bad: Bad) -> Callable[[str, str], str]:
    def read_secret(key: str, ref: str) -> str:
        if "/" not in ref and credentials is None:
            raise bad(key, f"{ref!r} is a credential's name, but $CREDENTIALS_DIRECTORY is not set; give a path")
        source = root / ref.lstrip("/") if "/" in ref else credentials / ref  # type: ignore[operator]
        try:
            text = source.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise bad(key, f"cannot read {source}: {getattr(exc, 'strerror', None) or exc}") from None
        if len(text) < 16 or any(c.isspace() for c in text):
            raise bad(key, f"{source} must hold the secret alone: one word of at least 16 characters")
        return digest(text)

    return read_secret


def _unique(path: Path, users: list[Declared], what: str, of: Callable[[Declared], list[str]]) -> None:
    seen: dict[str, str] = {}
    for user in users:
        for value in of(user):
            if value in seen and seen[value] != user.name:
                shown = "the same secret file" if what == "secret" else f"{what} {value}"
                raise ConfigError(f"{path}: [users.{user.name}] and [users.{seen[value]}] both have {shown}")
            seen[value] = user.name


def _credentials_dir() -> Path | None:
    found = os.environ.get("CREDENTIALS_DIRECTORY")
    return Path(found) if found else None
