"""What the MCP run tests wait on and read: the toy server's marker files, the run's audit."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.context.envelope import opened
from hearth.audit.store import AuditStore


def served(tmp_path: Path, text: str = "Say the text back.") -> Path:
    """The file the toy's echo reads its description from (its path also marks this test's servers)."""
    description = tmp_path / "served" / "echo.txt"
    description.parent.mkdir(exist_ok=True)
    description.write_text(text)
    return description


def servers_of(marker: Path) -> list[int]:
    """Live processes whose command line names `marker` (this test's toy servers, bwrap's too)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if str(marker).encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def held(lock: Path) -> bool:
    """A toy server (started with `--lock lock`) is alive: the file exists and its lock is taken."""
    try:
        fd = os.open(lock, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def steps(state_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    with AuditStore(state_dir / "audit.db") as audit:
        [run] = audit.runs(1)
        rows = audit.rows("select * from steps where run_id = ? order by seq", [run["id"]])
    # a server's answer reaches the model enveloped as data (agent/context/envelope.py): the text inside
    return run, [{**r, "output": opened(r["output"] or "") or r["output"]} if r["kind"] == "tool" else r for r in rows]


def offered(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or []]


def described(request: dict[str, Any], name: str) -> str:
    """The description the model was shown of tool `name`."""
    [tool] = [t["function"] for t in request.get("tools") or [] if t["function"]["name"] == name]
    return str(tool["description"])


def until(condition: Callable[[], object], seconds: float = 60) -> bool:
    """Wait for `condition`, checking every 50 ms; whether it came before `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def calling(state_dir: Path, tool: str) -> bool:
    """The run's call of `tool` is open in the audit (written ahead, as every call)."""
    if not (state_dir / "audit.db").exists():
        return False
    with AuditStore(state_dir / "audit.db") as audit:
        return bool(audit.rows("select 1 from steps where kind = 'tool' and tool = ?", [tool]))


def pending(state_dir: Path) -> str:
    """The id of the approval the run waits on ("" while there is none)."""
    if not (state_dir / "audit.db").exists():
        return ""
    with AuditStore(state_dir / "audit.db") as audit:
        rows = audit.rows("select id from approvals where status = 'pending'")
    return rows[0]["id"] if rows else ""
