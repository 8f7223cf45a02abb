"""`python -m hearth.remote.job` as tests/remote_launcher.py runs it, every file it opens listed.

With OPENED set in its environment, an audit hook (PEP 578) notes each path the job's process
opens (Python's open, os.open, and each SQLite database it connects to) and writes the list to
that file as the process exits, so a test can show the job never touched the hub's audit.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import Any

SEEN: set[str] = set()


def _noted(event: str, args: tuple[Any, ...]) -> None:
    if event in ("open", "sqlite3.connect") and args and isinstance(args[0], str | bytes | os.PathLike):
        SEEN.add(os.path.abspath(os.fsdecode(args[0])))


def _write(path: str) -> None:
    listed = "".join(f"{name}\n" for name in sorted(SEEN))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, listed.encode())
    os.close(fd)


if __name__ == "__main__":
    opened = os.environ.get("OPENED")
    if opened:
        sys.addaudithook(_noted)
        atexit.register(_write, opened)
    from hearth.remote.job import main  # after the hook: what importing hearth opens is listed too

    sys.exit(main())
