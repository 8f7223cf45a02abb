"""`hearth watch` as a real process: files already waiting, new arrivals, a hostile burst, a clean stop."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from hearth.audit.store import AuditStore, RunRecord
from hearth.queue.directory import Queue
from hearth.queue.request import Request
from tests.cli_support import start_watch
from tests.cli_support import stop_watch as stop
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer
from tests.queue_support import Gate, drop, listing, rows, runs_by_status, wait_for


def test_watch_takes_what_is_waiting_then_each_new_arrival_and_stops_on_sigterm(state_dir: Path) -> None:
    queue = Queue(state_dir / "queue").ensure()
    for name in ("early-1", "early-2"):
        queue.enqueue(Request(id=name, goal=f"{name} goal"))
    with FakeOllama([final_answer("done")], repeat_last=True) as fake:
        env = {"OLLAMA_HOST": fake.url}
        watch = start_watch(env)
        try:
            wait_for(lambda: runs_by_status(state_dir) == {"done": 2}, what="the waiting requests to run")
            for i in range(3):
                assert run_cli("hearth", "enqueue", f"late goal {i}", "--id", f"late-{i}", env=env).returncode == 0
            wait_for(lambda: runs_by_status(state_dir) == {"done": 5}, what="the new arrivals to run")
        finally:
            out, err = stop(watch)
    assert watch.returncode == 0, err
    started = [json.loads(line)["name"] for line in out.splitlines() if json.loads(line)["event"] == "started"]
    assert sorted(started) == ["early-1", "early-2", "late-0", "late-1", "late-2"]
    assert listing(queue.root) == ["claimed", "failed", "locks", "rejected"] and listing(queue.claimed) == []


def _hostile(queue: Path, outside: Path) -> list[str]:
    """Twenty files that must not run, dropped the ways they arrive; returns their names."""
    legacy = {"prompt": "p", "grow": True}  # still refused (swarm and marathon run now)
    files: dict[str, bytes] = {
        "malformed.json": b'{"id": "malformed", "goal": }',
        "wrong-type.json": b'{"id": "wrong-type", "goal": 7}',
        "unknown-field.json": b'{"id": "unknown-field", "goal": "g", "sudo": true}',
        "path-id.json": b'{"id": "../../../etc/x", "goal": "g"}',
        "latin1.json": b'{"id": "latin1", "goal": "\xe9"}',
        "huge.json": json.dumps({"id": "huge", "goal": "x" * (1 << 20)}).encode(),
        "deep.json": b"[" * 50_000 + b"]" * 50_000,
        "grow.json": json.dumps(legacy).encode(),
        "notes.txt": b"hi",
        "empty.json": b"",
        "array.json": b"[]",
        "mismatch.json": b'{"id": "other", "goal": "g"}',
        "bell\a.json": b'{"id": "bell", "goal": "g"}',
        "tool.json": b'{"id": "tool", "goal": "g", "allowed_tools": ["no_such_tool"]}',
        "old-run.json": b'{"id": "old-run", "goal": "a second time"}',
    }
    for name, data in files.items():
        drop(queue, name, data)
    (outside / "target.json").write_text('{"id": "link", "goal": "g"}')
    (queue / "link.json").symlink_to(outside / "target.json")
    (outside / "dir.json").mkdir()
    (outside / "dir.json").rename(queue / "dir.json")
    os.mkfifo(queue / "fifo.json")
    (outside / "cut.json").write_bytes(b'{"id": "cut", "goal": "the writer died mid-')
    os.utime(outside / "cut.json", (time.time() - 60, time.time() - 60))
    (outside / "cut.json").rename(queue / "cut.json")  # incomplete, and quiet for a minute
    return [*files, "link.json", "dir.json", "fifo.json", "cut.json"]


def test_a_burst_of_200_requests_with_20_hostile_ones_runs_180_and_rejects_20_with_nothing_missing(
    state_dir: Path, tmp_path: Path
) -> None:
    queue = Queue(state_dir / "queue").ensure()
    stale = tmp_path / ".abandoned.json.tmp"
    stale.write_text('{"id": "abandoned", "go')
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    stale.rename(queue.root / stale.name)  # a writer that died an hour ago, before its rename
    with AuditStore(state_dir / "audit.db") as audit:
        audit.start_run(RunRecord(id="old-run", agent_name="a", model="m", goal="ran yesterday", mode="auto"))
        audit.finish_run("old-run", status="done")
    with FakeOllama([final_answer("done")], repeat_last=True) as fake:
        watch = start_watch({"OLLAMA_HOST": fake.url}, "--concurrency", "4")
        try:
            hostile = _hostile(queue.root, tmp_path)
            for i in range(180):
                queue.enqueue(Request(id=f"burst-{i:03}", goal=f"burst goal {i}", source="command-center"))
            wait_for(
                lambda: runs_by_status(state_dir) == {"done": 181, "rejected": 20},
                timeout=120,
                what="every file of the burst to be accounted for",
            )
            wait_for(lambda: listing(queue.claimed) == [], what="the last requests to be removed")
        finally:
            out, err = stop(watch)
    assert watch.returncode == 0, err
    assert len(hostile) + 1 == 20
    kept = [n for n in listing(queue.rejected) if not n.endswith(".error.json")]
    assert len(kept) == 20 and all((queue.rejected / f"{n}.error.json").is_file() for n in kept)
    reasons = {json.loads((queue.rejected / f"{n}.error.json").read_text())["file"] for n in kept}
    assert reasons == {*(n.replace("\a", "\\x07") for n in hostile), ".abandoned.json.tmp"}
    ran = rows(state_dir, "select id from runs where status = 'done' and source = 'command-center'")
    assert sorted(r["id"] for r in ran) == [f"burst-{i:03}" for i in range(180)]
    assert len(fake.requests) == 180 and listing(queue.failed) == []
    assert listing(queue.root) == ["claimed", "failed", "locks", "rejected"]
    assert len(rows(state_dir, "select * from rejections")) == 20


def test_stopping_watch_interrupts_its_runs_and_keeps_their_requests(state_dir: Path) -> None:
    queue = Queue(state_dir / "queue").ensure()
    queue.enqueue(Request(id="long-job", goal="take your time"))
    gate = Gate()
    with FakeOllama([gate], repeat_last=True) as fake:
        watch = start_watch({"OLLAMA_HOST": fake.url})
        try:
            assert gate.reached.wait(30), "the run never reached the model"
            out, err = stop(watch)
        finally:
            gate.opened.set()
    assert watch.returncode == 0, err
    [run] = rows(state_dir, "select * from runs")
    assert (run["status"], run["error"]) == ("interrupted", "interrupted by a signal")
    assert listing(queue.failed) == ["long-job.json", "long-job.json.error.json"]
    assert json.loads((queue.failed / "long-job.json").read_text())["goal"] == "take your time"
