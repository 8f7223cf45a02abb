"""Several Ollama hosts behind one model: which host has the model, which is loaded, which is up.

A box that outgrows one GPU adds a second Ollama host; the conversation lives in hearth, so any
host that has the model can answer the next turn. This module reads each host's `/api/tags`
(what it has pulled) and `/api/ps` (what it has loaded, with the memory it holds), ranks the hosts
for a model (up, has it, loaded there first, then the least memory in use for its weight), and
`HostPool` is a ChatModel that sends each turn to the best host and, when that host fails
(refused, reset, 5xx, timeout: what OllamaClient gives up on as ModelUnavailable), marks it down
and sends the same turn to the next host that has the model. Only when no host is left does the
turn fail, with one line naming every host tried.

`survey` asks every host at once (a thread each), so a dead host costs the timeout once, not per
host.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from agent.model.ollama_client import ChatReply, ModelUnavailable, OllamaClient, _tls, normalize_host


@dataclass(frozen=True)
class Host:
    """One Ollama server as the operator named it."""

    url: str
    label: str = ""
    weight: float = 1.0

    @property
    def name(self) -> str:
        return self.label or normalize_host(self.url).split("://", 1)[1]


@dataclass(frozen=True)
class HostView:
    """What one host said when it was last asked: its models, what is loaded, and the memory held."""

    host: Host
    up: bool
    models: tuple[str, ...] = ()
    loaded: tuple[str, ...] = ()
    vram: int = 0  # bytes the loaded models hold (size_vram, else size)
    why: str = ""  # why it is down

    def has(self, model: str) -> bool:
        return _match(model, self.models) is not None

    def has_loaded(self, model: str) -> bool:
        return _match(model, self.loaded) is not None


def _match(model: str, names: Sequence[str]) -> str | None:
    """`qwen2.5` matches `qwen2.5:latest`; a name with a tag matches only itself."""
    if model in names:
        return model
    if ":" not in model:
        return next((n for n in names if n == f"{model}:latest"), None)
    return None


def look(host: Host, timeout_s: float = 1.5) -> HostView:
    """Ask one host for its tags and its loaded models; a host that does not answer both is down."""
    base = normalize_host(host.url)
    verify: ssl.SSLContext | bool = _tls() if base.startswith("https://") else False
    try:
        with httpx.Client(timeout=timeout_s, verify=verify) as http:
            tags = _models(http.get(f"{base}/api/tags"), "tags")
            ps = _models(http.get(f"{base}/api/ps"), "ps")
    except (httpx.HTTPError, OSError, ValueError) as exc:
        return HostView(host, up=False, why=_why(exc, base))
    names = tuple(str(m["name"]) for m in tags if m.get("name"))
    loaded = tuple(str(m.get("name") or m.get("model")) for m in ps if m.get("name") or m.get("model"))
    vram = sum(_size(m) for m in ps)
    return HostView(host, up=True, models=names, loaded=loaded, vram=vram)


def _models(response: httpx.Response, what: str) -> list[dict[str, Any]]:
    if response.status_code != 200:
        raise ValueError(f"/api/{what} answered HTTP {response.status_code}")
    models = response.json().get("models")
    if not isinstance(models, list):
        raise ValueError(f"/api/{what} has no list of models")
    return [m for m in models if isinstance(m, dict)]


def _size(model: dict[str, Any]) -> int:
    value = model.get("size_vram") or model.get("size") or 0
    return value if isinstance(value, int) and value >= 0 else 0


def _why(exc: BaseException, base: str) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if "refused" in text.lower():
        text = "connection refused"
    return f"{base}: {text[:160]}"


def survey(hosts: Sequence[Host], timeout_s: float = 1.5) -> list[HostView]:
    """Every host's view, asked at once; in the operator's order."""
    if not hosts:
        return []
    with ThreadPoolExecutor(max_workers=min(8, len(hosts))) as pool:
        return list(pool.map(lambda h: look(h, timeout_s), hosts))


def rank(views: Sequence[HostView], model: str, label: str = "") -> list[HostView]:
    """The hosts that can serve `model`, best first: up, has it, (the pinned label,) loaded there,
    then the least memory in use for its weight, then the operator's order."""
    able = [v for v in views if v.up and v.has(model) and (not label or v.host.label == label)]
    order = {id(v): i for i, v in enumerate(views)}
    return sorted(able, key=lambda v: (not v.has_loaded(model), v.vram / max(v.host.weight, 1e-9), order[id(v)]))


