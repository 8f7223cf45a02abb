"""The model servers: the models each configured host has, and those loaded with their memory; with
several hosts (hearth/run/hosts.py), the same for each, in the operator's order, each of its kind
(Ollama, or an OpenAI-compatible server).

Asked through the backend table (agent/model/backends.py's `look`, with each model's window and
capabilities), at each request and with a short timeout; when a host does not answer, the page says
so in one line (with the address and what to check) instead of an empty table.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse

from agent.model.backends import look
from agent.model.host import Host, HostView, ModelInfo, parse_host
from hearth.errors import ConfigError
from hearth.run.hosts import configured
from hearth.settings import Settings, model_origin
from hearth.web.context import web_of
from hearth.web.security import Identity, viewer

router = APIRouter()
KIND_NAMES = {"ollama": "Ollama", "openai": "OpenAI-compatible server"}


def models_data(settings: Settings) -> dict[str, Any]:
    """`hosts`: each host's {label, kind, host, up, problem, pulled, loaded} (one: the model host),
    asked at once; the first host's fields also at the top, as with one host. A broken [[host]]
    table is the problem of a host of its own, so the page says it."""
    try:
        named, broken = list(configured(settings)) or [parse_host(settings.model_host)], ""
    except ConfigError as exc:
        named, broken = [parse_host(settings.model_host)], str(exc)
    with ThreadPoolExecutor(max_workers=min(8, len(named))) as pool:
        hosts = list(pool.map(host_data, named))
    if broken:
        hosts.insert(
            0,
            {
                "label": "router.toml",
                "kind": "",
                "host": "",
                "up": False,
                "problem": broken,
                "pulled": [],
                "loaded": [],
            },
        )
    return {**hosts[0], "hosts": hosts, "default": settings.model, "default_from": model_origin(settings.model)}


def host_data(host: Host) -> dict[str, Any]:
    """{label, kind, host, up, problem, pulled, loaded} of one host; each model with its size and details."""
    view = look(host, 2.0, detail=True)
    head = {
        "label": host.label,
        "kind": host.kind,
        "kind_name": KIND_NAMES.get(host.kind, host.kind),
        "host": host.base,
    }
    if not view.up:
        running = "ollama.service" if host.kind == "ollama" else "the server"
        problem = f"cannot reach {head['kind_name']} at {view.why}; is {running} running?"
        return {**head, "up": False, "problem": problem, "pulled": [], "loaded": []}
    return {**head, "up": True, "problem": "", "pulled": _pulled(view), "loaded": _loaded(view)}


def _pulled(view: HostView) -> list[dict[str, Any]]:
    return [{**_model(info), "loaded": view.has_loaded(info.name)} for info in view.infos]


def _loaded(view: HostView) -> list[dict[str, Any]]:
    return [
        {
            "name": m.name,
            "size": m.size,
            "size_vram": m.in_gpu,
            "expires_at": m.expires_at,
            "context_length": m.context,
            **{k: v for k, v in _model(view.info(m.name) or ModelInfo(m.name)).items() if k != "name" and k != "size"},
        }
        for m in view.memory
    ]


def _model(info: ModelInfo) -> dict[str, Any]:
    return {
        "name": info.name,
        "size": info.size,
        "modified_at": info.modified_at,
        "family": info.family,
        "parameter_size": info.parameter_size,
        "quantization_level": info.quantization,
        "context": info.context,
        "capabilities": list(info.capabilities),
    }


def size(value: Any) -> str:
    """Bytes for a person: 4.7 GB, 812 MB; `-` when the server did not say."""
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
    """The model host's models (Ollama: pulled, /api/tags; OpenAI-compatible: served, /v1/models), each
    with its window and capabilities where the server says them, and the loaded ones with their memory
    (size, size_vram, expires_at); `up` false with a one-line `problem` when it does not answer. `hosts`
    has the same for each host when several are named (router.toml's [[host]]), each with its `kind`."""
    return await run_in_threadpool(models_data, web_of(request).config.settings)
