"""A model server as the operator names it, and what it says when asked: the records every backend shares.

A host is written `[KIND+]URL`: `http://10.0.0.5:11434` (Ollama, the default kind),
`openai+http://127.0.0.1:8080` (any server speaking OpenAI's `/v1/chat/completions`: llama.cpp's
`llama-server`, vLLM, LM Studio, LocalAI, SGLang). The same in router.toml's `[[host]]` tables as
`kind = "openai"`. A leaf of the model floor: the backends (agent/model/backends.py) and the
pool (agent/model/hosts.py) stand on it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

KINDS = ("ollama", "openai")
OLLAMA_PORT = 11434
# what a run waits for a server to begin answering, and then between two chunks of its reply: a small
# model on two CPU cores takes minutes over a long first prompt, and a streamed reply shows a live
# server as soon as it writes (docs/run.md, "Model servers")
DEFAULT_TIMEOUT_S = 600.0
CONNECT_S = 10.0


@dataclass(frozen=True)
class Host:
    """One model server: its address, its kind, and how the operator weighs it."""

    url: str
    label: str = ""
    weight: float = 1.0
    kind: str = "ollama"
    timeout_s: float | None = None  # None: the run's default (HEARTH_MODEL_TIMEOUT_S)
    api_key: str = field(default="", repr=False)  # sent as a bearer token; never shown or recorded

    @property
    def base(self) -> str:
        return normalize_host(self.url, self.kind)

    @property
    def name(self) -> str:
        return self.label or self.base.split("://", 1)[1]

    @property
    def written(self) -> str:
        """The host as the operator would write it again (`openai+http://...`), without its key."""
        return self.base if self.kind == "ollama" else f"{self.kind}+{self.base}"


def parse_host(text: str | None, label: str = "") -> Host:
    """`[KIND+]URL` -> a Host; ValueError names an unknown kind and the ones there are."""
    text = (text or "").strip()
    kind = "ollama"
    head, plus, rest = text.partition("+")
    if plus and "/" not in head and ":" not in head:
        kind, text = head.lower(), rest
    if kind not in KINDS:
        raise ValueError(
            f"unknown model server kind {kind!r} in {head}+{rest}; write ollama+URL or openai+URL "
            "(llama.cpp, vLLM, LM Studio, LocalAI and SGLang speak openai)"
        )
    return Host(text, label, kind=kind)


def normalize_host(host: str | None, kind: str = "ollama") -> str:
    """`127.0.0.1:11434`, `host:port` or a full URL -> a base URL without a trailing slash. An Ollama
    address without a port gets Ollama's; an OpenAI-compatible one loses a trailing `/v1` (the
    client adds the API's paths), so both spellings of its base work."""
    host = (host or "").strip() or f"127.0.0.1:{OLLAMA_PORT}"
    if "://" not in host:
        host = "http://" + host
    scheme, rest = host.split("://", 1)
    if kind == "ollama" and ":" not in rest.split("/", 1)[0].rsplit("]", 1)[-1]:
        head, _, tail = rest.partition("/")
        rest = f"{head}:{OLLAMA_PORT}" + (f"/{tail}" if tail else "")
    base = f"{scheme}://{rest}".rstrip("/")
    return base[: -len("/v1")] if kind != "ollama" and base.endswith("/v1") else base


@dataclass(frozen=True)
class ModelInfo:
    """One model a server has: what the model page and doctor show of it (None: the server did not say)."""

    name: str
    context: int | None = None  # tokens of context the server gives it (its window)
    size: int | None = None  # bytes on disk
    family: str | None = None
    parameter_size: str | None = None
    quantization: str | None = None
    modified_at: str | None = None
    capabilities: tuple[str, ...] = ()  # completion, tools, thinking, embedding ... as the server says


@dataclass(frozen=True)
class Loaded:
    """One model a server holds in memory now."""

    name: str
    vram: int = 0  # bytes it holds in GPU memory (Ollama's size_vram, else its size)
    expires_at: str | None = None
    context: int | None = None
    size: int | None = None  # bytes it holds in all
    in_gpu: int | None = None  # of which in GPU memory, as the server said (None: it did not)


@dataclass(frozen=True)
class HostView:
    """What one host said when it was last asked: its models, what is loaded, and the memory held."""

    host: Host
    up: bool
    models: tuple[str, ...] = ()
    loaded: tuple[str, ...] = ()
    vram: int = 0  # bytes the loaded models hold (size_vram, else size)
    why: str = ""  # why it is down
    infos: tuple[ModelInfo, ...] = ()
    memory: tuple[Loaded, ...] = ()

    def has(self, model: str) -> bool:
        return match(model, self.models) is not None

    def has_loaded(self, model: str) -> bool:
        return match(model, self.loaded) is not None

    def info(self, model: str) -> ModelInfo | None:
        name = match(model, self.models)
        return next((i for i in self.infos if i.name == name), None) if name else None


def match(model: str, names: Sequence[str]) -> str | None:
    """`qwen2.5` matches `qwen2.5:latest`; a name with a tag matches only itself."""
    if model in names:
        return model
    if ":" not in model:
        return next((n for n in names if n == f"{model}:latest"), None)
    return None


@dataclass(frozen=True)
class ChatOptions:
    """How a run talks to its model, whatever the backend: the window, the reply cap, limits, callbacks.

    `timeout_s` bounds the wait for the server to begin answering and then for each chunk of a
    streamed reply; `reply_tokens` caps one reply (Ollama's num_predict, OpenAI's max_tokens: 0 sends
    none), so a looping reply cannot hold a CPU box for minutes. `on_retry(line)` before each new attempt,
    `on_tokens(chunks)` as a streamed reply comes in, `on_no_thinking(why)` once thinking is dropped."""

    num_ctx: int = 8192
    reply_tokens: int = 0
    timeout_s: float = DEFAULT_TIMEOUT_S
    retries: int = 3
    backoff_s: float = 0.5
    stream: bool = True
    think: bool | str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # Ollama's `options` (temperature, seed ...)
    on_retry: Callable[[str], None] | None = None
    on_tokens: Callable[[int], None] | None = None
    on_no_thinking: Callable[[str], None] | None = None  # told once when the server says the model cannot think
