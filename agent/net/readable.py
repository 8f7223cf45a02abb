"""A fetched body -> readable text, by content type: HTML through trafilatura, text as is, JSON pretty.

Anything else (images, PDFs, archives, octet streams) is refused with a clear error rather than
turned into garbage. Without a content type the body is sniffed: NUL bytes mean binary, a
leading `<` with an html tag means HTML, else text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent.net.guard import FetchFailed

if TYPE_CHECKING:
    from agent.net.client import Reply

HTML_TYPES = {"text/html", "application/xhtml+xml"}
JSON_SUFFIX = "+json"
TEXT_TYPES = {
    "application/xml",
    "application/javascript",
    "application/x-yaml",
    "application/yaml",
    "application/toml",
    "application/x-sh",
    "application/sql",
    "application/csv",
}
JSON_PRETTY_LIMIT = 2_000_000


@dataclass
class Page:
    url: str
    title: str
    text: str
    kind: str  # html | text | json


def readable(reply: Reply) -> Page:
    kind = _kind(reply)
    if kind == "html":
        title, text = _html_text(reply.body)
    elif kind == "json":
        title, text = "", _json_text(reply.text())
    else:
        title, text = "", reply.text()
    if not text.strip():
        raise FetchFailed(f"{reply.url} has no readable text")
    return Page(reply.url, title, text.strip(), kind)


def _kind(reply: Reply) -> str:
    ctype = reply.content_type
    if ctype in HTML_TYPES:
        return "html"
    if ctype == "application/json" or ctype.endswith(JSON_SUFFIX):
        return "json"
    if ctype.startswith("text/") or ctype in TEXT_TYPES or ctype.endswith("+xml"):
        return "text"
    if not ctype:
        return _sniff(reply)
    raise FetchFailed(
        f"{reply.url} is {ctype} ({len(reply.body)} bytes), which cannot be read as text; "
        "web_fetch reads HTML, plain text and JSON"
    )


def _sniff(reply: Reply) -> str:
    head = reply.body[:4096]
    if b"\0" in head:
        raise FetchFailed(f"{reply.url} sent binary data without a content type; it cannot be read as text")
    lowered = head.lstrip().lower()
    if lowered.startswith(b"<") and (b"<html" in lowered or b"<!doctype html" in lowered):
        return "html"
    return "text"


def _html_text(body: bytes) -> tuple[str, str]:
    import trafilatura  # slow to import: only when a page is read

    document = trafilatura.bare_extraction(body, with_metadata=True, include_tables=True, favor_recall=True)
    if isinstance(document, dict):  # older trafilatura answers a dict, newer a Document
        title, text = document.get("title"), document.get("text")
    else:
        title, text = getattr(document, "title", None), getattr(document, "text", None)
    if (text or "").strip():
        return (title or "").strip(), str(text)
    return "", trafilatura.html2txt(body) or ""  # pages the extractor finds no main text in


def _json_text(text: str) -> str:
    if len(text) > JSON_PRETTY_LIMIT:
        return text
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return f"(the body is not valid JSON; shown as text)\n{text}"
