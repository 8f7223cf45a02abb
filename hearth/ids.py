"""The one pattern every id hearth names a run or a request by must match (queue-spec/README.md),
and a request file's name as the records show it (`printable`)."""

import os

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"


def printable(name: str) -> str:
    """A file name as one line of text that JSON, SQLite and a terminal take as it is:
    undecodable bytes and control characters are shown escaped (\\xe9, \\n)."""
    text = os.fsencode(name).decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)
