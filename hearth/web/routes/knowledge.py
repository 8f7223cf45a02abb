"""Knowledge and memory: search, list and remove, through the store `hearth kb` / `hearth memory` use."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, RedirectResponse, Response

from agent.knowledge.store import KnowledgeStore
from hearth.knowledge import open_knowledge
from hearth.web.context import web_of
from hearth.web.security import Identity, WebError, check_csrf, owner, viewer

router = APIRouter()


def _store(request: Request) -> KnowledgeStore | None:
    """The knowledge base, or None before anything was stored (reading must not create it)."""
    settings = web_of(request).config.settings
    return open_knowledge(settings) if settings.knowledge_path.exists() else None


def knowledge_data(request: Request, q: str = "") -> dict[str, Any]:
    store = _store(request)
    if store is None:
        return {"q": q, "hits": [], "documents": [], "lessons": [], "lexical": None}
    with store:
        hits = [asdict(h) for h in store.search(q, k=20)] if q.strip() else []
        lessons = [{k: v for k, v in asdict(x).items() if k not in ("score", "way")} for x in store.lessons(limit=200)]
        lexical = store.semantic.reason if q.strip() else None  # why the hits were found by text only
        return {"q": q, "hits": hits, "documents": store.documents(limit=200), "lessons": lessons, "lexical": lexical}


def remove(request: Request, kind: str, ident: int) -> int:
    store = _store(request)
    if store is None:
        raise WebError(404, f"no {kind} #{ident}: the knowledge base is empty")
    with store:
        count = store.remove(ident) if kind == "document" else int(store.forget(ident))
    if not count:
        raise WebError(404, f"no {kind} #{ident}")
    return count


@router.get("/knowledge", response_class=HTMLResponse, include_in_schema=False)
def knowledge_page(request: Request, q: str = "", me: Identity = Depends(viewer)) -> HTMLResponse:
    return web_of(request).pages.render(request, "knowledge.html", **knowledge_data(request, q[:500]))


@router.post("/knowledge/{kind}/{ident}/remove", include_in_schema=False, dependencies=[Depends(check_csrf)])
async def remove_page(request: Request, kind: str, ident: int, me: Identity = Depends(owner)) -> Response:
    if kind not in ("document", "lesson"):
        raise WebError(404, "no such page")
    await run_in_threadpool(remove, request, kind, ident)
    return RedirectResponse("/knowledge", status_code=303)


@router.get("/api/knowledge", tags=["knowledge"])
def api_knowledge(request: Request, q: str = "", me: Identity = Depends(viewer)) -> dict[str, Any]:
    """Documents and lessons (as `hearth kb list --json`, `hearth memory list --json`); q searches."""
    return knowledge_data(request, q[:500])


@router.post("/api/knowledge/{ident}/remove", tags=["knowledge"], dependencies=[Depends(check_csrf)])
async def api_remove_document(request: Request, ident: int, me: Identity = Depends(owner)) -> dict[str, int]:
    """Remove one document (as `hearth kb rm ID --json`)."""
    return {"removed": await run_in_threadpool(remove, request, "document", ident)}


@router.post("/api/memory/{ident}/remove", tags=["knowledge"], dependencies=[Depends(check_csrf)])
async def api_remove_lesson(request: Request, ident: int, me: Identity = Depends(owner)) -> dict[str, int]:
    """Remove one lesson (as `hearth memory rm ID --json`)."""
    return {"removed": await run_in_threadpool(remove, request, "lesson", ident)}
