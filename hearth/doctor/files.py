"""The doctor's checks of where hearth keeps things, by path and mode: the state directory, the audit
database, the config tree, the queue and the credentials store.

Its own room because these checks share one question (who may write or read this path?) and one
promise: nothing is created or changed, and no credential value is read; the audit is only opened
read-only for SQLite's quick_check.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

from hearth.audit.reader import quick_check
from hearth.doctor.finding import Finding
from hearth.run.prompting import SOUL_FILE
from hearth.settings import Settings

# --- files and permissions -------------------------------------------------------------------


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def loose_write(path: Path, check: str, what: str) -> list[Finding]:
    """An error if others may write `path`, a warning if its group may (symlinks are judged by their target)."""
    try:
        mode = mode_of(path)
    except OSError as exc:
        return [Finding(check, "warn", f"cannot inspect {what} {path}: {exc.strerror or exc}", str(path))]
    if mode & stat.S_IWOTH:
        return [
            Finding(
                check,
                "error",
                f"{what} {path} is writable by every user (mode {mode:04o}); run: chmod o-w {path}",
                str(path),
            )
        ]
    if mode & stat.S_IWGRP:
        return [Finding(check, "warn", f"{what} {path} is writable by its group (mode {mode:04o})", str(path))]
    return []


def check_state_dir(settings: Settings) -> list[Finding]:
    path = settings.state_dir
    if not path.exists():
        parent = next((p for p in path.parents if p.exists()), Path("/"))
        if os.access(parent, os.W_OK):
            return [Finding("state", "warn", f"{path} does not exist yet; the first run creates it", str(path))]
        return [
            Finding(
                "state",
                "error",
                f"{path} does not exist and {parent} is not writable; "
                "set HEARTH_STATE_DIR to a directory you can write",
                str(path),
            )
        ]
    if not path.is_dir() or not os.access(path, os.W_OK | os.X_OK):
        return [Finding("state", "error", f"{path} is not a writable directory; set HEARTH_STATE_DIR", str(path))]
    found = loose_write(path, "state", "the state directory")
    return found or [Finding("state", "ok", f"{path} is writable (mode {mode_of(path):04o})", str(path))]


def check_audit(settings: Settings) -> list[Finding]:
    path = settings.audit_path
    if not path.exists():
        return [Finding("audit", "info", f"no audit database yet at {path}; the first run creates it", str(path))]
    try:
        verdict = quick_check(path)
    except sqlite3.Error as exc:
        return [Finding("audit", "error", f"cannot read the audit database {path}: {exc}", str(path))]
    if verdict != "ok":
        return [Finding("audit", "error", f"the audit database {path} is damaged: {verdict}", str(path))]
    return [Finding("audit", "ok", f"{path} reads and passes quick_check", str(path))]


def check_config_dir(settings: Settings) -> list[Finding]:
    path = settings.config_dir
    if not path.exists():
        return [
            Finding(
                "config",
                "info",
                f"no config directory at {path}: built-in profiles only, no prompts, "
                "no SOUL.md (set HEARTH_CONFIG_DIR)",
                str(path),
            )
        ]
    if not path.is_dir():
        return [Finding("config", "error", f"{path} is not a directory (HEARTH_CONFIG_DIR)", str(path))]
    found: list[Finding] = []
    for item in _config_tree(path):
        found += loose_write(item, "config", "config path")
    return found or [Finding("config", "ok", f"{path} and what it holds are writable only by their owner", str(path))]


def _config_tree(root: Path) -> list[Path]:
    """The config directory, its agents/ and prompts/ trees and SOUL.md: what shapes every prompt."""
    items = [root]
    for sub in (root / "agents", root / "prompts"):
        if sub.is_dir():
            items += [sub, *sorted(sub.rglob("*"))]
    return items + ([root / SOUL_FILE] if (root / SOUL_FILE).exists() else [])


# --- queue and credentials -------------------------------------------------------------------


def check_queue(settings: Settings) -> list[Finding]:
    path = settings.queue_dir
    if not path.exists():
        return [Finding("queue", "info", f"no queue directory yet at {path}", str(path))]
    if not path.is_dir():
        return [Finding("queue", "error", f"{path} is not a directory", str(path))]
    found: list[Finding] = []
    for item in [path, *sorted(p for p in path.iterdir() if p.is_dir())]:
        # its group writing is the design (the submitters, setgid 2770 on NixOS): only others matter
        found += [f for f in loose_write(item, "queue", "queue directory") if f.status == "error"]
    return found or [
        Finding("queue", "ok", f"{path} is not writable by every user (mode {mode_of(path):04o})", str(path))
    ]


def check_credentials(settings: Settings) -> list[Finding]:
    """The store (`credentials.json`, 0600), a `credentials/` directory if one exists (0700, files 0600),
    and systemd's $CREDENTIALS_DIRECTORY when set: by path and mode only, no value is read."""
    found = _systemd_credentials(settings.credentials_dir) if settings.credentials_dir else []
    store = settings.credentials_path
    if store.exists():
        found += _private(store, 0o600, "the credentials store") or [
            Finding("credentials", "ok", f"{store} is readable by its owner only (0600)", str(store))
        ]
    folder = settings.state_dir / "credentials"
    if folder.exists():
        loose = _private(folder, 0o700, "the credentials directory")
        for item in sorted(folder.rglob("*")):
            loose += _private(
                item, 0o700 if item.is_dir() else 0o600, "directory" if item.is_dir() else "credential file"
            )
        found += loose or [Finding("credentials", "ok", f"{folder} is 0700 and every file in it 0600", str(folder))]
    found += _action_key(settings.state_dir)
    return found or [
        Finding("credentials", "info", f"no credentials store at {store} (hearth creds set makes one)", str(store))
    ]


def _action_key(state_dir: Path) -> list[Finding]:
    """The key that signs alert links (hearth/leash/actions.py): whoever reads it can forge a link
    that decides an approval, so it is 0600 like a credential. Absent until the first alert link."""
    from hearth.leash.actions import key_path

    path = key_path(state_dir)
    if not path.exists():
        return []
    return _private(path, 0o600, "the alert-link signing key") or [
        Finding("credentials", "ok", f"the alert-link signing key {path} is readable by its owner only", str(path))
    ]


def _systemd_credentials(path: Path) -> list[Finding]:
    ok = path.is_dir() and os.access(path, os.R_OK | os.X_OK)
    return [
        Finding(
            "credentials",
            "ok" if ok else "error",
            f"systemd credentials at {path}" + ("" if ok else " are not a readable directory"),
            str(path),
        )
    ]


def _private(path: Path, expected: int, what: str) -> list[Finding]:
    mode = stat.S_IMODE(path.lstat().st_mode)
    if path.is_symlink() or mode & 0o077:
        return [
            Finding(
                "credentials",
                "error",
                f"{what} {path} has mode {mode:04o}, expected {expected:04o}; run: chmod {expected:o} {path}",
                str(path),
            )
        ]
    return []
