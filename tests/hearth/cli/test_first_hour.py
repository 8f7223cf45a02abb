"""The first hour of a newcomer, through the real console scripts: the demo's next steps paste as
printed, a run never stays `running` once its process is gone, a closed pipe never kills a run,
and a model turn is never silent (a live thinking line at a terminal, retries said aloud)."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_support import loop_process, start_blocked_run
from tests.conftest import ROOT, run_cli
from tests.fake_ollama import FakeOllama, Held, final_answer, tool_call
from tests.queue_support import wait_for


def run_row(state_dir: Path, run_id: str | None = None) -> dict[str, object]:
    conn = sqlite3.connect(state_dir / "audit.db")
    conn.row_factory = sqlite3.Row
    rows = [dict(r) for r in conn.execute("select * from runs order by started_at desc, rowid desc")]
    conn.close()
    return next(r for r in rows if run_id in (None, r["id"]))


def read_until(fd: int, pattern: str, seen: bytearray, timeout: float = 30) -> re.Match[str]:
    """Read a pty until `pattern` shows in what it printed (the marker), or fail after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(pattern, seen.decode(errors="replace"))
        if found:
            return found
        if select.select([fd], [], [], 0.5)[0]:
            try:
                seen += os.read(fd, 4096)
            except OSError:  # the other side closed
                break
    raise AssertionError(f"never saw {pattern!r} in {seen.decode(errors='replace')!r}")


# -- the README's own path (tests/test_docs.py checks every page's commands) -----------------------


def test_the_demo_ends_with_commands_that_work_when_pasted_into_a_clean_shell(tmp_path: Path) -> None:
    env = {"HEARTH_STATE_DIR": str(tmp_path / ".hearth"), "HEARTH_CONFIG_DIR": str(tmp_path / "cfg")}
    demo = run_cli("hearth", "demo", env={**env, "OLLAMA_HOST": "127.0.0.1:9"}, cwd=tmp_path, timeout=120)
    assert demo.returncode == 0, demo.stderr
    tail = demo.stdout.split("next, paste:\n", 1)[1].splitlines()
    commands = [line.split("   # ")[0].strip() for line in tail if line.startswith("  ")]
    assert len(commands) == 3 and "--state-dir .hearth" in commands[0]
    run_id = re.search(r"recorded as run (\S+) in", demo.stdout).group(1)  # type: ignore[union-attr]
    # pasted where the demo ran, by someone whose shell knows nothing of HEARTH_STATE_DIR or the venv
    clean = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HEARTH_CONFIG_DIR": str(tmp_path / "cfg")}
    for command in commands:
        done = subprocess.run(["sh", "-c", command], cwd=tmp_path, env=clean, capture_output=True, text=True)
        assert done.returncode == 0, (command, done.stdout, done.stderr)
        assert run_id in done.stdout or "self-test passed" in done.stdout


def test_the_demo_says_it_approves_every_command_before_it_starts(state_dir: Path) -> None:
    demo = run_cli("hearth", "demo", env={"OLLAMA_HOST": "127.0.0.1:9"}, timeout=120)
    before = demo.stdout.split("[1]", 1)[0]
    assert "approves every command the model proposes" in before and "hearth demo --ask" in before
    readme = (ROOT / "README.md").read_text()
    assert "approves every command" in readme and "--ask" in readme


