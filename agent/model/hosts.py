"""Several model hosts behind one model: which host has the model, which is loaded, which is up.

A box that outgrows one GPU adds a second host (Ollama, or any OpenAI-compatible server: a host
says its kind, agent/model/host.py); the conversation lives in hearth, so any host that has the
model can answer the next turn. This module asks each host what it has and what it holds loaded
(through its backend, agent/model/backends.py), ranks the hosts for a model (up, has it, loaded
there first, then the least memory in use for its weight), and `HostPool` is a ChatModel that
sends each turn to the best host and, when that host fails (refused, reset, 5xx, timeout: what a
client gives up on as ModelUnavailable), marks it down and sends the same turn to the next host
that has the model. Only when no host is left does the turn fail, with one line naming every host
tried.

`survey` asks every host at once (a thread each), so a dead host costs the timeout once, not per
host.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from agent.model.backends import ChatClient, look
from agent.model.host import Host, HostView
from agent.model.reply import ChatReply, ModelUnavailable

__all__ = ["Host", "HostPool", "HostView", "choice_line", "no_host_line", "pulled_anywhere", "rank", "survey"]


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
    fix = f"pull it on one: ollama pull {model}" if any(v.host.kind == "ollama" for v in views) else "serve it on one"
    return f"no model host{where} that is up has model {model} ({said}); {fix}"


@dataclass
class HostPool:
    """A ChatModel over several hosts: each turn goes to the best host; a failed host is marked
    down and the same turn goes to the next one that has the model (its prompt cache starts cold,
    which `on_switch` says). `client_for(host)` makes the client of one host, of its kind (the run's
    options, num_ctx, timeouts and callbacks); clients are made on first use and kept."""

    model: str
    views: list[HostView]
    client_for: Callable[[Host], ChatClient]
    label: str = ""
    on_switch: Callable[[str], None] | None = None
    refresh: Callable[[], list[HostView]] | None = None  # asked again when a host fails
    _clients: dict[str, ChatClient] = field(default_factory=dict)
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

    def chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], schema: dict[str, Any] | None = None
    ) -> ChatReply:
        tried: list[str] = []
        if self._current is None:
            raise ModelUnavailable(no_host_line(self.views, self.model, self.label))
        while self._current is not None:
            view = self._current
            try:
                reply = self._client(view).chat(messages, tools, schema)
            except ModelUnavailable as exc:
                tried.append(f"{view.host.name}: {exc}")
                self._down(view, str(exc))
                continue
            reply.host = view.host.name
            return reply
        raise ModelUnavailable(f"every host with model {self.model} failed this turn: " + " | ".join(tried))

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

    def _client(self, view: HostView) -> ChatClient:
        url = view.host.url
        if url not in self._clients:
            self._clients[url] = self.client_for(view.host)
        return self._clients[url]

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
