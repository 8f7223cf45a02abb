"""The fleet's settings, from the environment: the broker both roles use, and a worker's own.

    HEARTH_FLEET_BROKER                the broker's URL without a password (redis://host:6379/0, rediss://...)
    HEARTH_FLEET_BROKER_PASSWORD_FILE  a file holding its password; unset: $CREDENTIALS_DIRECTORY/broker-password
                                       when systemd passed one (LoadCredential=), else none
    HEARTH_FLEET_VISIBILITY_S          how long a request taken by a worker stays its own before the broker
                                       hands it out again (default a day: beyond the longest run)
    HEARTH_FLEET_LOST_S                a hub's: how long a worker may be silent before its runs are lost
                                       (default 30)
    HEARTH_FLEET_HUB                   a worker's hub: its command center's URL (http://hub.lan:8770)
    HEARTH_FLEET_NAME                  a worker's name, as `hearth fleet add NAME` made its token
    HEARTH_FLEET_TOKEN_FILE            the file holding that token; unset: $CREDENTIALS_DIRECTORY/fleet-token
    HEARTH_FLEET_CONCURRENCY           runs at once on a worker (default 2)
    HEARTH_FLEET_SURVEY_S              how often a worker asks its Ollama hosts what they have pulled (30)

A password in HEARTH_FLEET_BROKER is refused: the URL is in units' text, the password only in a file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit, urlunsplit

from hearth.errors import ConfigError
from hearth.remote.client import HubAddress, secret

if TYPE_CHECKING:
    from hearth.remote.hub import Worker

DAY_S = 86_400.0


@dataclass(frozen=True)
class FleetConfig:
    broker: str  # with its password, for Celery only: never printed
    shown_broker: str  # without it, for messages
    visibility_s: float = DAY_S
    hub: str = ""
    name: str = ""
    token: str = ""
    concurrency: int = 2

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, worker: bool = False) -> FleetConfig:
        env = os.environ if env is None else env
        raw = env.get("HEARTH_FLEET_BROKER", "").strip()
        if not raw:
            raise ConfigError("HEARTH_FLEET_BROKER is not set: the broker's URL, e.g. redis://10.0.0.1:6379/0")
        parts = urlsplit(raw)
        if parts.scheme not in ("redis", "rediss") or not parts.hostname:
            raise ConfigError(f"HEARTH_FLEET_BROKER must be redis://HOST:PORT/DB or rediss://..., got {raw!r}")
        if parts.password:
            raise ConfigError(
                "HEARTH_FLEET_BROKER carries a password; put it in a file named by "
                "HEARTH_FLEET_BROKER_PASSWORD_FILE (or the broker-password credential) instead"
            )
        password = secret(env, "HEARTH_FLEET_BROKER_PASSWORD_FILE", "broker-password", needed=False)
        broker = raw
        if password:
            user = quote(parts.username or "", safe="")
            netloc = f"{user}:{quote(password, safe='')}@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
            broker = urlunsplit(parts._replace(netloc=netloc))
        visibility = _number(env, "HEARTH_FLEET_VISIBILITY_S", DAY_S)
        if not worker:
            return cls(broker, raw, visibility)
        address = HubAddress.from_env(env)
        concurrency = int(_number(env, "HEARTH_FLEET_CONCURRENCY", 2))
        return cls(broker, raw, visibility, address.hub, address.name, address.token, max(1, concurrency))


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from None
    if value <= 0:
        raise ConfigError(f"{name} must be more than 0, got {raw!r}")
    return value


def queue_for(model: str | None, label: str | None) -> str:
    """The Celery queue a request goes to: a worker label's, else its model's, else the general one."""
    if label:
        return f"worker.{label}"
    if model and model != "auto":
        return f"model.{model}"
    return "general"


def waits(row: dict[str, Any], workers: Sequence[Worker]) -> str:
    """Why a request sent to the broker has not started: the line `hearth state` and the map show."""
    queue = str(row["queue"])
    if queue.startswith("worker."):
        label = queue.removeprefix("worker.")
        if not any(label == w.name or label in w.labels for w in workers):
            return f"waits for a worker labelled {label}: none answers now"
    elif queue.startswith("model."):
        model = queue.removeprefix("model.")
        if not any(model in w.models or model.split(":")[0] + ":latest" in w.models for w in workers):
            return f"waits for a worker with the model {model}: no worker's Ollama hosts have it pulled"
    elif not workers:
        return "waits for a worker: none answers now"
    return f"waits in the broker's queue {queue} for a free worker"