def test_the_bootstrap_says_what_it_installs_and_lets_pip_show_its_progress(tmp_path: Path) -> None:
    venv, bin_dir = tmp_path / "venv", tmp_path / "bin"
    (venv / "bin").mkdir(parents=True)
    bin_dir.mkdir()
    calls = tmp_path / "pip-args"
    fake_python = venv / "bin" / "python"  # the venv exists: bootstrap only installs into it
    fake_python.write_text(f'#!/bin/sh\necho "$@" >> {calls}\necho "Collecting httpx"\n')
    fake_python.chmod(0o755)
    (bin_dir / "id").write_text("#!/bin/sh\necho 1000\n")  # not root: no apt, whatever is missing here
    (bin_dir / "id").chmod(0o755)
    done = subprocess.run(
        ["sh", str(ROOT / "scripts" / "bootstrap.sh")],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "VENV": str(venv)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    says = lines.index(f"bootstrap: installing hearth and its test tools into {venv} with pip")
    assert lines[says + 1] == "Collecting httpx"  # pip's own lines come through
    assert "-q" not in calls.read_text().split() and "-e .[test]" in calls.read_text()
    assert (venv / ".installed").exists()


# -- runs that never end --------------------------------------------------------------------------


@pytest.fixture
def blocked() -> Iterator[tuple[FakeOllama, threading.Event]]:
    """A model that holds its first reply until the test lets it go."""
    release = threading.Event()
    with FakeOllama([Held(final_answer("all done here"), 1, release)]) as fake:
        yield fake, release
        release.set()


@pytest.mark.parametrize(
    "command",
    [["runs", "--json"], ["state", "--json"], ["show", "--json"], ["spawn", "--local"]],
    ids=["runs", "state", "show", "spawn"],
)
def test_a_run_whose_process_is_gone_is_settled_interrupted_by_the_next_command_that_looks(
    state_dir: Path, tmp_path: Path, blocked: tuple[FakeOllama, threading.Event], command: list[str]
) -> None:
    fake, _ = blocked
    loop, run_id = start_blocked_run(state_dir, fake, tmp_path)
    alive = run_cli("hearth", "runs", "--json")
    assert [r["status"] for r in json.loads(alive.stdout) if r["id"] == run_id] == ["running"]  # alive: left be
    loop.kill()  # SIGKILL: nothing of hearth's runs after this
    loop.wait()
    looked = run_cli("hearth", *command)
    assert looked.returncode == 0, looked.stderr
    run = run_row(state_dir, run_id)
    assert run["status"] == "interrupted" and "process is gone" in str(run["error"])
    assert json.loads(run_cli("hearth", "state", "--json").stdout)["active"] == []
    assert not (state_dir / "state" / f"{run_id}.json").exists()


def test_a_marathon_between_its_legs_and_during_them_is_never_taken_for_a_dead_run(
    state_dir: Path, tmp_path: Path, blocked: tuple[FakeOllama, threading.Event]
) -> None:
    fake, release = blocked
    args = ("--workspace", str(tmp_path / "ws"), "--marathon", "2", "wait here")
    loop = loop_process(fake.url, *args, stdout=subprocess.PIPE)
    assert loop.stdout is not None
    first = loop.stdout.readline()  # the first leg's id: the marathon's row is written before it
    assert re.match(r"== run \S+-leg1 ", first), first
    wait_for(lambda: fake.requests, what="the first leg's model to be asked")
    looked = run_cli("hearth", "runs", "--json")
    marathons = [r for r in json.loads(looked.stdout) if r["kind"] == "marathon"]
    assert [r["status"] for r in marathons] == ["running"]  # its process holds the marathon's lock
    release.set()
    loop.communicate(timeout=120)
    assert run_row(state_dir, marathons[0]["id"])["status"] != "interrupted"


def test_a_closed_output_pipe_does_not_stop_the_run(state_dir: Path, tmp_path: Path) -> None:
    release = threading.Event()
    script = [Held(tool_call("list_files", {"path": "."}), 0, release), final_answer("listed it")]
    with FakeOllama(script) as fake:
        loop = loop_process(
            fake.url, "--workspace", str(tmp_path / "ws"), "list it", stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert loop.stdout is not None and loop.stderr is not None
        assert loop.stdout.readline().startswith("== run ")  # `| head -1` has its line ...
        loop.stdout.close()  # ... and is gone
        release.set()
        err = loop.stderr.read()
        assert loop.wait(timeout=60) == 0, err
    assert "BrokenPipe" not in err and "internal error" not in err
    run = run_row(state_dir)
    assert run["status"] == "done" and run["summary"] == "listed it" and run["iterations"] == 2


# -- a model turn is never silent -----------------------------------------------------------------


def test_at_a_terminal_the_model_s_turn_shows_elapsed_time_and_streamed_tokens(state_dir: Path, tmp_path: Path) -> None:
    release = threading.Event()
    reply = final_answer("a" * 70)  # ten chunks of seven characters; five stream, then the model "thinks"
    with FakeOllama([Held(reply, 5, release)]) as fake:
        master, slave = pty.openpty()
        loop = loop_process(fake.url, "--workspace", str(tmp_path / "ws"), "think", stdout=slave, stderr=slave)
        os.close(slave)
        seen = bytearray()
        run_id = read_until(master, r"== run (\S+) ", seen).group(1)
        read_until(master, r"\[1\] thinking\.\.\. \d+ s, 5 tokens", seen)
        release.set()
        read_until(master, r"== done: a{70}", seen)
        loop.wait(timeout=30)
        os.close(master)
    shown = seen.decode()
    (tmp_path / "terminal.txt").write_text(shown)  # what the person saw, for a look by hand
    assert loop.returncode == 0 and run_id in shown
    after = shown.split("5 tokens", 1)[1]
    assert "\r\x1b[K[1] model replied" in after  # the live line is cleared, then the event's own line


def test_json_lines_at_a_terminal_are_events_only(state_dir: Path, tmp_path: Path) -> None:
    with FakeOllama([tool_call("list_files", {"path": "."}), final_answer("ok")]) as fake:
        master, slave = pty.openpty()
        loop = loop_process(fake.url, "--json", "--workspace", str(tmp_path / "ws"), "go", stdout=slave)
        os.close(slave)
        seen = bytearray()
        read_until(master, r'"event": "run_finished"', seen)
        loop.wait(timeout=30)
        os.close(master)
    lines = seen.decode().replace("\r\n", "\n").strip().splitlines()
    events = [json.loads(line)["event"] for line in lines]  # every line is one JSON object
    assert events[0] == "run_started" and events[-1] == "run_finished" and "thinking" in events


def test_an_unreachable_ollama_says_what_is_retried(state_dir: Path, tmp_path: Path) -> None:
    proc = run_cli("hearth-loop", "--ollama-host", "127.0.0.1:9", "--workspace", str(tmp_path / "ws"), "hello")
    assert proc.returncode == 4
    retries = [line for line in proc.stdout.splitlines() if "trying again in" in line]
    assert len(retries) == 3 and "(attempt 2 of 4): cannot reach Ollama at http://127.0.0.1:9" in retries[0]
    assert "connection refused" in proc.stderr


def test_a_killed_run_is_followed_to_its_end_and_the_follower_exits_with_its_status(
    state_dir: Path, tmp_path: Path, blocked: tuple[FakeOllama, threading.Event]
) -> None:
    fake, release = blocked
    loop, run_id = start_blocked_run(state_dir, fake, tmp_path)
    follow = subprocess.Popen(
        [sys.executable, "-m", "hearth.cli.main", "show", run_id[:12], "--follow"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert follow.stdout is not None
    assert follow.stdout.readline().startswith(f"run {run_id}  running")
    os.kill(loop.pid, signal.SIGKILL)
    loop.wait()
    out = follow.stdout.read()
    assert follow.wait(timeout=30) == 130  # interrupted's exit code, as hearth-loop's own
    assert "== interrupted: the run's process is gone" in out
    release.set()


def test_show_follow_prints_steps_as_they_happen_and_exits_with_the_run_s_code(state_dir: Path, tmp_path: Path) -> None:
    release = threading.Event()
    script = [tool_call("list_files", {"path": "."}), Held(final_answer("it is empty"), 0, release)]
    with FakeOllama(script) as fake:
        loop = loop_process(fake.url, "--workspace", str(tmp_path / "ws"), "look", stdout=subprocess.PIPE)
        assert loop.stdout is not None
        run_id = re.match(r"== run (\S+) ", loop.stdout.readline()).group(1)  # type: ignore[union-attr]
        follow = subprocess.Popen(
            [sys.executable, "-m", "hearth.cli.main", "show", "--follow"],  # no id: the latest run
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE,
            text=True,
        )
        assert follow.stdout is not None
        seen = ""
        while "list_files" not in seen:
            seen += follow.stdout.readline()
        release.set()
        seen += follow.stdout.read()
        assert follow.wait(timeout=30) == 0 and loop.wait(timeout=30) == 0
    assert seen.startswith(f"run {run_id}  running") and seen.rstrip().endswith("== done: it is empty")