def pulled_anywhere(views: Sequence[HostView]) -> list[str]:
    """The models at least one host that is up has pulled, for routing as one server's tags are."""
    seen: dict[str, None] = {}
    for view in views:
        if view.up:
            seen.update(dict.fromkeys(view.models))
    return list(seen)


def choice_line(views: Sequence[HostView], model: str, label: str = "") -> str:
    """Why this host: one line for the run's `model` step."""
    ranked = rank(views, model, label)
    if not ranked:
        return no_host_line(views, model, label)
    best = ranked[0]
    how = "loaded there" if best.has_loaded(model) else f"{best.vram / 2**30:.1f} GiB in use there"
    pinned = f", pinned to {label}" if label else ""
    return f"model {model} on host {best.host.name} ({how}{pinned}; {len(ranked)} of {len(views)} hosts have it)"


def no_host_line(views: Sequence[HostView], model: str, label: str = "") -> str:
    where = f" labelled {label}" if label else ""
    said = "; ".join(f"{v.host.name}: {'has no ' + model if v.up else 'down (' + v.why + ')'}" for v in views)
    return f"no Ollama host{where} that is up has model {model} ({said}); pull it on one: ollama pull {model}"


@dataclass
class HostPool:
    """A ChatModel over several hosts: each turn goes to the best host; a failed host is marked
    down and the same turn goes to the next one that has the model (its prompt cache starts cold,
    which `on_switch` says). `client_for(url)` makes the OllamaClient of one host (the run's options,
    num_ctx, timeouts and callbacks); clients are made on first use and kept."""

    model: str
    views: list[HostView]
    client_for: Callable[[str], OllamaClient]
    label: str = ""
    on_switch: Callable[[str], None] | None = None
    refresh: Callable[[], list[HostView]] | None = None  # asked again when a host fails
    _clients: dict[str, OllamaClient] = field(default_factory=dict)
    _current: HostView | None = None
    _failed: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        ranked = rank(self.views, self.model, self.label)
        self._current = ranked[0] if ranked else None  # none: the first turn fails, saying why

    @property
    def host(self) -> str:
        return self._current.host.name if self._current else ""

    @property
    def tools_supported(self) -> bool:
        return all(c.tools_supported for c in self._clients.values())

    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        tried: list[str] = []
        if self._current is None:
            raise ModelUnavailable(no_host_line(self.views, self.model, self.label))
        while self._current is not None:
            view = self._current
            try:
                reply = self._client(view).chat(messages, tools)
            except ModelUnavailable as exc:
                tried.append(f"{view.host.name}: {exc}")
                self._down(view, str(exc))
                continue
            reply.host = view.host.name
            return reply
        raise ModelUnavailable(f"every Ollama host with model {self.model} failed this turn: " + " | ".join(tried))

    def _down(self, view: HostView, why: str) -> None:
        """Mark the failed host down and look again at the others (one may have come back, or
        loaded the model since the run began); the failed one stays down for the rest of the run."""
        self._failed.add(view.host.url)
        fresh = self.refresh() if self.refresh else self.views
        self.views = [replace(v, up=False, why=why) if v.host.url in self._failed else v for v in fresh]
        ranked = rank(self.views, self.model, self.label)
        self._current = ranked[0] if ranked else None
        if self._current is not None and self.on_switch:
            self.on_switch(
                f"host {view.host.name} failed ({why}); the same turn goes to host {self._current.host.name}, "
                "whose prompt cache starts cold"
            )

    def _client(self, view: HostView) -> OllamaClient:
        url = view.host.url
        if url not in self._clients:
            self._clients[url] = self.client_for(url)
        return self._clients[url]

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
