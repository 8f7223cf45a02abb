"""Credentials used by name: where values live, where each may be sent, and which runs may use them.

- Values come from systemd's `$CREDENTIALS_DIRECTORY` (`LoadCredential=NAME:...`) when it holds a
  file of that name, else from the store `<state_dir>/credentials.json` (mode 0600; a store with
  looser permissions is refused, not used).
- Each credential is bound to host patterns (`api.github.com`, `*.example.com`) kept in the store,
  also for values that systemd provides (`hearth creds set NAME --host H --systemd`).
- A run lists the names it may use. The engine gets only `RunCredentials`, a callback
  `(name, host) -> value` that refuses odd names, unlisted or unknown names, other hosts and empty
  values with one clear line (never an empty value), and adds each value to the run's redactor.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from agent.clock import utc_now
from agent.net.guard import CredentialRefused, NetRefused, matching, normalize_pattern
from agent.safety.redaction import Redactor
from hearth.atomic import write_atomic
from hearth.errors import ConfigError, NotFound, UsageError

NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")
MIN_VALUE_CHARS = 8  # shorter values cannot be redacted without mangling ordinary text
MAX_VALUE_CHARS = 16_384


def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME.match(name):
        raise CredentialRefused(
            f"credential name {str(name)[:80]!r} is not valid: use letters, digits, "
            "'_', '-' and '.', starting with a letter, at most 64 characters"
        )
    return name


def usage_name(name: str) -> str:
    """check_name for the operator's commands: a usage error rather than a refusal."""
    try:
        return check_name(name)
    except CredentialRefused as exc:
        raise UsageError(str(exc)) from None


def check_hosts(hosts: Iterable[str]) -> list[str]:
    try:
        patterns = [normalize_pattern(h) for h in hosts]
    except NetRefused as exc:
        raise UsageError(str(exc)) from None
    if not patterns:
        raise UsageError("a credential needs at least one --host it may be sent to")
    return sorted(set(patterns))


