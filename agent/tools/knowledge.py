"""Knowledge and memory tools: kb_add, kb_search, index_dir, remember, recall.

They use the run's KnowledgeStore (`ws.services.knowledge`), shared with every other run; what
they store is scoped `global` unless the model asks for `agent` (this agent's runs only), and
lessons default to the agent's own scope. Text is redacted before it is stored.
"""

from __future__ import annotations

from typing import Any

from agent.safety.workspace import Workspace
from agent.tools.args import (
    MAX_INDEXED_FILES_PER_RUN,
    MAX_KB_DOCUMENTS_PER_RUN,
    SCOPE,
    count_use,
    integer,
    scope_arg,
    store_of,
)
from agent.tools.registry import Tool, ToolFailed

MAX_TEXT = 200_000
MAX_LESSON = 2_000
MAX_LESSONS_PER_RUN = 20  # per run, as the knowledge base's documents (agent/tools/args.py)
WAYS = {"text": "text", "meaning": "meaning", "both": "text and meaning"}  # how a hit was found


def kb_add(args: dict[str, Any], ws: Workspace) -> str:
    text = ws.services.redact(args["text"]).strip()
    if not text:
        raise ToolFailed("text is empty; nothing was stored")
    if len(text) > MAX_TEXT:
        raise ToolFailed(f"text is {len(text)} characters, over the limit of {MAX_TEXT}; nothing was stored")
    count_use(ws, "kb documents", MAX_KB_DOCUMENTS_PER_RUN, "kb_add (with fetch_to_kb)")
    title = " ".join((args.get("title") or text.splitlines()[0]).split())[:200]
    source = args.get("source") or f"run:{ws.services.run_id or 'unknown'}:{title[:60]}"
    stored = store_of(ws).add(text, title=title, source=source, scope=scope_arg(args, ws, "global"))
    if stored.unchanged:
        return f"already stored, unchanged: document #{stored.doc_id} ({title!r}, source {source})"
    return (
        f"stored document #{stored.doc_id} ({title!r}, source {source}): {stored.added} chunks added, "
        f"{stored.kept} kept, {stored.removed} removed"
    )


def kb_search(args: dict[str, Any], ws: Workspace) -> str:
    k = args.get("k", 5)
    hits = store_of(ws).search(args["query"], scopes=_scopes(ws), k=k)
    if not hits:
        return f"no knowledge matches {args['query']!r}"
    return "\n\n".join(_hit(n, h, ws) for n, h in enumerate(hits, 1))


def _hit(n: int, hit: Any, ws: Workspace) -> str:
    """One result; a chunk of a page fetched from the web is enveloped as data (issue 25)."""
    text = f"{n}. {hit.title} (source: {hit.source}, document #{hit.doc_id}; found by {WAYS[hit.way]})\n   {' '.join(hit.snippet.split())}"
    from_web = str(hit.source).startswith(("http://", "https://"))
    return ws.services.envelope.wrap(text, hit.source) if from_web else text


def index_dir(args: dict[str, Any], ws: Workspace) -> str:
    path = args.get("path") or "."
    glob = args.get("glob") or None
    from agent.knowledge.indexing import index_directory  # the knowledge code loads when a tool uses it

    left = MAX_INDEXED_FILES_PER_RUN - ws.services.counts.get("indexed files", 0)
    if left <= 0:
        raise ToolFailed(f"index_dir already read {MAX_INDEXED_FILES_PER_RUN} files in this run, its limit")
    scope = scope_arg(args, ws, "global")
    report = index_directory(store_of(ws), ws, path, glob=glob, scope=scope, max_files=left)
    count_use(ws, "indexed files", MAX_INDEXED_FILES_PER_RUN, "index_dir", report.files)
    return report.summary(ws.relpath(path) + (f" matching {glob}" if glob else ""))


def remember(args: dict[str, Any], ws: Workspace) -> str:
    lesson = " ".join(ws.services.redact(args["lesson"]).split())
    if not lesson:
        raise ToolFailed("lesson is empty; nothing was stored")
    if len(lesson) > MAX_LESSON:
        raise ToolFailed(f"lesson is {len(lesson)} characters, over the limit of {MAX_LESSON}; keep it short")
    count_use(ws, "lessons", MAX_LESSONS_PER_RUN, "remember")
    tags = ", ".join(t.strip() for t in (args.get("tags") or "").split(",") if t.strip())
    scope = scope_arg(args, ws, "agent")
    lesson_id, new = store_of(ws).remember(lesson, tags=tags, scope=scope, run_id=ws.services.run_id)
    return f"remembered lesson #{lesson_id} ({scope})" if new else f"already remembered as lesson #{lesson_id}"


def recall(args: dict[str, Any], ws: Workspace) -> str:
    k = args.get("k", 5)
    found = store_of(ws).recall(args["query"], scopes=_scopes(ws), k=k)
    if not found:
        return f"no lessons match {args['query']!r}"
    return "\n".join(
        f"- #{item.id} ({item.created_at[:10]}{', tags: ' + item.tags if item.tags else ''}; "
        f"found by {WAYS[item.way]}): {item.lesson}"
        for item in found
    )


TOOLS = [
    Tool(
        name="kb_add",
        description="Store a text in the knowledge base for later runs (a same source replaces it).",
        params={
            "text": {"type": "string"},
            "title": {"type": "string"},
            "source": {"type": "string", "description": "A URL, path or name."},
            "scope": SCOPE,
        },
        required=("text",),
        fn=kb_add,
        risk="edit",
    ),
    Tool(
        name="kb_search",
        description="Search the knowledge base.",
        params={
            "query": {"type": "string"},
            "k": integer("1 to 20 (default 5).", 1, 20),
        },
        required=("query",),
        fn=kb_search,
        risk="safe",
    ),
    Tool(
        name="index_dir",
        description="Index a directory's text files into the knowledge base (again: updates it).",
        params={
            "path": {"type": "string"},
            "glob": {"type": "string", "description": "e.g. *.md"},
            "scope": SCOPE,
        },
        fn=index_dir,
        risk="edit",
    ),
    Tool(
        name="remember",
        description="Save a short lesson for later runs.",
        params={
            "lesson": {"type": "string"},
            "tags": {"type": "string", "description": "Comma-separated."},
            "scope": {**SCOPE, "description": "agent (default) or global."},
        },
        required=("lesson",),
        fn=remember,
        risk="edit",
    ),
    Tool(
        name="recall",
        description="Look up lessons saved by earlier runs.",
        params={
            "query": {"type": "string"},
            "k": integer("1 to 20 (default 5).", 1, 20),
        },
        required=("query",),
        fn=recall,
        risk="safe",
    ),
]


def _scopes(ws: Workspace) -> tuple[str, ...]:
    from agent.knowledge.store import scopes_for

    return scopes_for(ws.services.agent_name)
