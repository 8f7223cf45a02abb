"""Run a command in the real sandbox as root (this process) or as an ordinary user (uid 65534 through
setpriv), the same way: a child process that calls run_sandboxed and prints the result as JSON.

    python -m tests.walls_support '{"command": ..., "workspace": ..., "policy": {...}}'
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOBODY = 65534
EXPOSE = (str(ROOT),)  # this checkout, for probes that import hearth; they run the system's python3
WHO = ("root", "user")


def as_who(who: str) -> list[str]:
    """The argv prefix that runs a program as ``who``; skips when that cannot be done here."""
    root = os.geteuid() == 0
    if who == "root":
        if not root:
            pytest.skip("this test process is not root, so hearth as root cannot be tried")
        return []
    if not root:
        return []  # already an ordinary user
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is needed to run the test as an ordinary user")
    return [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


def give_to_user(who: str, *paths: Path) -> None:
    """Make test directories the ordinary user's, so its sandbox can write its workspace."""
    if who != "user" or os.geteuid() != 0:
        return
    for path in paths:
        for place in [path, *path.rglob("*")]:
            os.chown(place, NOBODY, NOBODY, follow_symlinks=False)


def sandboxed(who: str, command: str, workspace: Path, **policy: Any) -> dict[str, Any]:
    """The CommandResult (as a dict) of ``command`` run by hearth running as ``who``."""
    policy.setdefault("expose", EXPOSE)
    plan = {"command": command, "workspace": str(workspace), "policy": policy}
    done = subprocess.run(
        [*as_who(who), sys.executable, "-m", "tests.walls_support", json.dumps(plan)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def main() -> None:
    from agent.safety.sandbox import SandboxPolicy, run_sandboxed

    plan = json.loads(sys.argv[1])
    policy = {k: tuple(v) if isinstance(v, list) else v for k, v in plan["policy"].items()}
    result = run_sandboxed(plan["command"], plan["workspace"], policy=SandboxPolicy(**policy), timeout_s=60)
    print(json.dumps(asdict(result)))


if __name__ == "__main__":
    main()


def accepted(server: socket.socket) -> int:
    count = 0
    while True:
        try:
            server.accept()[0].close()
        except BlockingIOError:
            return count
        count += 1


def wait_until_gone(marker: str, within_s: float = 2.0) -> list[int]:
    # SIGKILL is delivered asynchronously; give the kernel a moment to finish tearing down
    deadline = time.monotonic() + within_s
    while (left := processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def processes_with(marker: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue  # exited while we looked
        if marker.encode() in cmdline:
            found.append(int(pid))
    return found
