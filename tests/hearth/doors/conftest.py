"""The doors' fixtures: a key made as `hearth keys add` makes it, and the official clients' set-up."""

from __future__ import annotations

from pathlib import Path

from hearth.audit.store import AuditStore
from hearth.doors.keys import Key, add


def make_key(state_dir: Path, name: str = "webui", **limits: object) -> str:
    """A key in this test's audit; its secret."""
    state_dir.mkdir(parents=True, exist_ok=True)
    with AuditStore(state_dir / "audit.db") as audit:
        return add(
            audit, Key(name, tuple(limits.get("agents", ())), int(limits.get("budget", 0)), int(limits.get("rate", 0)))
        )  # type: ignore[call-overload]
