"""Every child hearth starts is waited for or ended before hearth exits.

The test process becomes a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so whatever a hearth-loop
leaves behind (a zombie, or a process still running) is re-parented to it and can be seen in /proc.
"""

from __future__ import annotations

import ctypes
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer

PR_SET_CHILD_SUBREAPER = 36


@pytest.fixture
def subreaper() -> Iterator[None]:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        pytest.skip(f"prctl(PR_SET_CHILD_SUBREAPER) failed: errno {ctypes.get_errno()}")
    try:
        yield
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def adopted() -> dict[int, tuple[str, str]]:
    """This process's children by pid: (command name, state), zombies included."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
        if int(ppid) == os.getpid():
            found[int(entry.name)] = (name, state)
    return found


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="the sandbox probe is bwrap's")
def test_a_hearth_loop_that_runs_no_command_leaves_no_sandbox_probe_behind(state_dir: Path, subreaper: None) -> None:
    before = set(adopted())
    with FakeOllama([final_answer("nothing to run")]) as fake:
        done = run_cli("hearth-loop", "say hello", env={"OLLAMA_HOST": fake.url, "HEARTH_SANDBOX": "auto"})
    assert done.returncode == 0, done.stderr
    left = {pid: what for pid, what in adopted().items() if pid not in before}
    for pid in left:  # reaped here, whatever the verdict, so no zombie outlives the test
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    assert left == {}
