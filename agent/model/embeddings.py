"""Ollama's `/api/embed`, for semantic recall: batched, bounded in time, never retried.

Beside the chat client (agent/model/ollama_client.py) because it speaks to the same server, but
its own module: recall must never wait for the embedder the way a run waits for its model, so
there are no retries and every call has a deadline of its own (the caller's `timeout_s`). Every
failure is one `EmbedFailed` line naming the server, the model and what to do; the knowledge
base then searches by text alone.
"""

from __future__ import annotations

import ssl
from typing import Any

import httpx

from agent.knowledge.embedding import EmbedFailed, checked_vectors
from agent.model.ollama_client import _cause, _error_text, _tls, normalize_host

BATCH = 64  # texts per request: big enough to keep the model busy, small enough to answer in time


class OllamaEmbedder:
    """Embeddings from one Ollama server; `embed` splits long lists into batches."""

    def __init__(self, host: str | None = None) -> None:
        self.base_url = normalize_host(host)
        verify: ssl.SSLContext | bool = _tls() if self.base_url.startswith("https://") else False
        self._http = httpx.Client(verify=verify)

    def close(self) -> None:
        self._http.close()

    def embed(self, model: str, texts: list[str], *, timeout_s: float) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), BATCH):
            part = texts[start : start + BATCH]
            out.extend(checked_vectors(self._post(model, part, timeout_s), len(part), model, _dim(out)))
        return out

    def _post(self, model: str, texts: list[str], timeout_s: float) -> Any:
        url = f"{self.base_url}/api/embed"
        try:
            response = self._http.post(url, json={"model": model, "input": texts}, timeout=timeout_s)
        except httpx.TimeoutException:
            raise EmbedFailed(f"{url} did not answer within {timeout_s:.1f} s") from None
        except (httpx.HTTPError, OSError) as exc:
            raise EmbedFailed(f"cannot reach {url}: {_cause(exc)}; is ollama.service running?") from None
        if response.status_code == 404:
            raise EmbedFailed(f"the embedding model {model} is not pulled; run: ollama pull {model}")
        if response.status_code != 200:
            raise EmbedFailed(f"{url} answered HTTP {response.status_code}: {_error_text(response.text)}")
        try:
            data = response.json()
        except ValueError:
            raise EmbedFailed(f"{url} answered something that is not JSON") from None
        return data.get("embeddings") if isinstance(data, dict) else None


def _dim(done: list[list[float]]) -> int | None:
    return len(done[0]) if done else None
