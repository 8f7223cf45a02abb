"""`hearth kb add|search|list|rm|embed|reembed` and `hearth memory list|rm`: the operator's view of
what runs learn. `embed` gives vectors to what was stored while the embedder was away; `reembed`
moves every vector to another embedding model (agent/knowledge/semantic.py), with a progress bar."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hearth.cli.main import positive
from hearth.errors import NotFound, UsageError
from hearth.render import print_json, table
from hearth.settings import Settings

if TYPE_CHECKING:
    from agent.knowledge.store import KnowledgeStore

WAYS = {"both": "text and meaning"}  # how a hit was found, as kb_search says it


def register(sub: argparse._SubParsersAction) -> None:
    kb = sub.add_parser("kb", help="the knowledge base: add, search, list, remove")
    _register_kb(kb.add_subparsers(dest="verb", metavar="VERB", required=True))
    memory = sub.add_parser("memory", help="long-term memory (lessons): list, remove")
    _register_memory(memory.add_subparsers(dest="verb", metavar="VERB", required=True))


def _register_kb(verbs: argparse._SubParsersAction) -> None:
    """`hearth kb add|search|embed|reembed|list|rm`."""
    add = verbs.add_parser("add", help="add files, directories (indexed), stdin (-) or --text")
    add.add_argument("paths", nargs="*", metavar="PATH", help="a file, a directory to index, or - for stdin")
    add.add_argument("--text", help="add this text")
    add.add_argument("--title", help="title (default: the file name or first line)")
    add.add_argument("--source", help="source to record (default: the absolute path, or 'operator')")
    add.add_argument("--glob", help="for directories: only files matching this (e.g. *.md)")
    _scope_args(add, "store in this agent's scope instead of the global one")
    add.set_defaults(handler=kb_add)
    search = verbs.add_parser("search", help="search the knowledge base")
    search.add_argument("query")
    search.add_argument("-k", type=int, default=5, help="how many results (default 5)")
    _scope_args(search, "search what this agent's runs see (default: everything)")
    search.set_defaults(handler=kb_search)
    embed = verbs.add_parser("embed", help="embed chunks and lessons stored without vectors")
    embed.add_argument("--json", action="store_true")
    embed.set_defaults(handler=kb_embed)
    reembed = verbs.add_parser("reembed", help="re-embed everything with another model (resumable)")
    reembed.add_argument("--model", help="the Ollama embedding model (default: HEARTH_EMBED_MODEL)")
    reembed.add_argument("--json", action="store_true")
    reembed.set_defaults(handler=kb_reembed)
    listing = verbs.add_parser("list", help="list documents")
    listing.add_argument("--limit", type=positive, default=200)
    _scope_args(listing, "list what this agent's runs see (default: everything)")
    listing.set_defaults(handler=kb_list)
    remove = verbs.add_parser("rm", help="remove a document by id or source")
    remove.add_argument("ref", help="a document id (see: hearth kb list) or its source")
    remove.add_argument("--json", action="store_true")
    remove.set_defaults(handler=kb_rm)


def _register_memory(verbs: argparse._SubParsersAction) -> None:
    """`hearth memory list|rm`."""
    lessons = verbs.add_parser("list", help="list lessons")
    lessons.add_argument("--limit", type=positive, default=200)
    _scope_args(lessons, "list what this agent's runs see (default: everything)")
    lessons.set_defaults(handler=memory_list)
    forget = verbs.add_parser("rm", help="remove a lesson by id")
    forget.add_argument("id", type=int)
    forget.add_argument("--json", action="store_true")
    forget.set_defaults(handler=memory_rm)


def _scope_args(parser: argparse.ArgumentParser, agent_help: str) -> None:
    parser.add_argument("--agent-name", "--agent", dest="agent", metavar="NAME", help=agent_help)
    parser.add_argument("--json", action="store_true")


def open_store(settings: Settings) -> KnowledgeStore:
    from hearth.knowledge import open_knowledge

    settings.writable_state_dir()
    return open_knowledge(settings)


def _view(args: argparse.Namespace) -> tuple[str, ...] | None:
    from agent.knowledge.store import scopes_for

    return scopes_for(args.agent) if args.agent else None


def kb_add(args: argparse.Namespace, settings: Settings) -> int:
    if not args.paths and args.text is None:
        raise UsageError("nothing to add: give PATH(s), - for stdin, or --text TEXT")
    scope = f"agent:{args.agent}" if args.agent else "global"
    with open_store(settings) as store:
        done = [_add_text(store, args.text, args, scope, "operator")] if args.text is not None else []
        done += [_add_path(store, path, args, scope) for path in args.paths]
        lexical = store.semantic.reason
    if args.json:
        print_json(done)
    else:
        for item in done:
            print(item["summary"])
    if lexical and not args.json:  # stored all the same: found by text until the vectors can be made
        print(f"(by text only: {lexical})", file=sys.stderr)
    return 0


def _add_path(store: KnowledgeStore, path: str, args: argparse.Namespace, scope: str) -> dict[str, Any]:
    from agent.knowledge.indexing import index_directory
    from agent.safety.workspace import Workspace

    if path == "-":
        return _add_text(store, sys.stdin.read(), args, scope, "stdin")
    target = Path(path).resolve()
    if target.is_dir():
        with Workspace(target) as ws:
            report = index_directory(store, ws, ".", glob=args.glob, scope=scope)
        return {"path": str(target), **asdict(report), "summary": report.summary(str(target))}
    return _add_text(store, _read_file(target, path), args, scope, str(target), default_title=target.name)


def _read_file(target: Path, shown: str) -> str:
    from agent.knowledge.indexing import MAX_FILE_BYTES
    from agent.safety.workspace import PathRefused, Workspace

    if not target.is_file():
        raise UsageError(f"{shown} is not a file or directory")
    if target.stat().st_size > MAX_FILE_BYTES:
        raise UsageError(f"{shown} is over 1 MB; the knowledge base takes text files up to 1 MB")
    with Workspace(target.parent) as ws:
        try:
            return ws.read_text(target.name, limit=MAX_FILE_BYTES)[0]
        except PathRefused as exc:
            raise UsageError(f"{shown}: not added ({exc})") from None


def _add_text(
    store: KnowledgeStore,
    text: str,
    args: argparse.Namespace,
    scope: str,
    source: str,
    default_title: str | None = None,
) -> dict[str, Any]:
    if not text.strip():
        raise UsageError(f"nothing to add from {source}: the text is empty")
    title = args.title or default_title or " ".join(text.strip().splitlines()[0].split())[:200]
    source = args.source or source
    stored = store.add(text.strip(), title=title, source=source, scope=scope)
    verb = "unchanged" if stored.unchanged else f"stored ({stored.added} chunks added, {stored.removed} removed)"
    return {
        "doc_id": stored.doc_id,
        "title": title,
        "source": source,
        "scope": scope,
        **asdict(stored),
        "summary": f"#{stored.doc_id} {title!r} ({source}): {verb}",
    }


def kb_search(args: argparse.Namespace, settings: Settings) -> int:
    if not 1 <= args.k <= 100:
        raise UsageError(f"-k must be between 1 and 100, got {args.k}")
    with open_store(settings) as store:
        hits = store.search(args.query, scopes=_view(args), k=args.k)
        lexical = store.semantic.reason
    if args.json:
        print_json([asdict(h) for h in hits])
    elif not hits:
        print(f"no knowledge matches {args.query!r}")
    for n, hit in enumerate([] if args.json else hits, 1):
        print(f"{n}. #{hit.doc_id} {hit.title}  ({hit.source}, {hit.scope}; found by {WAYS.get(hit.way, hit.way)})")
        print(f"   {' '.join(hit.snippet.split())}")
    if lexical and not args.json:
        print(f"(by text only: {lexical})", file=sys.stderr)
    return 0


def kb_list(args: argparse.Namespace, settings: Settings) -> int:
    with open_store(settings) as store:
        rows = store.documents(scopes=_view(args), limit=args.limit)
    if args.json:
        print_json(rows)
    elif not rows:
        print("the knowledge base is empty")
    else:
        table(
            rows,
            ["id", "scope", "title", "source", "chunks", "chars", "updated_at"],
            widths={"title": 40, "source": 60},
        )
    return 0


def kb_rm(args: argparse.Namespace, settings: Settings) -> int:
    with open_store(settings) as store:
        count = store.remove(args.ref)
    if not count:
        raise NotFound(f"no document with id or source {args.ref!r}; see: hearth kb list")
    print_json({"removed": count}) if args.json else print(f"removed {count} document(s)")
    return 0


def memory_list(args: argparse.Namespace, settings: Settings) -> int:
    with open_store(settings) as store:
        rows = [asdict(lesson) for lesson in store.lessons(scopes=_view(args), limit=args.limit)]
    for row in rows:
        row.pop("score", None)
    if args.json:
        print_json(rows)
    elif not rows:
        print("no lessons remembered yet")
    else:
        table(rows, ["id", "scope", "created_at", "tags", "lesson"], widths={"lesson": 80})
    return 0


def memory_rm(args: argparse.Namespace, settings: Settings) -> int:
    with open_store(settings) as store:
        removed = store.forget(args.id)
    if not removed:
        raise NotFound(f"no lesson #{args.id}; see: hearth memory list")
    print_json({"removed": 1}) if args.json else print(f"removed lesson #{args.id}")
    return 0


def kb_embed(args: argparse.Namespace, settings: Settings) -> int:
    from agent.knowledge import vectors
    from agent.knowledge.embedding import EmbedFailed

    if not settings.embed_model:
        raise UsageError("semantic recall is off (HEARTH_EMBED_MODEL=off); set it to an Ollama embedding model")
    with open_store(settings) as store:
        try:
            swept = store.semantic.sweep()
            done = store.semantic.fill(None, budget_s=24 * 3600.0)
            active = store.semantic.active()
            have, total = store.semantic.counts(active) if active else (0, 0)
        except (EmbedFailed, vectors.VecUnavailable) as exc:
            raise UsageError(f"nothing embedded: {exc}") from None
    model = active.model if active else settings.embed_model
    report = {"model": model, "embedded": done, "stale_dropped": swept, "with_vectors": have, "total": total}
    if args.json:
        print_json(report)
    else:
        print(f"embedded {done} (dropped {swept} stale); {have} of {total} have vectors from {model}")
    return 0


def kb_reembed(args: argparse.Namespace, settings: Settings) -> int:
    from agent.knowledge import vectors
    from agent.knowledge.embedding import EmbedFailed

    model = args.model or settings.embed_model
    if not model:
        raise UsageError("no model to embed with: pass --model or set HEARTH_EMBED_MODEL")
    bar = _Bar(quiet=args.json)
    with open_store(settings) as store:
        try:
            done = store.semantic.reembed(model, bar.show)
        except (EmbedFailed, vectors.VecUnavailable) as exc:
            bar.end()
            raise UsageError(f"re-embedding stopped (run it again to go on): {exc}") from None
    bar.end()
    if args.json:
        print_json({"model": done.model, "dim": done.dim, "chunks_and_lessons": bar.total})
    else:
        print(f"re-embedded {bar.total} chunks and lessons with {done.model} ({done.dim} dimensions)")
    if model != settings.embed_model:
        print(f"note: HEARTH_EMBED_MODEL still says {settings.embed_model!r}; set it to {model!r}", file=sys.stderr)
    return 0


class _Bar:
    """A one-line progress bar on stderr (only on a terminal): done/total and a bar of 30."""

    def __init__(self, *, quiet: bool) -> None:
        self.live = not quiet and sys.stderr.isatty()
        self.total = 0

    def show(self, done: int, total: int) -> None:
        self.total = total
        if self.live:
            filled = 30 * done // total if total else 30
            sys.stderr.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {done}/{total}")
            sys.stderr.flush()

    def end(self) -> None:
        if self.live:
            sys.stderr.write("\n")