class CredentialStore:
    """The store file plus the optional systemd credentials directory; see the module docstring."""

    def __init__(self, path: Path, credentials_dir: Path | None = None) -> None:
        self.path = path
        self.credentials_dir = credentials_dir

    def load(self) -> dict[str, dict[str, Any]]:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise ConfigError(f"cannot read the credential store {self.path}: {exc.strerror}") from None
        with os.fdopen(fd, "rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            if stat.S_IMODE(mode) & 0o077:
                raise ConfigError(
                    f"the credential store {self.path} is readable by others "
                    f"(mode {stat.S_IMODE(mode):04o}); run: chmod 600 {self.path}"
                )
            try:
                data = json.loads(handle.read())
            except ValueError:
                raise ConfigError(f"the credential store {self.path} is not valid JSON; fix or remove it") from None
        return data if isinstance(data, dict) else {}

    def _save(self, data: dict[str, dict[str, Any]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, json.dumps(data, indent=2, sort_keys=True).encode())  # mkstemp: 0600
        os.chmod(self.path, 0o600)

    def set(self, name: str, hosts: Iterable[str], value: str | None) -> None:
        """Bind name to hosts; value None means systemd provides it (and the stored one goes)."""
        usage_name(name)
        entry: dict[str, Any] = {"hosts": check_hosts(hosts), "updated_at": utc_now()}
        if value is not None:
            entry["value"] = check_value(name, value)
        data = self.load()
        data[name] = entry
        self._save(data)

    def remove(self, name: str) -> None:
        usage_name(name)
        data = self.load()
        if name not in data:
            raise NotFound(f"no credential named {name!r}; see: hearth creds list")
        del data[name]
        self._save(data)

    def entries(self) -> list[dict[str, Any]]:
        """Name, hosts, where the value comes from, when it was set: never the value."""
        data = self.load()
        names = sorted(set(data) | set(self._systemd_names()))
        return [
            {
                "name": n,
                "hosts": data.get(n, {}).get("hosts", []),
                "source": self._source(n, data),
                "updated_at": data.get(n, {}).get("updated_at", ""),
            }
            for n in names
        ]

    def _source(self, name: str, data: dict[str, dict[str, Any]]) -> str:
        if self._systemd_value(name) is not None:
            return "systemd" if name in data else "systemd (not bound to any host: unusable)"
        return "store" if data.get(name, {}).get("value") else "missing value"

    def value(self, name: str, data: dict[str, dict[str, Any]] | None = None) -> str | None:
        systemd = self._systemd_value(name)
        if systemd is not None:
            return systemd
        return (data if data is not None else self.load()).get(name, {}).get("value") or None

    def values(self) -> dict[str, str]:
        """Every value hearth could hand out, for the redactor."""
        data = self.load()
        names = set(data) | set(self._systemd_names())
        return {n: v for n in names if (v := self.value(n, data))}

    def bindings(self) -> list[tuple[str, str, list[str]]]:
        """(name, value, host patterns) of every value hearth could hand out, for the network guard."""
        data = self.load()
        names = set(data) | set(self._systemd_names())
        return [(n, v, list(data.get(n, {}).get("hosts", []))) for n in sorted(names) if (v := self.value(n, data))]

    def _systemd_names(self) -> list[str]:
        if not self.credentials_dir or not self.credentials_dir.is_dir():
            return []
        return [p.name for p in self.credentials_dir.iterdir() if NAME.match(p.name) and p.is_file()]

    def _systemd_value(self, name: str) -> str | None:
        if not self.credentials_dir or not NAME.match(name):
            return None
        try:
            text = (self.credentials_dir / name).read_text(encoding="utf-8")
        except (FileNotFoundError, IsADirectoryError, UnicodeDecodeError):
            return None
        return text.removesuffix("\n") or None


def check_value(name: str, value: str) -> str:
    value = value.removesuffix("\n").removesuffix("\r")
    if len(value) < MIN_VALUE_CHARS:
        raise UsageError(
            f"the value of {name} is {len(value)} characters; at least {MIN_VALUE_CHARS} are "
            "needed so it can be redacted reliably"
        )
    if len(value) > MAX_VALUE_CHARS or any(c in value for c in "\r\n\0"):
        raise UsageError(f"the value of {name} must be one line of at most {MAX_VALUE_CHARS} characters")
    return value


def check_run_credentials(names: Iterable[str], store: CredentialStore) -> None:
    """At run start: every listed name is valid, known and bound; UsageError (the run is rejected) if not."""
    data = store.load()
    for name in names:
        usage_name(name)
        if name not in data:
            raise UsageError(
                f"credential {name!r} listed for this run is not set; "
                f"an operator adds it with: hearth creds set {name} --host HOST"
            )


class RunCredentials:
    """The engine's only way to a value: `(name, host) -> value`, or CredentialRefused.

    Every answer, a value handed out or a refusal, is passed to `record` (the run's audit) with
    the name and the host, never the value."""

    def __init__(
        self,
        store: CredentialStore,
        allowed: Iterable[str],
        redactor: Redactor,
        record: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> None:
        self.store = store
        self.allowed = tuple(allowed)
        self.redactor = redactor
        self.record = record

    def __call__(self, name: str, host: str) -> str:
        try:
            value = self._value(name, host)
        except CredentialRefused as refused:
            self._note(name, host, "refused", str(refused))
            raise
        self._note(name, host, "used", "")
        return value

    def _note(self, name: str, host: str, verdict: str, reason: str) -> None:
        if self.record is not None:
            self.record("credential", {"name": str(name)[:64], "host": host, "verdict": verdict, "reason": reason})

    def _value(self, name: str, host: str) -> str:
        check_name(name)
        if name not in self.allowed:
            listed = ", ".join(self.allowed) or "none"
            raise CredentialRefused(f"credential {name!r} is not listed for this run (listed: {listed})")
        data = self.store.load()
        if name not in data:
            raise CredentialRefused(
                f"credential {name!r} is unknown; an operator adds it with: hearth creds set {name} --host HOST"
            )
        hosts = data[name].get("hosts", [])
        if not matching(host, hosts):
            raise CredentialRefused(
                f"credential {name!r} may not be sent to {host}; it is bound to {', '.join(hosts) or 'no host'}"
            )
        value = self.store.value(name, data)
        if value is None:
            raise CredentialRefused(
                f"credential {name!r} has no value here (neither $CREDENTIALS_DIRECTORY nor the store has one)"
            )
        self.redactor.add(name, value)
        return value
