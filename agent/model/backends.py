"""The model backends: one Protocol, one table, one resolver (as hearth's launchers are).

    BACKENDS     kind -> backend                     ollama (Ollama's API), openai (/v1/chat/completions)
    backend_for  a kind -> its backend; a miss names the kinds there are

A backend is four methods over a Host (agent/model/host.py): a chat client for one model (what the
loop's `ChatModel` is), what the server has (its models, their windows and capabilities, what is
loaded), embeddings for recall, and a warm-up where the server has one. Nothing above this floor
asks which kind it talks to: the pool, routing, doctor and the model page go through the table.
A new OpenAI-compatible server (vLLM, LM Studio ...) is configuration, not code: `openai+URL`.
"""

from __future__ import annotations

from typing import Any, Protocol

from agent.knowledge.embedding import EmbedFailed, EmbedModelMissing
from agent.model.host import KINDS, ChatOptions, Host, HostView, parse_host
from agent.model.ollama_client import Ollama
from agent.model.openai_client import OpenAI
from agent.model.reply import ChatReply
from agent.model.tags import resolve_tag


class ChatClient(Protocol):
    """A ChatModel that holds a connection: the loop's model, closed by whoever opened it."""

    model: str

    @property
    def tools_supported(self) -> bool: ...

    def chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], schema: dict[str, Any] | None = None
    ) -> ChatReply: ...

    def close(self) -> None: ...


class Backend(Protocol):
    kind: str

    def client(self, host: Host, model: str, options: ChatOptions) -> ChatClient: ...

    def look(self, host: Host, timeout_s: float, *, detail: bool = False) -> HostView: ...

    def embed(self, host: Host, model: str, texts: list[str], timeout_s: float) -> list[list[float]]: ...

    def warm(self, host: Host, model: str, timeout_s: float) -> None: ...


BACKENDS: dict[str, Backend] = {"ollama": Ollama(), "openai": OpenAI()}
assert tuple(BACKENDS) == KINDS, "agent/model/host.py's KINDS names the rows of this table"


def backend_for(kind: str) -> Backend:
    try:
        return BACKENDS[kind]
    except KeyError:
        raise ValueError(f"unknown model server kind {kind!r}; there are: {', '.join(BACKENDS)}") from None


def as_host(host: Host | str | None) -> Host:
    """A Host from a Host or its written form (`[KIND+]URL`)."""
    return host if isinstance(host, Host) else parse_host(host)


def look(host: Host | str | None, timeout_s: float = 1.5, *, detail: bool = False) -> HostView:
    """What one server says of itself, whatever its kind; a server that does not answer is down (`why`)."""
    try:
        found = as_host(host)
    except ValueError as exc:
        return HostView(Host(str(host)), up=False, why=str(exc))
    return backend_for(found.kind).look(found, timeout_s, detail=detail)


def probe(host: Host | str | None, *, timeout_s: float = 1.5) -> list[str] | None:
    """Names of the models a server has, or None when nothing answers there."""
    view = look(host, timeout_s)
    return list(view.models) if view.up else None


def client_for(host: Host | str | None, model: str, options: ChatOptions | None = None) -> ChatClient:
    found = as_host(host)
    return backend_for(found.kind).client(found, model, options or ChatOptions())


class HostEmbedder:
    """Recall's Embedder (agent/knowledge/embedding.py) over one server, whatever its kind. Recall
    never waits for it as a run waits for its model: no retries, the caller's deadline. A name the
    server has under one tag only (`nomic-embed-text`, pulled as `nomic-embed-text:v1.5`) is asked for
    by that tag, as a run's model is resolved (agent/model/tags.py); the knowledge base keeps the name."""

    def __init__(self, host: Host | str | None) -> None:
        self.host = as_host(host)
        self._backend = backend_for(self.host.kind)
        self._tagged: dict[str, str] = {}  # a name -> the tag the server has it by, once a miss asked

    def embed(self, model: str, texts: list[str], *, timeout_s: float) -> list[list[float]]:
        if not texts:
            return []
        asked = self._tagged.get(model, model)
        try:
            return self._backend.embed(self.host, asked, texts, timeout_s)
        except EmbedModelMissing:
            tagged = resolve_tag(model, probe(self.host, timeout_s=min(timeout_s, 2.0)) or [])
            if tagged is None or tagged == asked:
                raise
            self._tagged[model] = tagged
            return self._backend.embed(self.host, tagged, texts, timeout_s)

    def close(self) -> None:
        """Nothing held between calls: each embeds over a connection of its own."""


__all__ = ["BACKENDS", "Backend", "ChatClient", "EmbedFailed", "HostEmbedder", "backend_for", "client_for", "probe"]
