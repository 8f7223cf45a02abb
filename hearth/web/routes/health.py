"""`/healthz`: the command center answers. For a load balancer or an uptime check: no sign-in, and
nothing from the audit, the queue or Ollama in the answer (so it tells a stranger nothing)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import PlainTextResponse

router = APIRouter()


@router.get("/healthz", response_class=PlainTextResponse, tags=["health"])
def healthz() -> PlainTextResponse:
    """200 `ok` while the server answers; no sign-in needed, no data given."""
    return PlainTextResponse("ok\n")
