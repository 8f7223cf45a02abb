"""The system prompt: parts in order, placeholders frozen at run start, byte-identical in every request."""

from __future__ import annotations

import io
import sqlite3
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agent.context.prompt import (
    FALLBACKS,
    PromptPart,
    compose,
    fill,
    freeze_values,
    local_timezone,
    unknown_placeholders,
)
from hearth.run.goal import GoalRequest
from hearth.run.runner import run_goal
from hearth.settings import Settings
from tests.fake_ollama import FakeOllama, final_answer, tool_call

ALL_PLACEHOLDERS = " | ".join(f"{name}={{{{{name}}}}}" for name in FALLBACKS)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def run(
    tmp_path: Path, state_dir: Path, script: list[Any], *, agent: str = "builder", workspace: Path | None = None
) -> tuple[FakeOllama, str]:
    with FakeOllama(script) as fake:
        settings = Settings.from_env(
            {"HEARTH_STATE_DIR": str(state_dir), "HEARTH_CONFIG_DIR": str(tmp_path / "config"), "OLLAMA_HOST": fake.url}
        )
        request = GoalRequest(goal="do it", agent_name=agent, mode="bypass", workspace=workspace or tmp_path / "ws")
        run_id, _ = run_goal(request, settings, out=io.StringIO())
    return fake, run_id


def system_prompts(fake: FakeOllama) -> list[str]:
    return [r["messages"][0]["content"] for r in fake.requests]


def test_parts_come_in_order_base_prompts_by_filename_role_voice_project_run(tmp_path: Path, state_dir: Path) -> None:
    config = tmp_path / "config"
    write(config / "prompts" / "20-second.md", "SECOND-PROMPT")
    write(config / "prompts" / "10-first.md", "FIRST-PROMPT")
    write(config / "prompts" / "notes.txt", "NOT-A-PROMPT")
    write(config / "agents" / "builder" / "AGENTS.md", "ROLE-TEXT")
    write(config / "SOUL.md", "SOUL-TEXT")
    write(tmp_path / "ws" / "AGENTS.md", "PROJECT-TEXT")
    fake, _ = run(tmp_path, state_dir, [final_answer("ok")])
    prompt = system_prompts(fake)[0]
    order = [
        "You are builder",
        "Tools you may call",
        "FIRST-PROMPT",
        "SECOND-PROMPT",
        "ROLE-TEXT",
        "SOUL-TEXT",
        "## Project notes from AGENTS.md",
        "PROJECT-TEXT",
    ]
    positions = [prompt.index(marker) for marker in order]
    assert positions == sorted(positions)
    assert "NOT-A-PROMPT" not in prompt


def test_without_per_run_placeholders_an_agents_prompt_is_the_same_in_every_run(
    tmp_path: Path, state_dir: Path
) -> None:
    write(tmp_path / "config" / "agents" / "builder" / "AGENTS.md", "Role for {{agentName}}.")
    first, first_id = run(tmp_path, state_dir, [final_answer("ok")])
    second, second_id = run(tmp_path, state_dir, [final_answer("ok")])
    assert first_id != second_id
    assert system_prompts(first) == system_prompts(second)  # Ollama may reuse its cache across runs
    assert "Role for builder." in system_prompts(first)[0]
    assert second.requests[0]["messages"][1]["content"] == "do it"


def test_the_prompt_is_byte_identical_in_every_request_of_a_run(tmp_path: Path, state_dir: Path) -> None:
    write(tmp_path / "config" / "agents" / "builder" / "AGENTS.md", f"Role. {ALL_PLACEHOLDERS}")
    script = [tool_call("write_file", {"path": f"f{i}.txt", "content": "x"}) for i in range(4)]
    fake, _ = run(tmp_path, state_dir, [*script, final_answer("done")])
    prompts = system_prompts(fake)
    assert len(prompts) == 5 and len(set(prompts)) == 1
    for earlier, later in zip(fake.requests, fake.requests[1:]):
        assert later["messages"][: len(earlier["messages"])] == earlier["messages"]


