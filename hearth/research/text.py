"""What "the same text" and "the same page" mean to a research run: one normalisation, one URL key.

    normalise(text)        what a page's snapshot keeps: NFKC, the invisible format characters
                           dropped, typographic quotes, apostrophes and dashes as their ASCII
                           forms, each line's runs of white space one space, no empty lines
    flat(text)             the same on one line: every run of white space one space
    verbatim(quote, text)  where an excerpt occurs in a snapshot, or None: both flat, with the
                           quotation marks or ellipses a model puts around a quotation taken off;
                           letters keep their case
    canonical(url)         the key two URLs of one page share: host lowercased, http and https
                           one, the default port, the fragment, tracking parameters and a
                           trailing slash dropped, the remaining parameters sorted
    query_key(query)       the key two spellings of one search share (case and spacing)
    quotations(text)       the spans a claim puts in quotation marks
    urls_in(text)          the web addresses written in a text

A leaf: the standard library only, so the audit's readers, the report and the run share it.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

# what a model writes around a quotation, and what a page's typography does to a quote
_TYPOGRAPHY = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
        "\u2026": "...",
    }
)
_SPACE = re.compile(r"\s+")
_WRAPPING = " \"'.\u2026*_`"  # quotation marks, ellipses and emphasis around a quoted span
MIN_QUOTE_CHARS = 12  # shorter than this, an excerpt proves nothing ("the", "in 2024")
TRACKING = re.compile(r"^(utm_[a-z]+|fbclid|gclid|mc_cid|mc_eid|ref_src)$", re.IGNORECASE)
_QUOTED = re.compile(rf"\"([^\"]{{{MIN_QUOTE_CHARS},}})\"")
_URL = re.compile(r"\b(?:https?://|www\.)[^\s<>()\"'\]\[]+", re.IGNORECASE)


def normalise(text: str) -> str:
    """`text` as a snapshot keeps it (see the module docstring): its lines, each one tidied."""
    folded = unicodedata.normalize("NFKC", text).translate(_TYPOGRAPHY)
    visible = "".join(c for c in folded if c in "\n\t" or unicodedata.category(c) != "Cf")
    lines = (_SPACE.sub(" ", line).strip() for line in visible.splitlines())
    return "\n".join(line for line in lines if line)


def flat(text: str) -> str:
    """`text` normalised onto one line: what an excerpt is looked for in."""
    return _SPACE.sub(" ", normalise(text))


def bare_quote(quote: str) -> str:
    """An excerpt flat, with what a model writes around a quotation taken off."""
    return flat(quote).strip(_WRAPPING).strip()


def verbatim(quote: str, flat_text: str) -> int | None:
    """Where `quote` occurs in a text already flat, or None (or when too short to prove anything)."""
    needle = bare_quote(quote)
    if len(needle) < MIN_QUOTE_CHARS:
        return None
    found = flat_text.find(needle)
    return found if found >= 0 else None


def canonical(url: str) -> str:
    """The key of the page `url` names (see the module docstring); '' for what is no web address."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return ""
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower().rstrip(".")
    if scheme not in ("http", "https") or not host:
        return ""
    default = {"http": 80, "https": 443}[scheme]
    netloc = host if port in (None, default) else f"{host}:{port}"
    path = re.sub(r"/{2,}", "/", parts.path or "/")
    if len(path) > 1:
        path = path.rstrip("/")
    query = sorted((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not TRACKING.match(k))
    return urlunsplit(("https" if scheme == "http" else scheme, netloc, path, urlencode(query), ""))


def query_key(query: str) -> str:
    """The key of a search: the same words, whatever their case and spacing."""
    return normalise(query).casefold()


def quotations(text: str) -> list[str]:
    """The spans of `text` in quotation marks ("..." or typographic ones), long enough to be a quote."""
    return [found.group(1) for found in _QUOTED.finditer(flat(text))]


def urls_in(text: str) -> list[str]:
    """The web addresses written in `text`, with the punctuation that ends a sentence taken off."""
    return [found.group(0).rstrip(".,;:!?") for found in _URL.finditer(text)]
