"""A run's inbox: the attachments a chat sent with its goal, written before the run is queued
and moved into its workspace's `attachments/` by admission (hearth/run/admission.py), before the
run's first step. A leaf: admission stands below the channels and reads only this.

    <state>/channels/inbox/<run id>/<name>   names checked already (hearth/channels/attachments.py)
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

FOLDER = "attachments"  # in the workspace


def inbox(state_dir: Path, run_id: str) -> Path:
    return state_dir / "channels" / "inbox" / run_id


def put(state_dir: Path, run_id: str, name: str, data: bytes) -> str:
    """Write one file into the run's inbox, never over another (a second of one name gets `-2`);
    the name it was written under."""
    folder = inbox(state_dir, run_id)
    folder.mkdir(parents=True, exist_ok=True)
    found = free_name(folder, name)
    fd = os.open(folder / found, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o640)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    return found


def discard(state_dir: Path, run_id: str) -> None:
    """The inbox of a run that was never queued."""
    shutil.rmtree(inbox(state_dir, run_id), ignore_errors=True)


def take(state_dir: Path, run_id: str, root: Path) -> list[str]:
    """Move the run's inbox into `root/attachments/`; the paths they now have in the workspace."""
    folder = inbox(state_dir, run_id)
    if not folder.is_dir():
        return []
    target = root / FOLDER
    target.mkdir(exist_ok=True)
    moved = []
    for path in sorted(folder.iterdir()):
        name = free_name(target, path.name)
        shutil.move(str(path), str(target / name))
        moved.append(f"{FOLDER}/{name}")
    folder.rmdir()
    return moved


def free_name(folder: Path, name: str) -> str:
    """`name`, or `stem-2.ext`, `stem-3.ext` ... the first not taken in `folder`."""
    stem, dot, ext = name.rpartition(".")
    stem, ext = (stem, f".{ext}") if dot and stem else (name, "")
    found, n = name, 1
    while (folder / found).exists() or (folder / found).is_symlink():
        n += 1
        found = f"{stem}-{n}{ext}"
    return found
