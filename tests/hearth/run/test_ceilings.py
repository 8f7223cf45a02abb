"""Profile ceilings (max_mode, max_tools) and fresh run directories, through `hearth spawn --local`
and `hearth-loop` against the fake Ollama."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hearth.queue.directory import Queue
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer
from tests.queue_support import drop, rows

SCOUT = 'mode = "plan"\nmax_mode = "plan"\nallowed_tools = ["read_file", "list_files"]\nmax_tools = ["read_file", "list_files"]\n'


def make_scout(config: Path) -> None:
    (config / "agents" / "scout").mkdir(parents=True)
    (config / "agents" / "scout" / "agent.toml").write_text(SCOUT)


def reason(queue: Path, name: str) -> str:
    return str(json.loads((queue / "rejected" / f"{name}.error.json").read_text())["reason"])


def tools_shown(body: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in body.get("tools", [])}


def test_a_request_above_a_profile_s_ceilings_is_refused_naming_the_limit(state_dir: Path, tmp_path: Path) -> None:
    make_scout(tmp_path / "config")
    queue = state_dir / "queue"
    drop(queue, "loud.json", {"id": "loud", "goal": "g", "agent_name": "scout", "mode": "bypass"})
    drop(queue, "wide.json", {"id": "wide", "goal": "g", "agent_name": "scout", "allowed_tools": ["run_command"]})
    drop(queue, "plain.json", {"id": "plain", "goal": "g", "agent_name": "scout"})
    with FakeOllama([final_answer("ok")], repeat_last=True) as fake:
        assert run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url}).returncode == 0
    assert reason(queue, "loud.json") == "mode 'bypass' is above agent profile 'scout''s limit: max_mode = 'plan'"
    assert reason(queue, "wide.json") == (
        "tool 'run_command' is outside agent profile 'scout''s limit: max_tools = ['read_file', 'list_files']"
    )
    assert [r["id"] for r in rows(state_dir, "select id from runs where status = 'done'")] == ["plain"]
    assert len(fake.requests) == 1 and tools_shown(fake.requests[0]) == {"read_file", "list_files"}
    assert rows(state_dir, "select mode from runs where id = 'plain'") == [{"mode": "plan"}]


def test_a_default_above_the_ceiling_is_capped_and_a_flag_above_it_refused(state_dir: Path, tmp_path: Path) -> None:
    profile = tmp_path / "config" / "agents" / "reader"
    profile.mkdir(parents=True)
    (profile / "agent.toml").write_text('max_mode = "plan"\nmax_tools = ["list_files"]\n')
    with FakeOllama([final_answer("ok")], repeat_last=True) as fake:
        ran = run_cli("hearth-loop", "--ollama-host", fake.url, "--agent-name", "reader", "look")
        refused = run_cli("hearth-loop", "--ollama-host", fake.url, "--agent-name", "reader", "--mode", "auto", "x")
    assert ran.returncode == 0, ran.stderr
    assert tools_shown(fake.requests[0]) == {"list_files"}  # "every tool" is the ceiling's tools
    assert refused.returncode == 2
    assert "mode 'auto' is above agent profile 'reader''s limit: max_mode = 'plan'" in refused.stderr
    assert [r["mode"] for r in rows(state_dir, "select mode from runs order by started_at")] == ["plan", "auto"]


def test_a_fresh_run_never_reuses_a_directory_or_follows_a_symlink(state_dir: Path, tmp_path: Path) -> None:
    agents, elsewhere = state_dir / "agents", tmp_path / "elsewhere"
    (agents / "premade").mkdir(parents=True)
    (agents / "premade" / "planted.txt").write_text("left by someone")
    elsewhere.mkdir()
    (agents / "linked").symlink_to(elsewhere)
    queue = state_dir / "queue"
    for rid in ("premade", "linked", "fine"):
        drop(queue, f"{rid}.json", {"id": rid, "goal": "g"})
    with FakeOllama([final_answer("ok")], repeat_last=True) as fake:
        assert run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url}).returncode == 0
    assert reason(queue, "premade.json") == (
        f"run directory {agents}/premade already exists; a fresh run never reuses a directory"
    )
    assert (
        reason(queue, "linked.json")
        == f"run directory {agents}/linked already exists; a fresh run never reuses a directory"
    )
    assert [r["id"] for r in rows(state_dir, "select id from runs where status = 'done'")] == ["fine"]
    assert list(elsewhere.iterdir()) == []


def test_a_symlinked_agents_directory_moves_no_run_elsewhere(state_dir: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    state_dir.mkdir()
    (state_dir / "agents").symlink_to(elsewhere)
    with FakeOllama([final_answer("ok")], repeat_last=True) as fake:
        proc = run_cli("hearth-loop", "--ollama-host", fake.url, "a goal")
    assert proc.returncode == 2
    assert f"{state_dir}/agents is a symlink; runs' directories are made only in a real directory" in proc.stderr
    assert list(elsewhere.iterdir()) == [] and fake.requests == []
    assert rows(state_dir, "select status from runs") == [{"status": "rejected"}]


def test_a_unit_takes_the_empty_workspace_systemd_made_for_it_and_nothing_else(state_dir: Path) -> None:
    """hearth-agent@ID has StateDirectory=.../agents/ID: systemd makes it, empty, before the run starts."""
    agents, queue = state_dir / "agents", state_dir / "queue"
    (agents / "unit-made").mkdir(parents=True)
    (agents / "unit-full").mkdir()
    (agents / "unit-full" / "planted.txt").write_text("not systemd's")
    for rid in ("unit-made", "unit-full"):
        drop(queue, f"{rid}.json", {"id": rid, "goal": "g"})
        claimed = Queue(queue).ensure().claim(f"{rid}.json")
        assert claimed is not None
    with FakeOllama([final_answer("ok")], repeat_last=True) as fake:
        for rid in ("unit-made", "unit-full"):
            env = {"OLLAMA_HOST": fake.url, "STATE_DIRECTORY": str(agents / rid)}
            run_cli("hearth", "agent", rid, env=env)
    statuses = {r["id"]: (r["status"], r["error"]) for r in rows(state_dir, "select id, status, error from runs")}
    assert statuses["unit-made"] == ("done", None)
    assert statuses["unit-full"][0] == "rejected" and "already exists" in statuses["unit-full"][1]
