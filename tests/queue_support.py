"""Helpers for the queue tests: a recording fake `systemctl`, reading the audit, waiting, dropping files."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.fake_ollama import final_answer

FAKE_SYSTEMCTL = """#!/bin/sh
# A stand-in for systemctl: records its argv, answers is-failed from a file, fails start on request.
printf '%s\\n' "$*" >> "$SYSTEMCTL_LOG"
case "$1" in
  is-failed) cat "$SYSTEMCTL_STATES" 2>/dev/null || printf 'active\\ninactive\\n'; exit 0 ;;
  start) if [ -n "$SYSTEMCTL_FAIL_START" ]; then echo "Failed to start $3: Unit $3 not found." >&2; exit 5; fi ;;
esac
exit 0
"""


class FakeSystemctl:
    """An executable named systemctl first on PATH; `calls` are the argv lines it was run with."""

    def __init__(self, tmp: Path) -> None:
        self.bin = tmp / "fake-bin"
        self.bin.mkdir()
        script = self.bin / "systemctl"
        script.write_text(FAKE_SYSTEMCTL)
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
        self.log = tmp / "systemctl.log"
        self.states = tmp / "systemctl.states"

    def env(self, **extra: str) -> dict[str, str]:
        return {
            "PATH": f"{self.bin}:{os.environ['PATH']}",
            "SYSTEMCTL_LOG": str(self.log),
            "SYSTEMCTL_STATES": str(self.states),
            "HEARTH_LAUNCHER": "systemd",
            **extra,
        }

    def answer_is_failed(self, path_state: str, service_state: str) -> None:
        self.states.write_text(f"{path_state}\n{service_state}\n")

    @property
    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


def rows(state_dir: Path, sql: str, *params: Any) -> list[dict[str, Any]]:
    conn = sqlite3.connect(f"file:{state_dir / 'audit.db'}?mode=ro", uri=True)  # never creates it
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(sql, params)]
    finally:
        conn.close()


def runs_by_status(state_dir: Path) -> dict[str, int]:
    """Runs counted by status; empty until the first run has created the audit and its tables."""
    try:
        counted = rows(state_dir, "select status, count(*) as n from runs group by status")
    except sqlite3.OperationalError:
        return {}
    return {r["status"]: r["n"] for r in counted}


def wait_for(check: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def drop(queue: Path, name: str, body: Any) -> Path:
    """Drop a file the way a careful writer does: temp name, then rename into place."""
    queue.mkdir(parents=True, exist_ok=True)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    tmp = queue / f".{name}.tmp"
    tmp.write_bytes(data)
    tmp.rename(queue / name)
    return queue / name


def listing(directory: Path) -> list[str]:
    return sorted(os.listdir(directory)) if directory.is_dir() else []


class Gate:
    """A model reply that waits until the test opens the gate: a run held mid-way."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.reached = threading.Event()

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        self.reached.set()
        self.opened.wait(60)
        return final_answer("finished after the gate opened")
