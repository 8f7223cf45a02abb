"""What `--version` prints: hearth's version and, when known, the commit it was built from.

The commit comes from `hearth/_commit.py` when the package was built with one (nix/package.nix
writes it from the flake's revision), else from git when hearth runs from a checkout, else it is
left out. Only `--version` asks, so no other command pays for a git call.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from hearth import __version__


def describe(program: str) -> str:
    """`hearth 0.1.0 (commit 1a2b3c4d5e6f)`, or without the commit when it is not known."""
    commit = _commit()
    return f"{program} {__version__}" + (f" (commit {commit})" if commit else "")


def _commit() -> str | None:
    try:
        from hearth._commit import COMMIT  # type: ignore[import-not-found]  # written at build time only

        return str(COMMIT) or None
    except ImportError:
        pass
    root = Path(__file__).resolve().parent.parent
    if not (root / ".git").exists():
        return None
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None
