"""The model server: the models the configured Ollama has pulled, and those loaded with their memory;
with several Ollama hosts (hearth/run/hosts.py), the same for each host, in the operator's order.

Asked of Ollama through agent/model/ollama_client.py's `server_models` (/api/tags and /api/ps), at
each request and with a short timeout; when Ollama does not answer, the page says so in one line
(with the address and what to check) instead of an empty table.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse

from agent.model.ollama_client import ModelUnavailable, normalize_host, server_models
from hearth.errors import ConfigError
from hearth.run.hosts import configured
from hearth.settings import Settings
from hearth.web.context import web_of
from hearth.web.security import Identity, viewer

router = APIRouter()


def models_data(settings: Settings) -> dict[str, Any]:
    """`hosts`: each host's {label, host, up, problem, pulled, loaded} (one: OLLAMA_HOST), asked at
    once; the first host's fields also at the top, as with one host. A broken [[host]] table is the
    problem of a host of its own, so the page says it."""
    try:
        named = [(h.label, h.url) for h in configured(settings)] or [("", settings.ollama_host)]
        broken = ""
    except ConfigError as exc:
        named, broken = [("", settings.ollama_host)], str(exc)
    with ThreadPoolExecutor(max_workers=min(8, len(named))) as pool:
        hosts = list(pool.map(lambda h: {"label": h[0], **host_data(h[1])}, named))
    if broken:
        hosts.insert(
            0, {"label": "router.toml", "host": "", "up": False, "problem": broken, "pulled": [], "loaded": []}
        )
    return {**hosts[0], "hosts": hosts, "default": settings.model}


def host_data(url: str) -> dict[str, Any]:
    """{host, up, problem, pulled, loaded} of one Ollama; each model with its size and details."""
    host = normalize_host(url)
    try:
        found = server_models(url)
    except ModelUnavailable as exc:
        return {"host": host, "up": False, "problem": str(exc), "pulled": [], "loaded": []}
    loaded = {str(m.get("name")) for m in found["loaded"]}
    pulled = [{**_model(m), "loaded": str(m.get("name")) in loaded} for m in found["pulled"]]
    ps = [
        {
            **_model(m),
            "size_vram": m.get("size_vram"),
            "expires_at": m.get("expires_at"),
            "context_length": m.get("context_length"),
        }
        for m in found["loaded"]
    ]
    return {"host": host, "up": True, "problem": "", "pulled": pulled, "loaded": ps}


def _model(raw: dict[str, Any]) -> dict[str, Any]:
    found = raw.get("details")
    details: dict[str, Any] = found if isinstance(found, dict) else {}
    return {
        "name": raw.get("name"),
        "size": raw.get("size"),
        "modified_at": raw.get("modified_at"),
        "family": details.get("family"),
        "parameter_size": details.get("parameter_size"),
        "quantization_level": details.get("quantization_level"),
    }


def size(value: Any) -> str:
    """Bytes for a person: 4.7 GB, 812 MB; `-` when Ollama did not say."""
    if not isinstance(value, int | float) or value < 0:
        return "-"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{int(value)} B"


@router.get("/operate/models", response_class=HTMLResponse, include_in_schema=False)
async def models_page(request: Request, me: Identity = Depends(viewer)) -> HTMLResponse:
    data = await run_in_threadpool(models_data, web_of(request).config.settings)
    return web_of(request).pages.render(request, "models.html", **data, size=size)


@router.get("/api/models", tags=["models"])
async def api_models(request: Request, me: Identity = Depends(viewer)) -> dict[str, Any]:
    """The configured Ollama's pulled models (/api/tags) and loaded ones with their memory
    (/api/ps: size, size_vram, expires_at); `up` false with a one-line `problem` when it does not answer.
    `hosts` has the same for each Ollama host when several are named (router.toml's [[host]])."""
    return await run_in_threadpool(models_data, web_of(request).config.settings)
