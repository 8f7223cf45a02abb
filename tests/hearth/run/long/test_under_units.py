"""Follow-ups and swarms as the hearth-agent@ unit runs them: each run sees only its own workspace.

The spawner (`hearth spawn`, as the path unit starts it) calls a fake `systemctl` that runs each
`hearth agent ID` in the unit's environment and filesystem view (tests/unit_harness.py, built
from the unit nix/units.nix renders), against tests/fake_ollama.py. Whatever one run gets of
another's files comes through hearth's checkpoint history, as on a real host.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hearth.audit.store import AuditStore, RunRecord
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.nixunits import evaluate, needs_nix, write_units
from tests.queue_support import drop, rows, wait_for
from tests.unit_harness import BWRAP, FakeSystemd, Host, needs_unit_view, unit_settings, view_args

pytestmark = [needs_nix, needs_unit_view]


@pytest.fixture(scope="module")
def agent_unit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("rendered")
    return write_units(evaluate({"enable": True}, tmp), tmp / "units")["hearth-agent@.service"]


class Box:
    """One hearth host in a test: its state, the fake systemd, and the path unit's job done by hand."""

    def __init__(self, state_dir: Path, tmp: Path, unit: Path, fake: FakeOllama) -> None:
        self.state_dir = state_dir
        self.host = Host(state_dir, tmp / "config", fake.url)
        self.systemd = FakeSystemd(tmp, unit, self.host)

    def ended(self, run_id: str) -> bool:
        return (self.state_dir / "harness" / f"{run_id}.exit").exists()

    def run_until(self, done: Callable[[], bool], what: str) -> None:
        """Start `hearth spawn` whenever a request waits (the path unit's job) until `done`."""

        def step() -> bool:
            if any((self.state_dir / "queue").glob("*.json")):
                spawned = run_cli("hearth", "spawn", env=self.systemd.env())
                assert spawned.returncode == 0, spawned.stderr
            return done()

        wait_for(step, timeout=180, what=what)

    def log(self, run_id: str) -> str:
        path = self.state_dir / "harness" / f"{run_id}.log"
        return path.read_text() if path.exists() else "(no log)"


def test_the_unit_view_shows_a_run_only_its_own_directory_and_no_credentials(
    state_dir: Path, tmp_path: Path, agent_unit: Path
) -> None:
    for name in ("mine", "other"):
        (state_dir / "agents" / name).mkdir(parents=True)
    (state_dir / "agents" / "other" / "secret.txt").write_text("other run's file")
    (state_dir / "credentials").mkdir()
    (state_dir / "credentials" / "token").write_text("s3cr3t")
    (state_dir / "checkpoints").mkdir()
    host = Host(state_dir, tmp_path / "config", "http://127.0.0.1:9")
    probe = (
        "ls agents; cat agents/other/secret.txt; cat credentials/token; "
        "touch agents/mine/ok && echo own-writable; touch agents/new; touch checkpoints/ok && echo history-writable"
    )
    argv = [str(BWRAP), *view_args(unit_settings(agent_unit.read_text()), host, "mine"), "--chdir", str(state_dir)]
    seen = subprocess.run([*argv, "sh", "-c", probe], capture_output=True, text=True, timeout=30)
    assert seen.stdout.split() == ["mine", "own-writable", "history-writable"], seen.stdout + seen.stderr
    assert "s3cr3t" not in seen.stdout and "other run's file" not in seen.stdout
    assert "Read-only file system" in seen.stderr  # agents/new


def follow_up_script(body: dict[str, Any]) -> dict[str, Any]:
    """The first run writes notes.txt; the follow-up reads it, adds a line, and says what it saw."""
    opening, turn = body["messages"][1]["content"], len(body["messages"])
    if "## Earlier run first" not in opening:
        return (
            tool_call("write_file", {"path": "notes.txt", "content": "one\n"})
            if turn == 2
            else final_answer("Wrote one.")
        )
    if turn == 2:
        return tool_call("read_file", {"path": "notes.txt"})
    if turn == 4:
        return tool_call("write_file", {"path": "notes.txt", "content": "one\ntwo\n"})
    return final_answer("Added two after one.")


def test_a_queued_follow_up_under_the_unit_view_continues_the_earlier_run_s_files_in_its_own_directory(
    state_dir: Path, tmp_path: Path, agent_unit: Path
) -> None:
    with FakeOllama([follow_up_script], repeat_last=True) as fake:
        box = Box(state_dir, tmp_path, agent_unit, fake)
        assert run_cli("hearth", "enqueue", "write notes.txt", "--id", "first").returncode == 0
        box.run_until(lambda: box.ended("first"), "the first run's unit to end")
        queued = run_cli("hearth", "continue", "first", "add a line to notes.txt", "--id", "second")
        assert queued.returncode == 0, queued.stderr
        box.run_until(lambda: box.ended("second"), "the follow-up's unit to end")
        tool_results = [m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "tool"]
    runs = {r["id"]: r for r in rows(state_dir, "select * from runs")}
    assert runs["second"]["status"] == "done", box.log("second")
    assert (runs["second"]["parent_run"], runs["second"]["link"]) == ("first", "follow-up")
    assert runs["second"]["workspace"] == str(state_dir / "agents" / "second")  # the directory it really used
    assert "one" in tool_results[0]  # it read the earlier run's file
    assert (state_dir / "agents" / "second" / "notes.txt").read_text() == "one\ntwo\n"
    assert (state_dir / "agents" / "first" / "notes.txt").read_text() == "one\n"  # the earlier one untouched
    [after] = rows(state_dir, "select commit_sha from checkpoints where run_id = 'first' and phase = 'after'")
    [restored] = rows(state_dir, "select detail from steps where run_id = 'second' and kind = 'restore'")
    assert f"restored run first's workspace from checkpoint {after['commit_sha'][:12]} (1 files)" in restored["detail"]
    shown = run_cli("hearth", "show", "second").stdout
    assert "restore restored run first's workspace from checkpoint" in shown and "follow-up of run first" in shown


