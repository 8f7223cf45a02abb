"""`hearth stop --all`, `hearth pause` and `hearth resume`, under `hearth watch` and under systemd."""

from __future__ import annotations

import getpass
import json
import os
import subprocess
import sys
from pathlib import Path

from hearth.audit.store import AuditStore, RunRecord
from hearth.queue.directory import Queue
from hearth.queue.request import Request
from tests.cli_support import Lines, start_watch, stop_watch
from tests.conftest import ROOT, run_cli
from tests.fake_ollama import FakeOllama, final_answer
from tests.queue_support import FakeSystemctl, Gate, listing, rows, runs_by_status, wait_for


def _watch(env: dict[str, str]) -> tuple[subprocess.Popen[str], Lines]:
    watch = start_watch(env)
    return watch, Lines(watch)


def _state_line() -> str:
    proc = run_cli("hearth", "state")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_stop_all_and_pause_under_hearth_watch(state_dir: Path) -> None:
    gates = [Gate(), Gate()]
    with FakeOllama([*gates, final_answer("after the pause")]) as fake:
        env = {"OLLAMA_HOST": fake.url}
        watch, out = _watch(env)
        try:
            queue = Queue(state_dir / "queue").ensure()
            for name in ("one", "two"):
                queue.enqueue(Request(id=name, goal=f"{name} waits at the gate"))
            assert all(gate.reached.wait(30) for gate in gates)
            stopped = run_cli("hearth", "stop", "--all")
            assert stopped.returncode == 0, stopped.stderr
            assert sorted(stopped.stdout.split()[::3]) == ["one:", "two:"]
            assert run_cli("hearth", "pause", "--reason", "maintenance").returncode == 0
            assert run_cli("hearth", "enqueue", "after the pause", "--id", "held", env=env).returncode == 0
            out.wait_for('"event": "paused", "name": "held.json"')
            assert "held.json" in listing(queue.root)  # waits: not claimed, not rejected, not lost
            state = _state_line()
            assert "paused since " in state and f", by cli:{getpass.getuser()} (maintenance)" in state
        finally:
            for gate in gates:
                gate.opened.set()
            stop_watch(watch)
        # the pause survives a restart of the watch
        watch, out = _watch(env)
        try:
            out.wait_for('"event": "paused", "name": "held.json"')
            assert run_cli("hearth", "resume").stdout.startswith("resumed (was paused since ")
            wait_for(lambda: runs_by_status(state_dir).get("done") == 1, what="the held request to run")
        finally:
            stop_watch(watch)
    runs = {r["id"]: r for r in rows(state_dir, "select id, status, error from runs")}
    assert runs["one"]["status"] == runs["two"]["status"] == "interrupted"
    assert runs["one"]["error"].startswith(f"stopped by cli:{getpass.getuser()}")
    assert runs["held"]["status"] == "done"
    assert {"one.json", "two.json"} <= set(listing(state_dir / "queue" / "failed"))
    assert "paused" not in _state_line()


def _claimed_running(state_dir: Path, run_id: str) -> None:
    queue = Queue(state_dir / "queue").ensure()
    queue.enqueue(Request(id=run_id, goal=f"goal of {run_id}"))
    queue.claim(f"{run_id}.json")
    with AuditStore(state_dir / "audit.db") as audit:
        audit.start_run(RunRecord(id=run_id, agent_name="default", model="m", goal="g", mode="auto"))


def test_stop_all_and_pause_under_systemd(state_dir: Path, tmp_path: Path) -> None:
    systemctl = FakeSystemctl(tmp_path)
    env = systemctl.env()
    for run_id in ("u1", "u2"):
        _claimed_running(state_dir, run_id)
    stopped = run_cli("hearth", "stop", "--all", "--json", env=env)
    assert stopped.returncode == 0, stopped.stderr
    assert [(s["run_id"], s["how"], s["status"]) for s in json.loads(stopped.stdout)] == [
        ("u1", "systemd", "interrupted"),
        ("u2", "systemd", "interrupted"),
    ]
    assert systemctl.calls == ["stop hearth-agent@u1.service", "stop hearth-agent@u2.service"]
    assert run_cli("hearth", "pause", env=env).returncode == 0
    assert run_cli("hearth", "enqueue", "wait for me", "--id", "later", env=env).returncode == 0
    spawn = subprocess.Popen(
        [sys.executable, "-m", "hearth.cli.main", "spawn", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
    )
    try:
        Lines(spawn).wait_for('"event": "paused", "name": "later.json"')  # the path unit fired; nothing starts
        assert not [c for c in systemctl.calls if c.startswith("start")]
        assert run_cli("hearth", "resume", env=env).returncode == 0
        assert spawn.wait(60) == 0  # it waited for the resume, then started the request
    finally:
        spawn.kill()
        spawn.communicate()
    assert systemctl.calls[-1] == "start --no-block hearth-agent@later.service"


def test_stop_names_one_run_or_all_and_says_what_it_did(state_dir: Path) -> None:
    assert run_cli("hearth", "stop").returncode == 2
    assert run_cli("hearth", "stop", "nobody").returncode == 2
    Queue(state_dir / "queue").ensure().enqueue(Request(id="early", goal="never starts"))
    proc = run_cli("hearth", "stop", "early")
    assert proc.returncode == 0 and proc.stdout.strip() == "early: interrupted (dequeued)"
    assert run_cli("hearth", "stop", "--all").stdout.strip() == "no run was active"
