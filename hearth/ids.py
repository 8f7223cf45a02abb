"""The one pattern every id hearth names a run or a request by must match (queue-spec/README.md),
and a request file's name as the records show it (`printable`); the ids of runs made from a run
(`derived_id`: a marathon's legs, a swarm's children, a delegating run's children)."""

import hashlib
import os

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
MAX_ID = 64


def derived_id(parent: str, suffix: str) -> str:
    """`parent-suffix`, within the 64 characters an id may have (a digest keeps cut parents apart)."""
    full = f"{parent}-{suffix}"
    if len(full) <= MAX_ID:
        return full
    digest = hashlib.sha256(parent.encode()).hexdigest()[:6]
    return f"{parent[: MAX_ID - len(suffix) - 8]}-{digest}-{suffix}"


def printable(name: str) -> str:
    """A file name as one line of text that JSON, SQLite and a terminal take as it is:
    undecodable bytes and control characters are shown escaped (\\xe9, \\n)."""
    text = os.fsencode(name).decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)
