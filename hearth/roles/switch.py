"""A role switched off and on: its heartbeats skip (recorded) and its requests are refused, with the reason.

Two switches, either of which turns a role off: `enabled = false` in its agent.toml (the
operator's config, as NixOS writes it) and `hearth roles disable NAME` (a file in the state
directory, `<state>/role-switches/NAME.json`: who, when, why), which `hearth roles enable NAME`
removes. The file lies outside the role's home, so no run of the role can switch itself back on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent.clock import utc_now
from hearth.atomic import write_atomic
from hearth.settings import Settings


def switches_dir(settings: Settings) -> Path:
    return settings.state_dir / "role-switches"


def switched_off_by(settings: Settings, name: str) -> dict[str, Any] | None:
    """Who switched the role off with `hearth roles disable`, when and why; None when nobody did."""
    path = switches_dir(settings) / f"{name}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"by": "unknown", "since": "unknown", "reason": f"{path} is unreadable"}
    return data if isinstance(data, dict) else {"by": "unknown", "since": "unknown", "reason": ""}


def off_reason(settings: Settings, name: str, enabled: bool) -> str:
    """Why the role is off, in one line; "" when it is on."""
    if not enabled:
        return f"role {name} is switched off (enabled = false in its agent.toml)"
    off = switched_off_by(settings, name)
    if off is None:
        return ""
    why = f": {off['reason']}" if off.get("reason") else ""
    return f"role {name} is switched off (by {off.get('by')} at {off.get('since')}{why}); hearth roles enable {name}"


def disable(settings: Settings, name: str, *, by: str, reason: str = "") -> dict[str, Any]:
    """Switch the role off; an already switched-off role keeps its first record."""
    current = switched_off_by(settings, name)
    if current is not None:
        return current
    record = {"by": by, "since": utc_now(), "reason": reason}
    path = switches_dir(settings) / f"{name}.json"
    write_atomic(path, json.dumps(record).encode() + b"\n")
    path.chmod(0o644)  # no secret in it; the role's runs (user hearth) must read it
    return record


def enable(settings: Settings, name: str) -> dict[str, Any] | None:
    """Switch the role back on; what had switched it off (None: nothing had)."""
    current = switched_off_by(settings, name)
    (switches_dir(settings) / f"{name}.json").unlink(missing_ok=True)
    return current
