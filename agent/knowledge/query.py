"""Free text meeting the FTS5 index: the MATCH a search runs, the scope tokens, the snippet shown.

`fts_query` quotes every word (no operator injection), drops stopwords and caps the terms;
`chunk_match` adds the scope filter a chunk search needs; `snippet` cuts the piece of a hit
around the first query word. A room of its own because it is pure text work, no database: which
words a search asks for can be read, and changed, without reading how rows are stored.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_QUERY_TERMS = 24
_WORD = re.compile(r"\w+", re.UNICODE)
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "could",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "should",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "this",
        "to",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "please",
    ]
)


def fts_query(text: str) -> str | None:
    """Free text -> an FTS5 query: each word quoted (no operator injection), OR'ed, stopwords dropped."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))
    kept = [w for w in words if w not in STOPWORDS] or words
    kept = kept[:MAX_QUERY_TERMS]
    return " OR ".join(f'"{w}"' for w in kept) if kept else None


def snippet(text: str, query: str, width: int = 320) -> str:
    """About `width` characters of text around the first place a query word (or its stem) occurs."""
    words = [w for w in (fts_query(query) or "").replace('"', "").split(" OR ") if w]
    stems = sorted({w[: max(4, len(w) - 3)] for w in words}, key=len, reverse=True)
    found = re.search(r"\b(?:" + "|".join(map(re.escape, stems)) + ")", text, re.I) if stems else None
    start = max(0, (found.start() if found else 0) - width // 4)
    if start:
        space = text.find(" ", start)
        start = space + 1 if 0 <= space < start + 30 else start
    piece = " ".join(text[start : start + width].split())
    return ("… " if start else "") + piece + (" …" if start + width < len(text) else "")


def scope_token(scope: str) -> str:
    """One index token per scope that no other scope (nor any word) can produce: s + hex."""
    return "s" + scope.encode().hex()


def chunk_match(query: str, scopes: Iterable[str] | None) -> str | None:
    """The MATCH of a chunk search: the query's words in a title or text, within these scopes."""
    words = fts_query(query)
    if words is None:
        return None
    match = "{title text} : (" + words + ")"
    if scopes is not None:
        match += " AND scope : (" + " OR ".join(f'"{scope_token(s)}"' for s in scopes) + ")"
    return match
