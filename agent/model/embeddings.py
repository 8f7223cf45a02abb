"""Ollama's `/api/embed`, for semantic recall: batched, bounded in time, never retried.

Beside the chat client (agent/model/ollama_client.py) because it speaks to the same server, but
its own module: recall must never wait for the embedder the way a run waits for its model, so
there are no retries and every call has a deadline of its own (the caller's `timeout_s`). Every
failure is one `EmbedFailed` line naming the server, the model and what to do; the knowledge
base then searches by text alone. A name the server has under one tag only (`nomic-embed-text`,
pulled as `nomic-embed-text:v1.5`) is asked for by that tag, as a run's model is resolved
(agent/model/tags.py); the knowledge base keeps the name it was given.
"""

from __future__ import annotations

import ssl
from typing import Any

import httpx

from agent.knowledge.embedding import EmbedFailed, checked_vectors
from agent.model.ollama_client import _cause, _error_text, _tls, normalize_host, probe
from agent.model.tags import resolve_tag

BATCH = 64  # texts per request: big enough to keep the model busy, small enough to answer in time


class OllamaEmbedder:
    """Embeddings from one Ollama server; `embed` splits long lists into batches."""

    def __init__(self, host: str | None = None) -> None:
        self.base_url = normalize_host(host)
        verify: ssl.SSLContext | bool = _tls() if self.base_url.startswith("https://") else False
        self._http = httpx.Client(verify=verify)
        self._tagged: dict[str, str] = {}  # a name -> the tag the server has it by, once a 404 asked

    def close(self) -> None:
        self._http.close()

    def embed(self, model: str, texts: list[str], *, timeout_s: float) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), BATCH):
            part = texts[start : start + BATCH]
            out.extend(checked_vectors(self._post(model, part, timeout_s), len(part), model, _dim(out)))
        return out

    def _post(self, model: str, texts: list[str], timeout_s: float) -> Any:
        try:
            return self._ask(self._tagged.get(model, model), texts, timeout_s)
        except _NotPulled:
            tagged = resolve_tag(model, probe(self.base_url, timeout_s=min(timeout_s, 2.0)) or [])
            if tagged is None or tagged == model:
                raise
            self._tagged[model] = tagged
            return self._ask(tagged, texts, timeout_s)

    def _ask(self, model: str, texts: list[str], timeout_s: float) -> Any:
        url = f"{self.base_url}/api/embed"
        try:
            response = self._http.post(url, json={"model": model, "input": texts}, timeout=timeout_s)
        except httpx.TimeoutException:
            raise EmbedFailed(f"{url} did not answer within {timeout_s:.1f} s") from None
        except (httpx.HTTPError, OSError) as exc:
            raise EmbedFailed(f"cannot reach {url}: {_cause(exc)}; is ollama.service running?") from None
        if response.status_code == 404:
            raise _NotPulled(f"the embedding model {model} is not pulled; run: ollama pull {model}")
        if response.status_code != 200:
            raise EmbedFailed(f"{url} answered HTTP {response.status_code}: {_error_text(response.text)}")
        try:
            data = response.json()
        except ValueError:
            raise EmbedFailed(f"{url} answered something that is not JSON") from None
        return data.get("embeddings") if isinstance(data, dict) else None


class _NotPulled(EmbedFailed):
    """The server has no model of exactly this name (HTTP 404)."""


def _dim(done: list[list[float]]) -> int | None:
    return len(done[0]) if done else None
