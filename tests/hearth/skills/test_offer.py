"""What a run is offered: only a skill whose last check passed on its present content is listed in
the system prompt (name and one line), load_skill returns its body as a recorded step, the prompt
and the body stay as they were at run start whatever changes on disk, and a broken SKILL.md is a
recorded one-line problem, never a skill."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path
from typing import Any

from hearth.run.goal import GoalRequest
from hearth.run.runner import run_goal
from hearth.settings import Settings
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.skills_support import record_check, write_skill, write_suite


def _settings(state_dir: Path, fake: FakeOllama) -> Settings:
    return Settings.from_env(
        {
            "HEARTH_STATE_DIR": str(state_dir),
            "HEARTH_CONFIG_DIR": str(state_dir.parent / "config"),
            "OLLAMA_HOST": fake.url,
            "HEARTH_SANDBOX": "none",
        }
    )


def _run(state_dir: Path, script: list[Any], agent: str = "default") -> tuple[FakeOllama, str]:
    with FakeOllama(script) as fake:
        request = GoalRequest(goal="tidy the notes", agent_name=agent, mode="auto", source="queue")
        run_id, outcome = run_goal(request, _settings(state_dir, fake), out=io.StringIO())
    assert outcome.status == "done", outcome
    return fake, run_id


def _system(request: dict[str, Any]) -> str:
    return str(request["messages"][0]["content"])


def _tools(request: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools") or []}


def _rows(state_dir: Path, sql: str, *params: Any) -> list[dict[str, Any]]:
    conn = sqlite3.connect(state_dir / "audit.db")
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(sql, params)]
    finally:
        conn.close()


def test_a_skill_never_checked_or_whose_check_failed_is_not_in_the_prompt(state_dir: Path) -> None:
    config = state_dir.parent / "config"
    write_suite(config)
    write_skill(config / "skills", "unchecked-one", "Never checked.")
    failed = write_skill(config / "skills", "failed-one", "Its eval failed.")
    state_dir.mkdir(parents=True)
    record_check(state_dir / "audit.db", failed, "failed")
    fake, _ = _run(state_dir, [final_answer("done")])
    system = _system(fake.requests[0])
    assert "unchecked-one" not in system and "failed-one" not in system and "## Skills" not in system
    assert "load_skill" not in _tools(fake.requests[0])


def test_a_passed_skill_is_listed_and_load_skill_returns_its_body_as_a_recorded_step(state_dir: Path) -> None:
    config = state_dir.parent / "config"
    write_suite(config)
    folder = write_skill(config / "skills", "tidy-notes", "Tidy a notes folder:\n  sort and   dedupe.", "Step 1: sort.")
    (folder / "ref.md").write_text("dates are ISO 8601\n")
    state_dir.mkdir(parents=True)
    record_check(state_dir / "audit.db", folder, "passed")
    script = [
        tool_call("load_skill", {"name": "tidy-notes"}),
        tool_call("load_skill", {"name": "tidy-notes", "file": "ref.md"}),
        final_answer("done"),
    ]
    fake, run_id = _run(state_dir, script)
    system = _system(fake.requests[0])
    assert "- tidy-notes: Tidy a notes folder: sort and dedupe." in system  # one line
    assert "Step 1: sort." not in system  # the body only on demand
    assert "load_skill" in _tools(fake.requests[0])
    body = fake.requests[1]["messages"][-1]["content"]
    assert "Step 1: sort." in body and "ref.md" in body and "eval: chores" not in body
    assert "dates are ISO 8601" in fake.requests[2]["messages"][-1]["content"]
    steps = _rows(state_dir, "select tool, ok, output from steps where run_id = ? and tool = 'load_skill'", run_id)
    assert len(steps) == 2 and all(s["ok"] == 1 for s in steps) and "Step 1: sort." in steps[0]["output"]


def test_the_prompt_and_the_body_stay_as_at_run_start_when_the_skill_changes_on_disk(state_dir: Path) -> None:
    config = state_dir.parent / "config"
    write_suite(config)
    folder = write_skill(config / "skills", "tidy-notes", "First description.", "First body.")
    state_dir.mkdir(parents=True)
    record_check(state_dir / "audit.db", folder, "passed")

    def edit_then_load(body: dict[str, Any]) -> dict[str, Any]:
        write_skill(config / "skills", "tidy-notes", "Second description.", "Second body.")
        (config / "skills" / "new-one").mkdir()
        return tool_call("load_skill", {"name": "tidy-notes"})

    fake, _ = _run(state_dir, [edit_then_load, final_answer("done")])
    first, second = fake.requests
    assert first["messages"][0] == second["messages"][0]  # byte for byte
    assert "First description." in _system(first)
    assert "First body." in second["messages"][-1]["content"]


def test_a_profiles_skill_shadows_the_boxs_of_the_same_name(state_dir: Path) -> None:
    config = state_dir.parent / "config"
    write_suite(config)
    box = write_skill(config / "skills", "tidy-notes", "The box's.", "Box body.")
    (config / "agents" / "scribe").mkdir(parents=True)
    own = write_skill(config / "agents" / "scribe" / "skills", "tidy-notes", "The scribe's.", "Scribe body.")
    state_dir.mkdir(parents=True)
    record_check(state_dir / "audit.db", box, "passed")
    record_check(state_dir / "audit.db", own, "passed", scope="scribe", n=2)
    fake, _ = _run(state_dir, [tool_call("load_skill", {"name": "tidy-notes"}), final_answer("done")], "scribe")
    assert "- tidy-notes: The scribe's." in _system(fake.requests[0]) and "The box's." not in _system(fake.requests[0])
    assert "Scribe body." in fake.requests[1]["messages"][-1]["content"]
    plain, _ = _run(state_dir, [final_answer("done")])
    assert "- tidy-notes: The box's." in _system(plain.requests[0])


def test_a_broken_skill_md_is_one_recorded_line_naming_file_and_key_and_is_not_offered(state_dir: Path) -> None:
    config = state_dir.parent / "config"
    write_suite(config)
    good = write_skill(config / "skills", "good-one", "Fine.")
    bad = write_skill(config / "skills", "bad-one", "Broken.")
    state_dir.mkdir(parents=True)
    record_check(state_dir / "audit.db", good, "passed")
    (bad / "SKILL.md").write_text("---\nname: bad-one\n---\nno description\n")
    fake, run_id = _run(state_dir, [final_answer("done")])
    assert "good-one" in _system(fake.requests[0]) and "bad-one" not in _system(fake.requests[0])
    [step] = _rows(state_dir, "select detail from steps where run_id = ? and kind = 'skill_invalid'", run_id)
    assert step["detail"].startswith(f"{bad / 'SKILL.md'}: description must say")
    assert "\n" not in step["detail"]
