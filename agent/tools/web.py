"""Web tools: web_fetch, http_request, fetch_to_kb (web_search lives in agent/tools/websearch.py).

Every URL goes through the run's NetGuard (`ws.services.net`) via `agent.net.client`; credentials
are resolved by name (`cred:NAME` in a header value) through `ws.services.credentials` at send
time, and every result passes the run's redactor in `call_tool`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agent.net.guard import NetError
from agent.safety.workspace import Workspace
from agent.tools.args import MAX_KB_DOCUMENTS_PER_RUN, count_use, guard_of, integer, scope_arg, store_of, within_run
from agent.tools.registry import Tool, ToolFailed

if TYPE_CHECKING:
    from agent.net.client import Reply
    from agent.net.readable import Page

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
MAX_REQUEST_BODY = 1_000_000
SHOWN_HEADERS = ("content-type", "content-length", "location", "retry-after", "www-authenticate")
DEFAULT_QUESTION = "What does this page say? Give its main facts."
MAX_KB_PAGE = 500_000  # characters of one page kept in the knowledge base (a book is not a page)


def _timeout(args: dict[str, Any], ws: Workspace) -> float:
    """The asked (or default) timeout, cut to what is left of the run's time limit."""
    from agent.net.client import TIMEOUT_S

    asked = float(args.get("timeout_s", int(TIMEOUT_S)))
    return within_run(asked, ws.services.deadline, "the request was not sent")


def fetch_page(args: dict[str, Any], ws: Workspace) -> Page:
    from agent.net.client import request  # httpx: imported when a tool first goes out
    from agent.net.readable import readable

    try:
        reply = request(
            guard_of(ws),
            "GET",
            args["url"],
            timeout_s=_timeout(args, ws),
            headers={"accept": "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.1"},
        )
        if not 200 <= reply.status < 300:
            raise ToolFailed(f"{reply.url} answered HTTP {reply.status} {reply.reason}".rstrip())
        return readable(reply)
    except NetError as exc:
        raise ToolFailed(str(exc)) from None


def web_fetch(args: dict[str, Any], ws: Workspace) -> str:
    page = fetch_page(args, ws)
    head = f"URL: {page.url}\n" + (f"Title: {page.title}\n" if page.title else "")
    extract = ws.services.extract
    if extract is None:
        return f"{head}\n{page.text}"
    question = " ".join(str(args.get("question") or DEFAULT_QUESTION).split())
    # redacted before the extractor reads it too: a page that echoes a credential never reaches a model
    answer = extract(page.url, question, ws.services.redact(page.text))
    return f"{head}Question: {question}\nAnswer from the page: {answer}"


def fetch_to_kb(args: dict[str, Any], ws: Workspace) -> str:
    store = store_of(ws)  # before the fetch: no knowledge base, no network traffic
    count_use(ws, "kb documents", MAX_KB_DOCUMENTS_PER_RUN, "fetch_to_kb (with kb_add)")
    page = fetch_page(args, ws)
    title = " ".join((args.get("title") or page.title or page.url).split())[:200]
    text = ws.services.redact(page.text)
    cut = f"; cut at {MAX_KB_PAGE} of {len(text)} characters" if len(text) > MAX_KB_PAGE else ""
    text = text[:MAX_KB_PAGE]
    stored = store.add(text, title=title, source=page.url, scope=scope_arg(args, ws, "global"), kind="web")
    verb = (
        "already stored, unchanged" if stored.unchanged else f"stored ({stored.added} chunks added, {stored.kept} kept)"
    )
    return f"{verb}: document #{stored.doc_id} {title!r} from {page.url}, {len(text)} characters{cut}"


