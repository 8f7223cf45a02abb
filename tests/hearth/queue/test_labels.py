"""Labels: the command center's free-text `name` (and a version 1 `label`) kept with the run."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer
from tests.queue_support import drop, listing, rows


def _profile(config: Path, name: str, toml: str = "") -> None:
    (config / "agents" / name).mkdir(parents=True)
    (config / "agents" / name / "AGENTS.md").write_text(f"You are {name}.")
    (config / "agents" / name / "agent.toml").write_text(toml)


def _spawn(state_dir: Path, files: dict[str, dict[str, object]], replies: int) -> None:
    with FakeOllama([final_answer("ok")] * replies) as fake:
        for name, body in files.items():
            drop(state_dir / "queue", name, body)
        proc = run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url})
    assert proc.returncode == 0, proc.stderr


def test_a_legacy_name_that_is_a_profile_runs_that_profile_and_any_other_is_a_label(
    state_dir: Path, tmp_path: Path
) -> None:
    _profile(tmp_path / "config", "builder", 'mode = "plan"\n')
    _spawn(
        state_dir,
        {"a.json": {"name": "builder", "prompt": "build"}, "b.json": {"name": "nightly notes", "prompt": "notes"}},
        replies=2,
    )
    found = {r["id"]: r for r in rows(state_dir, "select id, status, agent_name, label, mode from runs")}
    assert found["a"] == {"id": "a", "status": "done", "agent_name": "builder", "label": "builder", "mode": "plan"}
    assert found["b"] == {
        "id": "b",
        "status": "done",
        "agent_name": "default",
        "label": "nightly notes",
        "mode": "auto",
    }
    table = run_cli("hearth", "runs").stdout
    assert "LABEL" in table and "nightly notes" in table


def test_a_version_1_label_means_the_same_and_agent_name_stays_strict(state_dir: Path, tmp_path: Path) -> None:
    _profile(tmp_path / "config", "notes")
    _spawn(
        state_dir,
        {
            "v1.json": {"id": "v1", "goal": "g", "label": "notes"},
            "v2.json": {"id": "v2", "goal": "g", "label": "my weekly tidy-up"},
            "v3.json": {"id": "v3", "goal": "g", "agent_name": "nobody", "label": "notes"},
        },
        replies=2,
    )
    found = {r["id"]: r for r in rows(state_dir, "select id, status, agent_name, label, error from runs")}
    assert (found["v1"]["agent_name"], found["v1"]["label"], found["v1"]["status"]) == ("notes", "notes", "done")
    assert (found["v2"]["agent_name"], found["v2"]["label"]) == ("default", "my weekly tidy-up")
    assert found["v3"]["status"] == "rejected" and "unknown agent profile 'nobody'" in found["v3"]["error"]
    assert found["v3"]["label"] == "notes"


def test_a_refused_legacy_request_keeps_its_file_s_id_as_its_run_id(state_dir: Path) -> None:
    drop(state_dir / "queue", "cc-42.json", {"name": "agent", "prompt": "go", "grow": True})
    drop(state_dir / "queue", "cc-43.json", {"prompt": "go", "tools": "Shell"})
    assert run_cli("hearth", "spawn", "--local").returncode == 0
    for run_id, reason in (("cc-42", "grow is not supported"), ("cc-43", 'tools "Shell" is not allowed')):
        shown = run_cli("hearth", "show", run_id, "--json")
        assert shown.returncode == 0, shown.stderr
        run = json.loads(shown.stdout)["run"]
        assert run["status"] == "rejected" and reason in run["error"]
    assert "cc-42.json" in listing(state_dir / "queue" / "rejected")


def test_a_label_with_control_characters_is_refused_in_one_line(state_dir: Path) -> None:
    drop(state_dir / "queue", "bad.json", {"id": "bad", "goal": "g", "label": "a\u0007b"})
    assert run_cli("hearth", "spawn", "--local").returncode == 0
    [error] = [json.loads((state_dir / "queue" / "rejected" / "bad.json.error.json").read_text())["reason"]]
    assert error == 'label "a\\u0007b" is not allowed: control characters are not allowed'


def test_the_command_center_shows_labels_the_chosen_model_and_why_and_that_hearth_is_paused(
    state_dir: Path,
) -> None:
    from hearth.audit.store import AuditStore, RunRecord
    from hearth.settings import Settings
    from tests.web_support import Center

    state_dir.mkdir()
    with AuditStore(state_dir / "audit.db") as audit:
        audit.start_run(
            RunRecord(
                id="lab-1",
                agent_name="default",
                model="qwen2.5-coder:7b",
                goal="g",
                mode="auto",
                label="nightly notes",
                model_requested="auto",
                model_reason="tag",
            )
        )
        audit.finish_run("lab-1", status="budget_exceeded", error="stopped: the daily token budget ...")
    with Center(Settings.from_env()) as center:
        client = center.client()
        runs = client.get("/runs").text
        assert "nightly notes" in runs and 'title="asked auto; why: tag"' in runs
        page = client.get("/runs/lab-1").text
        assert "nightly notes" in page and "(asked auto; why: tag)" in page and "st-budget_exceeded" in page
        assert 'placeholder="auto (the router picks' in client.get("/launch").text  # no Ollama: typed
        paused = client.post_json("/api/pause", {})
        assert paused.status_code == 200 and paused.json()["paused"]["by"] == "web:local"
        assert client.get("/api/state").json()["paused"]["line"].startswith("paused since ")
        assert "hearth is paused since " in client.get("/").text
        assert run_cli("hearth", "state").stdout.count("paused since") == 1
        assert client.post_json("/api/resume", {}).json()["was"]["by"] == "web:local"
        assert client.get("/api/state").json()["paused"] is None
