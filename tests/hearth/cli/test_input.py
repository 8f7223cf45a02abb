"""Input that must be refused at once, in one line, through the real console scripts: a bad tool
list, a workspace whose parent is a typo, a window too small for the prompt, an unknown profile at
enqueue, a limit that is no count, an ambiguous id, a credential with no name."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from hearth.audit.store import AuditStore, RunRecord
from tests.conftest import ROOT, run_cli
from tests.fake_ollama import FakeOllama, final_answer


def runs(state_dir: Path) -> list[dict[str, object]]:
    if not (state_dir / "audit.db").exists():
        return []
    conn = sqlite3.connect(state_dir / "audit.db")
    conn.row_factory = sqlite3.Row
    found = [dict(r) for r in conn.execute("select * from runs")]
    conn.close()
    return found


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ("read_fil", "--allowed-tools: 'read_fil' is not a tool hearth has; did you mean read_file?"),
        ("", "--allowed-tools: no tool named, so every call would be denied"),
        (" , ", "--allowed-tools: no tool named, so every call would be denied"),
    ],
    ids=["typo", "empty", "only-commas"],
)
def test_a_bad_tool_list_is_refused_the_same_way_by_hearth_loop_and_enqueue(
    state_dir: Path, tmp_path: Path, tools: str, message: str
) -> None:
    loop = run_cli("hearth-loop", "--allowed-tools", tools, "--workspace", str(tmp_path / "ws"), "go")
    queued = run_cli("hearth", "enqueue", "go", "--tools", tools)
    assert loop.returncode == queued.returncode == 2
    assert loop.stderr.startswith(f"hearth-loop: {message}") and queued.stderr.startswith(f"hearth enqueue: {message}")
    assert not (state_dir / "queue").exists() or not list((state_dir / "queue").glob("*.json"))


def test_a_workspace_whose_parent_does_not_exist_is_refused_and_nothing_is_made(
    state_dir: Path, tmp_path: Path
) -> None:
    typo = tmp_path / "nonexistent" / "dir"
    proc = run_cli("hearth-loop", "--workspace", str(typo), "go")
    assert proc.returncode == 2
    assert f"its parent {typo.parent} does not exist" in proc.stderr
    assert not typo.parent.exists()
    [run] = runs(state_dir)
    assert run["status"] == "rejected"
    with FakeOllama([final_answer("made")]) as fake:  # a missing workspace under a real parent is made
        made = run_cli("hearth-loop", "--ollama-host", fake.url, "--workspace", str(tmp_path / "new"), "go")
    assert made.returncode == 0 and (tmp_path / "new").is_dir()


def test_a_context_window_smaller_than_the_prompt_and_tools_is_refused_naming_both(
    state_dir: Path, tmp_path: Path
) -> None:
    with FakeOllama([final_answer("never asked")]) as fake:
        proc = run_cli("hearth-loop", "--ollama-host", fake.url, "--num-ctx", "10", "--workspace", str(tmp_path), "go")
        assert fake.requests == []
    assert proc.returncode == 2
    assert "--num-ctx 10 is too small: the system prompt and tools alone take ~" in proc.stderr
    [run] = runs(state_dir)
    assert run["status"] == "rejected" and "--num-ctx 10" in str(run["error"])


def test_enqueue_refuses_an_unknown_agent_at_once_listing_the_profiles(state_dir: Path) -> None:
    proc = run_cli("hearth", "enqueue", "x", "--agent-name", "ghost")
    assert (
        proc.returncode == 2 and "unknown agent profile 'ghost'" in proc.stderr and "built in: default" in proc.stderr
    )
    assert not (state_dir / "queue").exists() or not list((state_dir / "queue").glob("*.json"))
    assert run_cli("hearth", "enqueue", "x", "--agent", "default").returncode == 0  # the alias, a built-in


@pytest.mark.parametrize("limit", ["0", "-1", "many"])
def test_runs_limit_must_be_a_count_and_says_so_with_the_runs_usage(state_dir: Path, limit: str) -> None:
    proc = run_cli("hearth", "runs", "--limit", limit)
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: hearth runs") and "must be a whole number of at least 1" in proc.stderr


def test_an_ambiguous_id_prefix_lists_the_runs_it_matches(state_dir: Path) -> None:
    state_dir.mkdir(parents=True)
    with AuditStore(state_dir / "audit.db") as audit:
        for run_id in ("20260101T000000-aaaaaa", "20260101T000000-aabbbb", "20260102T000000-cccccc"):
            audit.start_run(RunRecord(id=run_id, agent_name="a", model="m", goal="g", mode="auto", status="done"))
    several = run_cli("hearth", "show", "20260101")
    assert several.returncode == 2
    assert "matches several runs: 20260101T000000-aabbbb, 20260101T000000-aaaaaa" in several.stderr
    assert "no run with id 'zzz'" in run_cli("hearth", "show", "zzz").stderr
    assert run_cli("hearth", "show", "20260102").stdout.startswith("run 20260102T000000-cccccc")


def test_creds_set_with_an_empty_name_complains_about_the_name_before_reading_a_value(state_dir: Path) -> None:
    proc = run_cli("hearth", "creds", "set", "", "--host", "api.example.com")
    assert proc.returncode == 2 and "credential name '' is not valid" in proc.stderr and "stdin" not in proc.stderr


def test_creds_rm_removes_one_and_says_so_in_json_too(state_dir: Path) -> None:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HEARTH_STATE_DIR": str(state_dir)}
    put = subprocess.run(
        [sys.executable, "-m", "hearth.cli.main", "creds", "set", "TOKEN", "--host", "api.example.com", "--json"],
        input="a-long-enough-secret",
        capture_output=True,
        text=True,
        env=env,
    )
    assert put.returncode == 0 and json.loads(put.stdout) == {
        "name": "TOKEN",
        "hosts": ["api.example.com"],
        "source": str(state_dir / "credentials.json"),
    }
    removed = run_cli("hearth", "creds", "rm", "TOKEN", "--json")
    assert removed.returncode == 0 and json.loads(removed.stdout) == {"removed": "TOKEN"}
    assert run_cli("hearth", "creds", "rm", "TOKEN").returncode == 2


def test_a_reader_who_may_not_write_the_audit_still_reads_runs_and_shows_one(state_dir: Path) -> None:
    state_dir.mkdir(parents=True)
    with AuditStore(state_dir / "audit.db") as audit:
        audit.start_run(RunRecord(id="r-1", agent_name="a", model="m", goal="read me", mode="auto", status="done"))
    assert sorted(p.name for p in state_dir.iterdir()) == ["audit.db"]  # no writer: no -wal, no -shm
    # as root, only an immutable file and directory stand for what a submitter may read but not
    # write (NixOS: audit.db 0640 to hearth-submit, the state directory 2711)
    locked = subprocess.run(["chattr", "+i", str(state_dir / "audit.db"), str(state_dir)], capture_output=True)
    if locked.returncode != 0:
        pytest.skip(f"chattr +i is not possible here: {locked.stderr.strip()!r}")
    try:
        listed = run_cli("hearth", "runs", "--json")
        shown = run_cli("hearth", "show", "r-1")
    finally:
        subprocess.run(["chattr", "-i", str(state_dir), str(state_dir / "audit.db")], check=True)
    assert listed.returncode == 0, listed.stderr
    assert [r["id"] for r in json.loads(listed.stdout)] == ["r-1"]
    assert shown.returncode == 0 and "goal: read me" in shown.stdout
