"""The real console scripts as processes: a run started and held, `hearth watch`, a line reader."""

from __future__ import annotations

import os
import queue as lines_queue
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from tests.conftest import ROOT
from tests.fake_ollama import FakeOllama
from tests.queue_support import wait_for


def start_cli(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "hearth.cli.main", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
    )


@contextmanager
def serving(port: int, env: dict[str, str], stderr: IO[str], *args: str) -> Iterator[subprocess.Popen[str]]:
    """`hearth serve --port PORT ARGS` as a process, its stderr to `stderr`; killed if still up after."""
    argv = [sys.executable, "-m", "hearth.cli.main", "serve", "--port", str(port), *args]
    serve = subprocess.Popen(argv, env={**os.environ, **env, "PYTHONPATH": str(ROOT)}, cwd=ROOT, stderr=stderr)
    try:
        yield serve
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()


def run_cli_input(argv: list[str], stdin: str) -> subprocess.CompletedProcess[str]:
    """`hearth ARGV` as a real process with this text on its stdin."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "hearth.cli.main", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=ROOT,
    )


def start_watch(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "hearth.cli.main", "watch", "--json", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
    )


def stop_watch(watch: subprocess.Popen[str]) -> tuple[str, str]:
    watch.send_signal(signal.SIGTERM)
    return watch.communicate(timeout=60)


def start_blocked_run(state_dir: Path, fake: FakeOllama, tmp_path: Path) -> tuple[subprocess.Popen[str], str]:
    loop = loop_process(fake.url, "--workspace", str(tmp_path / "ws"), "wait here", stdout=subprocess.PIPE)
    assert loop.stdout is not None
    first = loop.stdout.readline()  # the run id comes first: the marker that the run is recorded
    run_id = re.match(r"== run (\S+) ", first).group(1)  # type: ignore[union-attr]
    wait_for(lambda: fake.requests, what="the model to be asked")
    return loop, run_id


class Lines:
    """A process's stdout read line by line in a thread, so a test can wait for a marker."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.seen: list[str] = []
        self._lines: lines_queue.Queue[str] = lines_queue.Queue()
        threading.Thread(target=self._read, args=(proc,), daemon=True).start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self._lines.put(line)

    def wait_for(self, text: str, timeout: float = 30.0) -> str:
        found = next((line for line in self.seen if text in line), None)
        while found is None:
            line = self._lines.get(timeout=timeout)
            self.seen.append(line)
            found = line if text in line else None
        return found


def loop_process(fake_url: str, *args: str, **popen: object) -> subprocess.Popen[str]:
    """`hearth-loop` as a real process, as a person starts it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(  # type: ignore[call-overload]
        [sys.executable, "-m", "hearth.cli.loop", "--ollama-host", fake_url, *args],
        env=env,
        cwd=ROOT,
        text=True,
        **popen,
    )
