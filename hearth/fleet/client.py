"""A worker's calls to its hub's `/fleet` (hearth/fleet/door.py), with its token."""

from __future__ import annotations

from typing import Any

import httpx

from hearth.fleet.config import FleetConfig

TIMEOUT_S = 5.0


class HubClient:
    def __init__(self, config: FleetConfig) -> None:
        self.base = config.hub
        self.http = httpx.Client(
            headers={"Authorization": f"Bearer {config.token}"}, timeout=TIMEOUT_S, trust_env=False
        )

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
        self.http.close()