def test_a_follow_up_naming_a_run_it_may_not_continue_is_refused_in_one_line_and_recorded_rejected(
    state_dir: Path, tmp_path: Path, agent_unit: Path
) -> None:
    with FakeOllama([final_answer("never asked")], repeat_last=True) as fake:
        box = Box(state_dir, tmp_path, agent_unit, fake)
        assert run_cli("hearth", "enqueue", "an earlier run", "--id", "earlier").returncode == 0
        box.run_until(lambda: box.ended("earlier"), "the earlier run's unit to end")
        with AuditStore(state_dir / "audit.db") as audit:  # a run elsewhere, with no history in hearth's
            audit.start_run(RunRecord(id="ghost", agent_name="default", model="m", goal="g", mode="auto"))
            audit.finish_run("ghost", status="done", iterations=1)
            audit.update_run("ghost", workspace="/srv/elsewhere")
        for rid, target in (("hostile-1", "no-such-run"), ("hostile-2", "ghost")):
            body = {"version": 1, "id": rid, "goal": "read it", "continues": target, "requested_by": "root"}
            drop(state_dir / "queue", f"{rid}.json", body)  # an operator's: refused for what the runs are
        box.run_until(lambda: box.ended("hostile-1") and box.ended("hostile-2"), "both follow-ups' units to end")
        asked = [r for r in fake.requests if "read it" in r["messages"][1]["content"]]
    refused = {r["id"]: r for r in rows(state_dir, "select * from runs where id like 'hostile-%'")}
    assert {rid: r["status"] for rid, r in refused.items()} == {"hostile-1": "rejected", "hostile-2": "rejected"}
    assert refused["hostile-1"]["error"].startswith("no run 'no-such-run' to continue")
    assert refused["hostile-2"]["error"] == (
        "run ghost's workspace /srv/elsewhere is not visible to this run, and run ghost left no checkpoint "
        "of its workspace to restore from"
    )
    assert all("\n" not in r["error"] for r in refused.values()) and asked == []
    assert (refused["hostile-2"]["parent_run"], refused["hostile-2"]["link"]) == ("ghost", "follow-up")
    assert all(list((state_dir / "agents" / rid).iterdir()) == [] for rid in refused)  # nothing restored there


PLAN = ["Write part one into part-1.txt.", "Write part two into part-2.txt."]


class SwarmScript:
    """Plays the planner (putting the swarm's files in place first), both children and the synthesis."""

    def __init__(self, swarm_dir: Path) -> None:
        self.swarm_dir = swarm_dir
        self.seen: dict[str, list[dict[str, Any]]] = {}

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        system, opening, turn = body["messages"][0]["content"], body["messages"][1]["content"], len(body["messages"])
        who = (
            "planner"
            if system.startswith("You split a goal")
            else "synthesis"
            if opening.startswith("## Swarm ")
            else ""
        )
        who = who or next(p for p in PLAN if p in opening)
        self.seen.setdefault(who, []).append(body)
        if who == "planner":  # the swarm's own files, made while it plans (its unit sees its directory)
            (self.swarm_dir / "brief.txt").write_text("the shared brief\n")
            return final_answer(json.dumps(PLAN))
        if who == "synthesis":
            return final_answer("Merged both parts.")
        n = PLAN.index(who) + 1
        if turn == 2:
            return tool_call("read_file", {"path": "brief.txt"})
        if turn == 4:
            return tool_call("write_file", {"path": f"part-{n}.txt", "content": f"part {n} of the brief\n"})
        return final_answer(f"Wrote part-{n}.txt.")


def test_a_swarm_under_the_unit_view_seeds_each_child_and_its_synthesis_sees_each_child_s_work(
    state_dir: Path, tmp_path: Path, agent_unit: Path
) -> None:
    script = SwarmScript(state_dir / "agents" / "sw")
    with FakeOllama([script], repeat_last=True) as fake:
        box = Box(state_dir, tmp_path, agent_unit, fake)
        assert run_cli("hearth", "enqueue", "write both parts", "--id", "sw", "--swarm", "2").returncode == 0
        box.run_until(lambda: box.ended("sw"), "the swarm's unit to end")
    runs = {r["id"]: r for r in rows(state_dir, "select * from runs")}
    assert runs["sw"]["status"] == "done", box.log("sw")
    for n in (1, 2):
        child = f"sw-w{n}"
        assert box.ended(child) and runs[child]["status"] == "done", box.log(child)
        read = [m["content"] for m in script.seen[PLAN[n - 1]][-1]["messages"] if m["role"] == "tool"]
        assert "the shared brief" in read[0]  # seeded from the swarm's checkpoint, not its directory
        assert (state_dir / "agents" / child / "brief.txt").read_text() == "the shared brief\n"
    told = script.seen["synthesis"][0]["messages"][1]["content"]
    for n in (1, 2):
        assert f"Summary: Wrote part-{n}.txt." in told and f"Changed files: part-{n}.txt\n" in told + "\n"
        kept = state_dir / "agents" / "sw" / ".hearth" / "swarm" / f"sw-w{n}"
        assert f"+part {n} of the brief" in (kept / "changes.diff").read_text()
        assert "brief.txt" not in (kept / "changes.diff").read_text()  # the seed is not the child's change
        assert (kept / "files" / f"part-{n}.txt").read_text() == f"part {n} of the brief\n"
    [seed] = rows(state_dir, "select status, files from checkpoints where run_id = 'sw' and phase = 'seed'")
    assert (seed["status"], seed["files"]) == ("committed", 1)
