"""The model hosts a run may use: router.toml's `[[host]]` tables, else HEARTH_MODEL_HOSTS, else the one
HEARTH_MODEL_HOST (or OLLAMA_HOST: today's single box, which nothing here changes).

    [[host]]
    url = "http://10.0.0.5:11434"    required
    kind = "openai"                  optional: ollama (the default) or openai, any server speaking
                                     /v1/chat/completions (llama.cpp, vLLM, LM Studio, LocalAI, SGLang)
    label = "gpu1"                   optional: a router rule's `host` pins a run to it
    weight = 2.0                     optional: a host of weight 2 is given twice the load
    timeout_s = 900                  optional: how long to wait for it to begin answering, then for
                                     each chunk (default HEARTH_MODEL_TIMEOUT_S, 600)
    api_key = "cred:vllm"            optional: a credential sent as its bearer token (never shown)

HEARTH_MODEL_HOSTS is the same list in one line, `label=[KIND+]url` or `[KIND+]url`, comma-separated
(a weight, a timeout or a key needs the TOML). With several hosts, what is pulled is what any host
that is up has, and a run's model client is a HostPool (agent/model/hosts.py) over them, which
records its choice and any switch as `host` steps and the host of every turn on its `model` step.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agent.model.backends import ChatClient, probe
from agent.model.host import KINDS, Host, HostView, parse_host
from agent.model.hosts import HostPool, choice_line, pulled_anywhere, survey
from hearth.errors import ConfigError
from hearth.settings import Settings
from hearth.tomlcheck import known_table, read_toml

HOST_KEYS = ("url", "kind", "label", "weight", "timeout_s", "api_key")
SURVEY_S = 1.5
KeyOf = Callable[[str, str], str]  # (a credential's name, the host it goes to) -> its value; ConfigError why not


def configured(settings: Settings) -> tuple[Host, ...]:
    """The hosts the operator named; empty means the single model host. ConfigError names the file and key."""
    path = settings.config_dir / "router.toml"
    raw = read_toml(path).get("host", [])
    if not isinstance(raw, list):
        raise ConfigError(f"{path}: host must be a list of tables ([[host]])")
    key_of = _credentials(settings)
    hosts = tuple(_host(path, i, entry, key_of) for i, entry in enumerate(raw)) or _from_env(settings.model_hosts)
    labels = [h.label for h in hosts if h.label]
    twice = next((label for label in labels if labels.count(label) > 1), None)
    if twice:
        raise ConfigError(f"{path}: two hosts are labelled {twice!r}; give each its own label")
    return hosts


def _host(path: Path, index: int, entry: Any, key_of: KeyOf) -> Host:
    where = f"host[{index}]"
    entry = known_table(path, where, entry, HOST_KEYS)
    url, label, kind = entry.get("url"), entry.get("label", ""), entry.get("kind", "ollama")
    if not (isinstance(url, str) and url.strip()):
        raise ConfigError(f'{path}: {where} names no url; add url = "http://HOST:11434"')
    if not isinstance(label, str):
        raise ConfigError(f"{path}: {where}.label must be a string, got {label!r}")
    if kind not in KINDS:
        raise ConfigError(f"{path}: {where}.kind must be one of {', '.join(KINDS)}, got {kind!r}")
    weight = _positive(path, f"{where}.weight", entry.get("weight", 1.0))
    timeout = _positive(path, f"{where}.timeout_s", entry["timeout_s"]) if "timeout_s" in entry else None
    host = Host(url.strip(), label.strip(), weight, kind, timeout)
    return replace(host, api_key=_key(path, f"{where}.api_key", entry.get("api_key", ""), key_of, host))


def _credentials(settings: Settings) -> KeyOf:
    """A host's key, as any credential: only to the hosts it is bound to (`hearth creds set NAME --host H`)."""

    def value(name: str, host: str) -> str:
        from agent.net.guard import matching
        from hearth.credentials import CredentialStore

        store = CredentialStore(settings.credentials_path, settings.credentials_dir)
        data = store.load()
        bound = data.get(name, {}).get("hosts", [])
        found = store.value(name, data)
        if found is None:
            raise ConfigError(f"credential {name!r} has no value here; add it: hearth creds set {name} --host {host}")
        if not matching(host, bound):
            raise ConfigError(
                f"credential {name!r} may not be sent to {host}; it is bound to {', '.join(bound) or 'no host'}"
            )
        return found

    return value