def test_placeholders_take_the_values_frozen_at_run_start(tmp_path: Path, state_dir: Path) -> None:
    write(tmp_path / "config" / "agents" / "builder" / "AGENTS.md", ALL_PLACEHOLDERS)
    workspace = tmp_path / "ws"
    write(workspace / "draft.txt", "uncommitted work")  # the before-run checkpoint commits it first
    fake, run_id = run(tmp_path, state_dir, [final_answer("ok")], workspace=workspace)
    line = next(x for x in system_prompts(fake)[0].splitlines() if x.startswith("workspaceRoot="))
    values = dict(item.split("=", 1) for item in line.split(" | "))
    [git_dir] = (state_dir / "checkpoints").iterdir()  # the history lives in hearth's own git directory
    head = subprocess.run(
        ["git", "--git-dir", str(git_dir), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    assert values["workspaceRoot"] == str(workspace.resolve())
    assert (values["agentName"], values["runId"], values["model"]) == ("builder", run_id, "qwen2.5-coder")
    assert (values["gitBranch"], values["gitHeadShortSha"], values["gitDirty"]) == ("main", head, "no")
    started = datetime.fromisoformat(values["currentDateTimeIso"])
    assert abs(datetime.now(UTC) - started) < timedelta(minutes=1)
    assert values["currentTimeZone"] == local_timezone()


def test_an_unknown_placeholder_is_left_as_written_and_recorded(tmp_path: Path, state_dir: Path) -> None:
    write(tmp_path / "config" / "SOUL.md", "Speak as {{persona}}.")
    fake, run_id = run(tmp_path, state_dir, [final_answer("ok")], agent="default")
    assert "Speak as {{persona}}." in system_prompts(fake)[0]
    conn = sqlite3.connect(state_dir / "audit.db")
    [(detail,)] = conn.execute("select detail from steps where run_id = ? and kind = 'prompt_warning'", [run_id])
    assert "unknown placeholder {{persona}}" in detail and "SOUL.md" in detail


def test_soul_md_is_read_from_the_config_dir_and_never_from_the_workspace(tmp_path: Path, state_dir: Path) -> None:
    write(tmp_path / "config" / "SOUL.md", "CONFIG-SOUL")
    write(tmp_path / "ws" / "SOUL.md", "WORKSPACE-SOUL")
    fake, _ = run(tmp_path, state_dir, [final_answer("ok")], agent="default")
    assert "CONFIG-SOUL" in system_prompts(fake)[0] and "WORKSPACE-SOUL" not in system_prompts(fake)[0]


def test_placeholders_in_a_workspace_file_stay_literal(tmp_path: Path, state_dir: Path) -> None:
    write(tmp_path / "config" / "agents" / "builder" / "AGENTS.md", "role")
    write(tmp_path / "ws" / "AGENTS.md", "Templates here use {{runId}} and {{whatever}} literally.")
    fake, run_id = run(tmp_path, state_dir, [final_answer("ok")])
    prompt = system_prompts(fake)[0]
    assert "Templates here use {{runId}} and {{whatever}} literally." in prompt
    conn = sqlite3.connect(state_dir / "audit.db")
    assert not list(conn.execute("select 1 from steps where kind = 'prompt_warning'"))


def test_values_that_cannot_be_known_take_their_documented_fallbacks() -> None:
    values = freeze_values(
        workspace_root="", agent_name="", run_id="", model="", now=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), git={}
    )
    assert values["currentDateTimeIso"] == "2026-01-02T03:04:05+00:00"
    for name in ("workspaceRoot", "agentName", "runId", "model", "gitBranch", "gitHeadShortSha", "gitDirty"):
        assert values[name] == FALLBACKS[name]
    assert (values["gitBranch"], values["gitHeadShortSha"], values["gitDirty"]) == ("none", "none", "unknown")


def test_fill_reports_unknown_names_and_tolerates_spaces_inside_braces() -> None:
    text, unknown = fill("{{ agentName }} {{nope}} {{model}}", {"agentName": "a", "model": "m"})
    assert text == "a {{nope}} m" and unknown == ["nope"]
    assert unknown_placeholders("{{gitBranch}} {{x}} {{ y }}") == ["x", "y"]


def test_compose_keeps_each_parts_source_and_size_and_skips_empty_parts() -> None:
    prompt = compose(
        [PromptPart("a", "built-in", "alpha"), PromptPart("b", "/x", "\n\n"), PromptPart("c", "/y", "{{agentName}}")],
        {"agentName": "zed"},
    )
    assert prompt.text == "alpha\n\nzed\n"
    assert [(p.label, p.source, p.chars) for p in prompt.parts] == [("a", "built-in", 5), ("c", "/y", 3)]


def test_the_time_zone_comes_from_tz_then_etc_timezone_then_the_localtime_link(tmp_path: Path) -> None:
    assert local_timezone({"TZ": "Europe/Berlin"}, tmp_path) == "Europe/Berlin"
    assert local_timezone({"TZ": ":/usr/share/zoneinfo/Asia/Tokyo"}, tmp_path) == "Asia/Tokyo"
    write(tmp_path / "timezone", "America/Lima\n")
    assert local_timezone({}, tmp_path) == "America/Lima"
    (tmp_path / "timezone").unlink()
    (tmp_path / "localtime").symlink_to("/usr/share/zoneinfo/Africa/Accra")
    assert local_timezone({}, tmp_path) == "Africa/Accra"