def http_request(args: dict[str, Any], ws: Workspace) -> str:
    from agent.net.client import request

    method = args.get("method", "GET").upper()
    headers = parse_headers(args.get("headers"))
    body = args.get("body")
    data = body.encode("utf-8") if isinstance(body, str) else None
    if data is not None and len(data) > MAX_REQUEST_BODY:
        raise ToolFailed(f"body is {len(data)} bytes, over the limit of {MAX_REQUEST_BODY}; nothing was sent")
    try:
        reply = request(
            guard_of(ws),
            method,
            args["url"],
            headers=headers,
            body=data,
            credentials=ws.services.credentials,
            timeout_s=_timeout(args, ws),
        )
    except NetError as exc:
        raise ToolFailed(str(exc)) from None
    return describe_reply(reply, method)


def parse_headers(raw: Any) -> dict[str, str]:
    """A JSON object, or its text, or "Name: value" lines -> a dict; one-line errors otherwise."""
    if raw in (None, "", {}):
        return {}
    if isinstance(raw, str):
        text = raw.strip()
        raw = _json_object(text) if text.startswith("{") else _header_lines(text)
    if not isinstance(raw, dict) or not all(isinstance(v, str | int | float) for v in raw.values()):
        raise ToolFailed('headers must be an object of strings, e.g. {"Accept": "application/json"}')
    headers = {str(k).strip(): str(v).strip() for k, v in raw.items()}
    for name, value in headers.items():
        if not name or any(c in name + value for c in "\r\n\0") or ":" in name:
            raise ToolFailed(f"header {name!r} has a bad name or value")
        if name.lower() in ("host", "content-length", "transfer-encoding", "connection"):
            raise ToolFailed(f"header {name!r} is set by hearth; put the host in the URL")
    return headers


def _json_object(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise ToolFailed("headers look like JSON but do not parse; use an object of strings") from None


def _header_lines(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if line.strip():
            name, colon, value = line.partition(":")
            if not colon:
                raise ToolFailed(f"header line {line.strip()[:80]!r} has no ':'; write Name: value")
            out[name] = value
    return out


def describe_reply(reply: Reply, method: str) -> str:
    from agent.net.readable import readable

    lines = [f"HTTP {reply.status} {reply.reason}".rstrip()]
    if reply.redirects:
        lines.append(f"(after {len(reply.redirects)} redirect(s); final URL {reply.url})")
    lines += [f"{name}: {reply.headers[name]}" for name in SHOWN_HEADERS if name in reply.headers]
    if method == "HEAD" or not reply.body:
        return "\n".join(lines + ["", "(no body)"])
    try:
        body = readable(reply).text
    except NetError:
        body = f"({len(reply.body)} bytes of {reply.content_type or 'binary data'}, not shown)"
    return "\n".join(lines + ["", body])


_URL = {"type": "string"}
_TIMEOUT = {**integer("1 to 120 (default 20).", 1, 120), "hidden": True}  # a hint names it after a timeout

TOOLS = [
    Tool(
        name="web_fetch",
        description="Fetch a web page and answer a question from it.",
        params={
            "url": _URL,
            "question": {"type": "string"},
            "timeout_s": _TIMEOUT,
        },
        required=("url",),
        fn=web_fetch,
        risk="dangerous",
        outside="url",
    ),
    Tool(
        name="http_request",
        description="Send an HTTP request; a header value cred:NAME becomes that credential.",
        params={
            "url": _URL,
            "method": {"type": "string", "enum": list(METHODS)},
            "headers": {"type": "object"},
            "body": {"type": "string"},
            "timeout_s": _TIMEOUT,
        },
        required=("url",),
        fn=http_request,
        risk="dangerous",
        outside="url",
    ),
    Tool(
        name="fetch_to_kb",
        description="Fetch a web page into the knowledge base.",
        params={
            "url": _URL,
            "title": {"type": "string"},
            "scope": {"type": "string", "enum": ["global", "agent"]},
            "timeout_s": _TIMEOUT,
        },
        required=("url",),
        fn=fetch_to_kb,
        risk="dangerous",
        outside="url",
    ),
]
