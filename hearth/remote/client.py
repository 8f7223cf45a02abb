"""A remote machine's calls to its hub's door (hearth/remote/door.py), with its token.

Where the hub is and who this machine is come from its environment, the same for a fleet's
worker (hearth/fleet/config.py) and a job an engine runs (hearth/remote/job.py):

    HEARTH_FLEET_HUB         the hub's command center URL (http://hub.lan:8770)
    HEARTH_FLEET_NAME        this machine's name, as `hearth fleet add NAME` made its token
    HEARTH_FLEET_TOKEN_FILE  the file holding that token; unset: $CREDENTIALS_DIRECTORY/fleet-token
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from hearth.errors import ConfigError
from hearth.remote import NAME

TIMEOUT_S = 5.0


@dataclass(frozen=True)
class HubAddress:
    hub: str
    name: str
    token: str

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> HubAddress:
        env = os.environ if env is None else env
        hub = env.get("HEARTH_FLEET_HUB", "").strip().rstrip("/")
        if not re.fullmatch(r"https?://[^\s/]+(/[^\s]*)?", hub):
            raise ConfigError(f"HEARTH_FLEET_HUB must be the hub's command center URL (http://hub:8770), got {hub!r}")
        name = env.get("HEARTH_FLEET_NAME", "").strip()
        if not NAME.fullmatch(name):
            raise ConfigError(f"HEARTH_FLEET_NAME must be the worker's name (a-z 0-9 . _ -), got {name!r}")
        return cls(hub, name, secret(env, "HEARTH_FLEET_TOKEN_FILE", "fleet-token", needed=True))


def secret(env: Mapping[str, str], variable: str, credential: str, *, needed: bool) -> str:
    """A secret's text from the file `variable` names, else systemd's credential of that name."""
    path = env.get(variable, "").strip()
    if not path and env.get("CREDENTIALS_DIRECTORY"):
        candidate = Path(env["CREDENTIALS_DIRECTORY"]) / credential
        path = str(candidate) if candidate.exists() else ""
    if not path:
        if needed:
            raise ConfigError(
                f"{variable} is not set (and no {credential} credential was passed): a file with the secret"
            )
        return ""
    try:
        return Path(path).read_text().strip()
    except OSError as exc:
        raise ConfigError(f"{variable}: cannot read {path}: {exc.strerror or exc}") from None


class HubClient:
    def __init__(self, hub: str, token: str) -> None:
        self.base, self.token = hub, token
        self._http: httpx.Client | None = None

    @property
    def http(self) -> httpx.Client:
        """Made at the first call: a run's recorder holds one and most runs never call (making one
        loads the TLS trust store, a tenth of a worker's CPU per run when it was made for each)."""
        if self._http is None:
            headers = {"Authorization": f"Bearer {self.token}"}
            self._http = httpx.Client(headers=headers, timeout=TIMEOUT_S, trust_env=False)
        return self._http

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The hub's status and JSON answer; OSError when it does not answer."""
        return self._call("POST", path, body)

    def get(self, path: str) -> tuple[int, dict[str, Any]]:
        return self._call("GET", path, None)

    def _call(self, method: str, path: str, body: dict[str, Any] | None) -> tuple[int, dict[str, Any]]:
        try:
            response = self.http.request(method, self.base + path, json=body)
        except httpx.HTTPError as exc:
            raise OSError(f"{type(exc).__name__}: {exc}") from None
        try:
            answer = response.json()
        except ValueError:
            answer = {"error": response.text[:200]}
        return response.status_code, answer if isinstance(answer, dict) else {"error": "not a JSON object"}

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
