"""A waiting run's wake-up: a `<run id>.resume` name in the queue directory, after its approval is decided.

A queued run that waits for a person suspends (hearth/run/suspend.py): its process exits and its
request stays in claimed/ with the run recorded `waiting`. Whoever decides the approval (`hearth
approve|deny`, the command center, an alert's link) then drops this name where the spawner looks:
the path unit fires, `hearth watch` wakes, and the spawner starts the run again, which rebuilds
its conversation from the audit. The name carries nothing but the run's id: the spawner believes
only the audit (a wake-up for a run that is not waiting, or whose approval is still pending, is
removed and changes nothing), so anyone who may submit may wake, and waking twice is harmless.
"""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

from hearth.ids import ID_PATTERN
from hearth.settings import Settings

SUFFIX = ".resume"


def wake(settings: Settings, run_id: str) -> Path | None:
    """Ask the spawner to look at `run_id` again; the name written, or None where it cannot be.

    Never raises for a queue this process may not write: the run is still resumed by the next
    sweep (every spawner pass, `hearth watch`'s sweep, and at boot)."""
    if not re.fullmatch(ID_PATTERN, run_id):
        return None
    root = settings.queue_dir
    target = root / f"{run_id}{SUFFIX}"
    tmp = root / f".{run_id}{SUFFIX}.{secrets.token_hex(4)}.tmp"
    try:
        with open(tmp, "xb"):
            pass
        os.replace(tmp, target)  # a second wake-up for the same run is the same name
    except OSError:
        tmp.unlink(missing_ok=True)
        return None
    return target


def woken(name: str) -> str | None:
    """The run id a queue name wakes, or None when the name is not a wake-up."""
    if not name.endswith(SUFFIX):
        return None
    run_id = name[: -len(SUFFIX)]
    return run_id if re.fullmatch(ID_PATTERN, run_id) else None
