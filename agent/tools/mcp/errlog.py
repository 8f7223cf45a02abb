"""A stdio server's stderr, kept on the host only as its last few thousand bytes.

The server writes into a pipe; a thread drains it and keeps the tail, where the one line a failure
quotes comes from. A server that floods its stderr costs hearth that read, never a file: a
temporary file grew up to the server's file-size limit (256 MiB), on the host, outside the walls.
"""

from __future__ import annotations

import os
import threading
from typing import TextIO

TAIL = 8192  # bytes of the server's stderr kept
SETTLE_S = 2.0  # how long a failure waits for the last words of a server that is ending


class ErrorLog:
    """One start's stderr. `writer` is what the server is given (the SDK wants a file); once the
    server is started, `started()` lets this process's copy of it go, so the drain ends with the server."""

    def __init__(self) -> None:
        read, write = os.pipe()
        self.writer: TextIO = os.fdopen(write, "w")
        self._tail = b""
        self._ended = threading.Event()
        threading.Thread(target=self._drain, args=(read,), name="mcp-stderr", daemon=True).start()

    def _drain(self, read: int) -> None:
        try:
            while chunk := os.read(read, 65536):
                self._tail = (self._tail + chunk)[-TAIL:]
        finally:
            os.close(read)
            self._ended.set()

    def started(self) -> None:
        """The server has its own copy of the pipe now (or never will): close this process's."""
        self.writer.close()

    def last_line(self, settle_s: float = SETTLE_S) -> str:
        """The last line the server wrote, once it has ended (or `settle_s` passed): '' if none."""
        self.started()
        self._ended.wait(settle_s)
        lines = [line.strip() for line in self._tail.decode("utf-8", "replace").splitlines() if line.strip()]
        return lines[-1] if lines else ""
