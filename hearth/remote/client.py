"""A worker's calls to its hub's `/fleet` (hearth/remote/door.py), with its token."""

from __future__ import annotations

from typing import Any

import httpx

from hearth.fleet.config import FleetConfig

TIMEOUT_S = 5.0


class HubClient:
    def __init__(self, config: FleetConfig) -> None:
        self.base, self.token = config.hub, config.token
        self._http: httpx.Client | None = None

    @property
    def http(self) -> httpx.Client:
        """Made at the first call: a run's recorder holds one and most runs never call (making one
        loads the TLS trust store, a tenth of a worker's CPU per run when it was made for each)."""
        if self._http is None:
            headers = {"Authorization": f"Bearer {self.token}"}
            self._http = httpx.Client(headers=headers, timeout=TIMEOUT_S, trust_env=False)
        return self._http

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The hub's status and JSON answer; OSError when it does not answer."""
        return self._call("POST", path, body)

    def get(self, path: str) -> tuple[int, dict[str, Any]]:
        return self._call("GET", path, None)

    def _call(self, method: str, path: str, body: dict[str, Any] | None) -> tuple[int, dict[str, Any]]:
        try:
            response = self.http.request(method, self.base + path, json=body)
        except httpx.HTTPError as exc:
            raise OSError(f"{type(exc).__name__}: {exc}") from None
        try:
            answer = response.json()
        except ValueError:
            answer = {"error": response.text[:200]}
        return response.status_code, answer if isinstance(answer, dict) else {"error": "not a JSON object"}

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
