"""`hearth kb add|search|list|rm` and `hearth memory list|rm`: the operator's view of what runs learn."""

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


def register(sub: argparse._SubParsersAction) -> None:
    kb = sub.add_parser("kb", help="the knowledge base: add, search, list, remove")
    verbs = kb.add_subparsers(dest="verb", metavar="VERB", required=True)
    add = verbs.add_parser("add", help="add files, directories (indexed), stdin (-) or --text")
    add.add_argument("paths", nargs="*", metavar="PATH", help="a file, a directory to index, or - for stdin")
    add.add_argument("--text", help="add this text")
    add.add_argument("--title", help="title (default: the file name or first line)")
    add.add_argument("--source", help="source to record (default: the absolute path, or 'operator')")
    add.add_argument("--glob", help="for directories: only files matching this (e.g. *.md)")
    _scope_args(add, "store in this agent's scope instead of the global one")
    search = verbs.add_parser("search", help="search the knowledge base")
    search.add_argument("query")
    search.add_argument("-k", type=int, default=5, help="how many results (default 5)")
    _scope_args(search, "search what this agent's runs see (default: everything)")
    listing = verbs.add_parser("list", help="list documents")
    listing.add_argument("--limit", type=positive, default=200)
    _scope_args(listing, "list what this agent's runs see (default: everything)")
    remove = verbs.add_parser("rm", help="remove a document by id or source")
    remove.add_argument("ref", help="a document id (see: hearth kb list) or its source")
    remove.add_argument("--json", action="store_true")
    memory = sub.add_parser("memory", help="long-term memory (lessons): list, remove")
    memory_verbs = memory.add_subparsers(dest="verb", metavar="VERB", required=True)
    lessons = memory_verbs.add_parser("list", help="list lessons")
    lessons.add_argument("--limit", type=positive, default=200)
    _scope_args(lessons, "list what this agent's runs see (default: everything)")
    forget = memory_verbs.add_parser("rm", help="remove a lesson by id")
    forget.add_argument("id", type=int)
    forget.add_argument("--json", action="store_true")
    for parser, handler in (
        (add, kb_add),
        (search, kb_search),
        (listing, kb_list),
        (remove, kb_rm),
        (lessons, memory_list),
        (forget, memory_rm),
    ):
        parser.set_defaults(handler=handler)


def _scope_args(parser: argparse.ArgumentParser, agent_help: str) -> None:
    parser.add_argument("--agent-name", "--agent", dest="agent", metavar="NAME", help=agent_help)
    parser.add_argument("--json", action="store_true")


def open_store(settings: Settings) -> KnowledgeStore:
    from agent.knowledge.store import KnowledgeStore

    settings.writable_state_dir()
    return KnowledgeStore(settings.knowledge_path)


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
    if args.json:
        print_json(done)
    else:
        for item in done:
            print(item["summary"])
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
    if args.json:
        print_json([asdict(h) for h in hits])
    elif not hits:
        print(f"no knowledge matches {args.query!r}")
    for n, hit in enumerate([] if args.json else hits, 1):
        print(f"{n}. #{hit.doc_id} {hit.title}  ({hit.source}, {hit.scope})\n   {' '.join(hit.snippet.split())}")
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
