"""What semantic recall needs from an embedder, and what it checks of every answer.

The knowledge base asks for vectors through this Protocol only; the client that speaks to Ollama's
`/api/embed` (or an OpenAI-compatible `/v1/embeddings`) stands a floor higher (agent/model/backends.py) and is handed in by the appliance,
so the store never imports the model server's code. Whatever an embedder answers is checked here
once (`checked_vectors`): one vector per text, each the same dimension and no wider than the
vector index holds (MAX_DIMENSIONS), every value a finite number, none all zeros. Anything else is
an `EmbedFailed` whose line says why, and search is then lexical (agent/knowledge/semantic.py).
"""

from __future__ import annotations

import math
from typing import Any, Protocol

from agent.errors import AgentError

# sqlite-vec's widest vector column (agent/knowledge/vectors.py): a wider answer is refused
MAX_DIMENSIONS = 8192


class EmbedFailed(AgentError):
    """The embedder is missing, down, slow, or answered something that is not usable vectors."""


class EmbedModelMissing(EmbedFailed):
    """The server has no embedding model of exactly that name (it may have it under a tag)."""


class Embedder(Protocol):
    """Texts in, one vector per text out, from the named model; raises EmbedFailed."""

    def embed(self, model: str, texts: list[str], *, timeout_s: float) -> list[list[float]]: ...


def checked_vectors(raw: Any, count: int, model: str, dim: int | None = None) -> list[list[float]]:
    """The vectors of one answer, or EmbedFailed saying what was wrong with them."""
    if not isinstance(raw, list) or len(raw) != count:
        got = f"{len(raw)} vectors" if isinstance(raw, list) else type(raw).__name__
        raise EmbedFailed(f"{model} answered {got} for {count} texts")
    want = dim
    out: list[list[float]] = []
    for vector in raw:
        if not isinstance(vector, list) or not vector or not all(_number(x) for x in vector):
            raise EmbedFailed(f"{model} answered something that is not a list of numbers")
        too_wide(model, len(vector))
        want = want or len(vector)
        if len(vector) != want:
            raise EmbedFailed(f"{model} answered {len(vector)}-dimension vectors where {want} were expected")
        if not any(vector):
            raise EmbedFailed(f"{model} answered an all-zero vector")
        out.append([float(x) for x in vector])
    return out


def too_wide(model: str, dimensions: int) -> None:
    """EmbedFailed when vectors of `dimensions` are wider than the vector index holds."""
    if dimensions > MAX_DIMENSIONS:
        raise EmbedFailed(
            f"{model} answered {dimensions}-dimension vectors; the vector index holds at most {MAX_DIMENSIONS}: "
            "use an embedding model with fewer dimensions (HEARTH_EMBED_MODEL)"
        )


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