def single(settings: Settings) -> Host:
    """The one model host when none are named (HEARTH_MODEL_HOST, else OLLAMA_HOST)."""
    return parse_host(settings.model_host)


def _positive(path: Path, where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{path}: {where} must be a number above 0, got {value!r}")
    return float(value)


def _key(path: Path, where: str, value: Any, key_of: KeyOf, host: Host) -> str:
    """A host's key is a credential's name (`cred:NAME`), never the key itself in a config file."""
    if value == "":
        return ""
    if not isinstance(value, str) or not value.startswith("cred:") or len(value) <= len("cred:"):
        raise ConfigError(f'{path}: {where} must name a credential, as api_key = "cred:NAME" (hearth creds set NAME)')
    hostname = urlsplit(host.base).hostname or ""
    try:
        return key_of(value[len("cred:") :], hostname)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {where}: {exc}") from None


def _from_env(line: str) -> tuple[Host, ...]:
    hosts = []
    for item in (part.strip() for part in line.split(",")):
        if not item:
            continue
        label, _, url = item.rpartition("=") if "=" in item.split("://", 1)[0] else ("", "", item)
        try:
            hosts.append(parse_host(url.strip(), label.strip()))
        except ValueError as exc:
            raise ConfigError(f"HEARTH_MODEL_HOSTS: {exc}") from None
    return tuple(hosts)


def _named(settings: Settings) -> tuple[Host, ...]:
    """The configured hosts for a run; a broken file is doctor's to report, and a run goes on with
    the one OLLAMA_HOST (none named)."""
    try:
        return configured(settings)
    except ConfigError:
        return ()


# A run asks its hosts once as it starts: the router's choice of a model and the pool that runs it
# read the same survey when it is this fresh. A pool's refresh after a failure always asks again.
FRESH_S = 3.0
_recent: dict[tuple[Host, ...], tuple[float, list[HostView]]] = {}


def _surveyed(hosts: Sequence[Host], timeout_s: float) -> list[HostView]:
    key, now = tuple(hosts), time.monotonic()
    kept = _recent.get(key)
    if kept is not None and now - kept[0] < FRESH_S:
        return kept[1]
    views = survey(hosts, timeout_s)
    _recent[key] = (time.monotonic(), views)  # from when it answered: a dead host takes its timeout
    return views


def pulled(settings: Settings, timeout_s: float) -> list[str] | None:
    """What the run's model may be chosen from: one host's tags, or the union of every host up."""
    hosts = _named(settings)
    if not hosts:
        return probe(settings.model_host, timeout_s=timeout_s)
    views = _surveyed(hosts, timeout_s)
    return pulled_anywhere(views) if any(v.up for v in views) else None


def pool(
    model: str,
    settings: Settings,
    make: Callable[[Host], ChatClient],
    label: str = "",
    note: Callable[[str], None] | None = None,
) -> HostPool | None:
    """A HostPool over the configured hosts (None when there is one host), its choice noted."""
    hosts = _named(settings)
    if not hosts:
        return None
    views: list[HostView] = list(_surveyed(hosts, SURVEY_S))  # routing asked them a moment ago
    if note is not None:
        note(choice_line(views, model, label))
    again = lambda: survey(hosts, SURVEY_S)  # noqa: E731
    return HostPool(model, views, make, label=label, on_switch=note, refresh=again)
