"""Run a command in the real sandbox as root (this process) or as an ordinary user (uid 65534 through
setpriv), the same way: a child process that calls run_sandboxed and prints the result as JSON.

    python -m tests.walls_support '{"command": ..., "workspace": ..., "policy": {...}}'

The ordinary user must reach the checkout and its venv. From a clone it cannot enter (a checkout
under /root, or inside a `mktemp -d` directory, mode 0700), `checkout(who)` and `python(who)` give
it a copy it can read instead: the checkout's code and the venv, hard-linked into a directory of
its own on the same filesystem (copied where that cannot be), made once per test process and
removed at its end. Where even that copy is not readable to it, the test skips saying why.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOBODY = 65534
# sandboxed() exposes the checkout (checkout(who)) for probes that import hearth; they run the
# system's python3
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


def checkout(who: str) -> Path:
    """The checkout as `who` sees it: this one, or the ordinary user's readable copy (module doc)."""
    return ROOT if who != "user" or os.geteuid() != 0 else _user_copy()[0]


def python(who: str) -> str:
    """The venv's interpreter as `who` runs it (in the readable copy where the user needs one)."""
    return sys.executable if who != "user" or os.geteuid() != 0 else _user_copy()[1]


def _reaches(prefix: list[str], python: str, root: Path) -> str:
    """'' when the ordinary user can import the checkout's code and its venv's libraries from
    `root` with `python`; else what it said."""
    done = subprocess.run(
        [*prefix, python, "-c", "import agent.safety.sandbox, hearth.cli.loop, pytest, tests.walls_support"],
        cwd="/",
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    return "" if done.returncode == 0 else (done.stderr.strip().splitlines() or ["(no output)"])[-1]


@functools.cache
def _user_copy() -> tuple[Path, str]:
    return readable_copy(ROOT, sys.executable)


def readable_copy(root: Path, interpreter: str) -> tuple[Path, str]:
    """(a checkout root, an interpreter) the ordinary user can use: `root` and `interpreter`
    (a venv's) when it can already, else a copy of both made for it (removed when this process
    ends); skips when it can use neither."""
    prefix = as_who("user")
    if not _reaches(prefix, interpreter, root):
        return root, interpreter
    venv = Path(interpreter).parent.parent
    if not (venv / "pyvenv.cfg").is_file():
        pytest.skip(f"the ordinary user cannot reach {root}, and {interpreter} is no venv's to copy")
    place = _copy_place(root)
    atexit.register(shutil.rmtree, place, True)
    tree = place / "checkout"
    tree.mkdir()
    for name in ("agent", "hearth", "tests"):
        link_tree(root / name, tree / name)
    link_tree(venv, place / "venv")
    copied = str(place / "venv" / Path(interpreter).relative_to(venv))
    said = _reaches(prefix, copied, tree)
    if said:
        pytest.skip(
            f"the ordinary user (uid {NOBODY}) cannot reach {root} (a parent directory it may not enter), "
            f"nor the copy made for it in {place}: {said}"
        )
    return tree, copied


def _copy_place(root: Path) -> Path:
    """A new directory every user may enter, on the checkout's filesystem where there is one."""
    device = root.stat().st_dev
    places = [Path(p) for p in ("/var/tmp", "/tmp", tempfile.gettempdir()) if Path(p).is_dir()]
    same = [p for p in places if p.stat().st_dev == device]
    place = Path(tempfile.mkdtemp(prefix="hearth-tests-as-user-", dir=(same or places)[0]))
    place.chmod(0o755)
    return place


def link_tree(source: Path, target: Path) -> None:
    """source's tree at target: directories made world-enterable, files hard-linked (copied where a
    link cannot be made), symlinks as they are; caches and the test tools' browsers left out."""

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst, follow_symlinks=False)
        except OSError:
            shutil.copy2(src, dst, follow_symlinks=False)

    shutil.copytree(
        source,
        target,
        symlinks=True,
        copy_function=link,
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "playwright", ".mypy_cache"),
    )
    for directory, _, _ in os.walk(target):
        os.chmod(directory, 0o755)


def give_to_user(who: str, *paths: Path) -> None:
    """Make test directories the ordinary user's, so its sandbox can write its workspace."""
    if who != "user" or os.geteuid() != 0:
        return
    for path in paths:
        for place in [path, *path.rglob("*")]:
            os.chown(place, NOBODY, NOBODY, follow_symlinks=False)


def sandboxed(who: str, command: str, workspace: Path, **policy: Any) -> dict[str, Any]:
    """The CommandResult (as a dict) of ``command`` run by hearth running as ``who``."""
    root = checkout(who)
    policy.setdefault("expose", (str(root),))
    plan = {"command": command, "workspace": str(workspace), "policy": policy}
    done = subprocess.run(
        [*as_who(who), python(who), "-m", "tests.walls_support", json.dumps(plan)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(root)},
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
