"""Pause: while `<state_dir>/paused.json` exists, nothing starts; requests wait in the queue.

`hearth pause` writes the file atomically with who paused and when, so it survives a restart;
`hearth resume` removes it. The spawner (`hearth spawn`, `hearth watch`) looks before each pass
and claims nothing while it is there: requests are neither rejected nor lost, timers and missions
still enqueue, runs already going carry on (`hearth stop --all` stops them). `hearth state` and
the command center say "paused since ..., by ...".
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from agent.clock import utc_now
from hearth.atomic import write_atomic
from hearth.settings import Settings

PAUSE_FILE = "paused.json"


@dataclass(frozen=True)
class Paused:
    by: str
    since: str
    reason: str = ""

    def line(self) -> str:
        why = f" ({self.reason})" if self.reason else ""
        return f"paused since {self.since}, by {self.by}{why}"


def pause_path(settings: Settings) -> Path:
    return settings.state_dir / PAUSE_FILE


def paused(settings: Settings) -> Paused | None:
    """The pause in force, or None; a torn or foreign file still counts as paused (safe side)."""
    try:
        data = json.loads(pause_path(settings).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return Paused(by="unknown", since="unknown", reason=f"{pause_path(settings)} is unreadable")
    if not isinstance(data, dict):
        return Paused(by="unknown", since="unknown")
    return Paused(str(data.get("by") or "unknown"), str(data.get("since") or "unknown"), str(data.get("reason") or ""))


def pause(settings: Settings, *, by: str, reason: str = "") -> Paused:
    """Pause (or say who already did); the file is whole or absent, never half-written."""
    current = paused(settings)
    if current is not None:
        return current
    settings.writable_state_dir()
    done = Paused(by=by, since=utc_now(), reason=reason)
    write_atomic(pause_path(settings), json.dumps(asdict(done)).encode() + b"\n")
    os.chmod(pause_path(settings), 0o644)  # no secret in it; the spawner (user hearth) must read it
    return done


def resume(settings: Settings) -> Paused | None:
    """Resume; the pause that was in force, or None when there was none."""
    current = paused(settings)
    try:
        os.unlink(pause_path(settings))
    except FileNotFoundError:
        return None
    return current
