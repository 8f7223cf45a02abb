"""Long work with the state directory inside a git checkout, as the README's tour sets it
(`HEARTH_STATE_DIR="$PWD/.hearth"` in the clone): the directories hearth makes for a marathon or a
swarm are its own, so they get checkpoints in hearth's history and the checkout is never touched."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.long_support import Script, verdict
from tests.queue_support import rows


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clone with one commit, and hearth's state in its `.hearth`."""
    repo = tmp_path / "clone"
    repo.mkdir()
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (
        ["init", "-q", "-b", "main"],
        ["-c", "user.name=u", "-c", "user.email=u@x", "commit", "-q", "--allow-empty", "-m", "the user's commit"],
    ):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=env)
    monkeypatch.setenv("HEARTH_STATE_DIR", str(repo / ".hearth"))
    monkeypatch.setenv("HEARTH_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("HEARTH_OLLAMA_BACKOFF_S", "0.01")
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    return repo


def user_log(repo: Path) -> str:
    return subprocess.run(["git", "-C", str(repo), "log", "--format=%s"], capture_output=True, text=True).stdout


def test_a_marathon_in_the_checkouts_state_dir_keeps_checkpoints_and_stops_for_no_progress(checkout: Path) -> None:
    script = Script(
        legs={1: [final_answer("Nothing to change.")], 2: [final_answer("Still nothing.")], 3: [final_answer("x")]},
        judged=[verdict(False, "Nothing written."), verdict(False, "Nothing written."), verdict(False, "No.")],
    )
    with FakeOllama([script], repeat_last=True) as fake:
        proc = run_cli("hearth-loop", "--ollama-host", fake.url, "--marathon", "3", "write the essay")
    state = checkout / ".hearth"
    [marathon] = rows(state, "select * from runs where kind = 'marathon'")
    assert (marathon["status"], marathon["iterations"]) == ("no_progress", 2), proc.stderr
    kept = rows(state, "select run_id, phase, status, detail from checkpoints where run_id like '%-leg%'")
    assert kept and not [k for k in kept if k["status"] in ("skipped", "failed")], kept
    assert user_log(checkout) == "the user's commit\n"


def test_a_swarm_in_the_checkouts_state_dir_seeds_its_children(checkout: Path) -> None:
    def reply(body: dict[str, Any]) -> dict[str, Any]:
        if body["messages"][0]["content"].startswith("You split a goal"):
            return final_answer(json.dumps(["Write a.txt.", "Write b.txt."]))
        if len(body["messages"]) == 2 and "## Swarm " not in body["messages"][1]["content"]:
            name = "a.txt" if "a.txt" in body["messages"][1]["content"] else "b.txt"
            return tool_call("write_file", {"path": name, "content": "part\n"})
        return final_answer("done")

    with FakeOllama([reply], repeat_last=True) as fake:
        queued = run_cli("hearth", "enqueue", "write two files", "--id", "sw", "--swarm", "2")
        assert queued.returncode == 0, queued.stderr
        spawned = run_cli("hearth", "spawn", "--local", "--concurrency", "2", env={"OLLAMA_HOST": fake.url})
    assert spawned.returncode == 0, spawned.stderr
    state = checkout / ".hearth"
    statuses = {r["id"]: (r["status"], r["error"]) for r in rows(state, "select * from runs")}
    assert statuses == dict.fromkeys(("sw", "sw-w1", "sw-w2", "sw-synthesis"), ("done", None))
    assert "Changed files: a.txt" in fake.requests[-1]["messages"][1]["content"]
    assert user_log(checkout) == "the user's commit\n"
