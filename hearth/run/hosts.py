"""The Ollama hosts a run may use: router.toml's `[[host]]` tables, else HEARTH_OLLAMA_HOSTS, else
the one OLLAMA_HOST (today's single box, which nothing here changes).

    [[host]]
    url = "http://10.0.0.5:11434"    required
    label = "gpu1"                   optional: a router rule's `host` pins a run to it
    weight = 2.0                     optional: a host of weight 2 is given twice the load

HEARTH_OLLAMA_HOSTS is the same list in one line, `label=url` or `url`, comma-separated (a weight
needs the TOML). With several hosts, what is pulled is what any host that is up has pulled, and a
run's model client is a HostPool (agent/model/hosts.py) over them, which records its choice and any
switch as `host` steps and the host of every turn on its `model` step.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agent.model.hosts import Host, HostPool, HostView, choice_line, pulled_anywhere, survey
from agent.model.ollama_client import OllamaClient, probe
from hearth.errors import ConfigError
from hearth.settings import Settings
from hearth.tomlcheck import known_table, read_toml

HOST_KEYS = ("url", "label", "weight")
SURVEY_S = 1.5


def configured(settings: Settings) -> tuple[Host, ...]:
    """The hosts the operator named; empty means the single OLLAMA_HOST. ConfigError names the file and key."""
    path = settings.config_dir / "router.toml"
    raw = read_toml(path).get("host", [])
    if not isinstance(raw, list):
        raise ConfigError(f"{path}: host must be a list of tables ([[host]])")
    hosts = tuple(_host(path, i, entry) for i, entry in enumerate(raw)) or _from_env(settings.ollama_hosts)
    labels = [h.label for h in hosts if h.label]
    twice = next((label for label in labels if labels.count(label) > 1), None)
    if twice:
        raise ConfigError(f"{path}: two hosts are labelled {twice!r}; give each its own label")
    return hosts


def _host(path: Path, index: int, entry: Any) -> Host:
    where = f"host[{index}]"
    entry = known_table(path, where, entry, HOST_KEYS)
    url, label, weight = entry.get("url"), entry.get("label", ""), entry.get("weight", 1.0)
    if not (isinstance(url, str) and url.strip()):
        raise ConfigError(f'{path}: {where} names no url; add url = "http://HOST:11434"')
    if not isinstance(label, str):
        raise ConfigError(f"{path}: {where}.label must be a string, got {label!r}")
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not math.isfinite(weight) or weight <= 0:
        raise ConfigError(f"{path}: {where}.weight must be a number above 0, got {weight!r}")
    return Host(url.strip(), label.strip(), float(weight))


def _from_env(line: str) -> tuple[Host, ...]:
    hosts = []
    for item in (part.strip() for part in line.split(",")):
        if not item:
            continue
        label, _, url = item.rpartition("=") if "=" in item.split("://", 1)[0] else ("", "", item)
        hosts.append(Host(url.strip(), label.strip()))
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
        return probe(settings.ollama_host, timeout_s=timeout_s)
    views = _surveyed(hosts, timeout_s)
    return pulled_anywhere(views) if any(v.up for v in views) else None


def pool(
    model: str,
    settings: Settings,
    make: Callable[[str], OllamaClient],
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
