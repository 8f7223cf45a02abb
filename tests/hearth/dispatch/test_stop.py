"""hearth/dispatch/stop.py: a run stopped wherever it is, recorded `interrupted` with who stopped it."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hearth.audit.store import AuditStore, RunRecord
from hearth.dispatch.launchers import launcher_for
from hearth.dispatch.stop import NotRunning, stop_all, stop_run
from hearth.errors import NotFound
from hearth.queue.directory import Queue
from hearth.queue.request import Request
from hearth.settings import Settings
from tests.cli_support import start_watch, stop_watch
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.queue_support import FakeSystemctl, Gate, listing, rows, wait_for

HOLDER = """
import fcntl, os, signal, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
os.ftruncate(fd, 0)
os.write(fd, f"{os.getpid()}\\n".encode())
if sys.argv[2] == "ignore":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
time.sleep(60)
"""


def _settings() -> Settings:
    return Settings.from_env()


def _claimed_running(state_dir: Path, run_id: str) -> Queue:
    """A claimed request whose run row says running, as a live run leaves them."""
    queue = Queue(state_dir / "queue").ensure()
    queue.enqueue(Request(id=run_id, goal=f"goal of {run_id}"))
    queue.claim(f"{run_id}.json")
    with AuditStore(state_dir / "audit.db") as audit:
        audit.start_run(RunRecord(id=run_id, agent_name="default", model="m", goal=f"goal of {run_id}", mode="auto"))
    return queue


@pytest.fixture
def holders() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        proc.kill()
        proc.wait()


def _hold(holders: list[subprocess.Popen[str]], queue: Queue, run_id: str, mode: str) -> subprocess.Popen[str]:
    """A process that holds the run's lock like a run does (in its own session, as local runs are)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(queue.lock_path(run_id)), mode],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    holders.append(proc)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def _pending(state_dir: Path) -> bool:
    try:
        return bool(rows(state_dir, "select 1 from approvals where status = 'pending'"))
    except sqlite3.OperationalError:  # the run has not created the audit yet
        return False


def _run(state_dir: Path, run_id: str) -> dict[str, object]:
    return rows(state_dir, "select * from runs where id = ?", run_id)[0]


def test_a_running_local_run_gets_sigterm_records_interrupted_with_who_and_keeps_its_request(state_dir: Path) -> None:
    gate = Gate()
    with FakeOllama([gate]) as fake:
        watch = start_watch({"OLLAMA_HOST": fake.url})
        try:
            Queue(state_dir / "queue").ensure().enqueue(Request(id="held", goal="wait at the gate"))
            assert gate.reached.wait(30)
            stopped = stop_run(_settings(), "held", by="web:ana", launcher=launcher_for(_settings(), "local"))
        finally:
            gate.opened.set()
            stop_watch(watch)
    assert (stopped.how, stopped.status) == ("signal", "interrupted")
    run = _run(state_dir, "held")
    assert run["status"] == "interrupted" and "stopped by web:ana" in str(run["error"])
    kinds = [s["kind"] for s in rows(state_dir, "select kind from steps where run_id = 'held' order by seq")]
    assert "stop" in kinds
    assert "held.json" in listing(state_dir / "queue" / "failed")
    assert not (state_dir / "state" / "held.json").exists()


def test_stopping_a_run_that_waits_for_approval_cancels_the_approval(state_dir: Path) -> None:
    script = [tool_call("run_command", {"command": "echo hi"}), final_answer("never")]
    with FakeOllama(script) as fake:
        watch = start_watch({"OLLAMA_HOST": fake.url})
        try:
            Queue(state_dir / "queue").ensure().enqueue(Request(id="asks", goal="run echo", mode="auto"))
            wait_for(lambda: _pending(state_dir), what="an approval")
            stopped = stop_run(_settings(), "asks", by="web:ana", launcher=launcher_for(_settings(), "local"))
        finally:
            stop_watch(watch)
    assert stopped.status == "interrupted"
    [approval] = rows(state_dir, "select status, note from approvals where run_id = 'asks'")
    assert approval["status"] == "cancelled"


def test_a_run_that_ignores_sigterm_is_killed_after_the_grace(state_dir: Path, holders: list) -> None:
    queue = _claimed_running(state_dir, "stubborn")
    proc = _hold(holders, queue, "stubborn", "ignore")
    stopped = stop_run(_settings(), "stubborn", by="cli:root", grace_s=0.3, launcher=launcher_for(_settings(), "local"))
    assert stopped.how == "killed" and proc.wait(5) < 0
    run = _run(state_dir, "stubborn")
    assert run["status"] == "interrupted" and run["error"] == "stopped by cli:root"
    assert "stubborn.json" in listing(queue.failed) and listing(queue.claimed) == []


def test_under_systemd_the_unit_is_stopped_and_what_it_could_not_record_is_recorded(
    state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    systemctl = FakeSystemctl(tmp_path)
    for name, value in systemctl.env().items():
        monkeypatch.setenv(name, value)
    queue = _claimed_running(state_dir, "unit-run")
    stopped = stop_run(_settings(), "unit-run", by="web:ana", launcher=launcher_for(_settings(), "systemd"))
    assert systemctl.calls == ["stop hearth-agent@unit-run.service"]
    assert (stopped.how, stopped.status) == ("systemd", "interrupted")
    assert "unit-run.json" in listing(queue.failed)


def test_a_request_still_waiting_is_taken_out_of_the_queue_and_never_runs(state_dir: Path) -> None:
    queue = Queue(state_dir / "queue").ensure()
    queue.enqueue(Request(id="early", goal="never start"))
    stopped = stop_run(_settings(), "early", by="web:ana")
    assert stopped.how == "dequeued" and not (queue.root / "early.json").exists()
    assert "early.json" in listing(queue.failed)
    run = _run(state_dir, "early")
    assert run["status"] == "interrupted" and run["goal"] == "never start"
    assert run["error"] == "stopped by web:ana before it started"


def test_a_finished_run_is_not_stopped_and_an_unknown_one_is_not_found(state_dir: Path) -> None:
    state_dir.mkdir()
    with AuditStore(state_dir / "audit.db") as audit:
        audit.start_run(RunRecord(id="over", agent_name="a", model="m", goal="g", mode="auto"))
        audit.finish_run("over", status="done")
    with pytest.raises(NotRunning, match="already ended \\(done\\)"):
        stop_run(_settings(), "over", by="x")
    with pytest.raises(NotFound):
        stop_run(_settings(), "nobody", by="x")
    assert _run(state_dir, "over")["status"] == "done"


def test_stop_all_stops_every_active_run_and_leaves_finished_ones(state_dir: Path, holders: list) -> None:
    queue = _claimed_running(state_dir, "one")
    _claimed_running(state_dir, "two")
    for run_id in ("one", "two"):
        _hold(holders, queue, run_id, "obey")
    stopped = stop_all(_settings(), by="web:ana", grace_s=5)
    assert sorted((s.run_id, s.status) for s in stopped) == [("one", "interrupted"), ("two", "interrupted")]
    assert listing(queue.claimed) == [] and sorted(listing(queue.failed))[:2] == ["one.json", "one.json.error.json"]
    assert os.listdir(queue.locks) == []
