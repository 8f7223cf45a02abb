"""Atomic file replacement: readers see the old file or the new one, whole, never a torn write."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Temp file in the same directory, fsync, rename: readers see the old or the new file, whole.

    `durable=False` skips the fsync: still atomic for readers, but a power cut may lose the update
    (fine for live state, which the next update replaces anyway).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
