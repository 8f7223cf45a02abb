"""Agent profiles: resolution from HEARTH_CONFIG_DIR, precedence of flags and requests, clear errors."""

from __future__ import annotations

import io
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.tools.builtin import COMMON, manifest_of
from agent.tools.gate import visible_tools
from hearth.errors import ConfigError, UsageError
from hearth.limits import MAX_ITERATIONS
from hearth.run.goal import GoalRequest
from hearth.run.profiles import Chosen, apply_profile, load_profile, profile_names
from hearth.run.runner import run_goal
from hearth.settings import Settings
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer, tool_call

UNSET: dict[str, Any] = {"model": None, "mode": None, "max_iters": None, "allowed_tools": None}

MODELS = ("qwen2.5-coder", "qwen2.5-coder:latest", "small-model")


def make_profile(config: Path, name: str, role: str | None = "You build things.\n", toml: str | None = None) -> Path:
    directory = config / "agents" / name
    directory.mkdir(parents=True)
    if role is not None:
        (directory / "AGENTS.md").write_text(role)
    if toml is not None:
        (directory / "agent.toml").write_text(toml)
    return directory


def rows(state_dir: Path, sql: str) -> list[dict[str, Any]]:
    conn = sqlite3.connect(state_dir / "audit.db")
    conn.row_factory = sqlite3.Row
    return [dict(r) for r in conn.execute(sql)]


def tool_names(request: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools", [])}


def test_a_profile_reads_its_role_and_settings(tmp_path: Path) -> None:
    make_profile(
        tmp_path,
        "builder",
        toml='model = "small-model"\nmode = "plan"\nallowed_tools = ["read_file"]\nmax_iterations = 5\n',
    )
    profile = load_profile(tmp_path, "builder")
    assert profile.role == "You build things.\n" and profile.role_path == tmp_path / "agents/builder/AGENTS.md"
    assert (profile.model, profile.mode, profile.allowed_tools, profile.max_iterations) == (
        "small-model",
        "plan",
        ("read_file",),
        5,
    )


def test_a_research_profiles_runs_are_research_runs_with_its_limits(tmp_path: Path) -> None:
    from hearth.dispatch.claimed import research_of
    from hearth.queue.longspec import Research
    from hearth.queue.request import Request

    make_profile(tmp_path / "config", "scout", toml="[research]\nmax_pages = 3\nper_question = 1\n")
    settings = Settings.from_env({"HEARTH_CONFIG_DIR": str(tmp_path / "config"), "HEARTH_STATE_DIR": str(tmp_path)})
    assert load_profile(settings.config_dir, "scout").research == Research(max_pages=3, per_question=1)
    asked = Request(id="q1", goal="What is new in 3.13?", agent_name="scout")
    assert research_of(asked, settings) == Research(max_pages=3, per_question=1)
    own = Request(id="q2", goal="g", agent_name="scout", research=Research(max_pages=9))
    assert research_of(own, settings) == Research(max_pages=9)  # the request's own limits win
    assert research_of(Request(id="q3", goal="g", agent_name="scout", continues="q1"), settings) is None  # a follow-up
    assert research_of(Request(id="q4", goal="g"), settings) is None


def test_default_and_hearths_own_agents_exist_without_any_config(tmp_path: Path) -> None:
    assert profile_names(tmp_path / "missing") == ["default", "demo", "evolve", "self-test"]
    profile = load_profile(tmp_path / "missing", "default")
    assert profile.builtin and profile.role == "" and profile.model is None


def test_a_profile_directory_replaces_the_builtin_default(tmp_path: Path) -> None:
    make_profile(tmp_path, "default", role="Site-wide role.\n", toml='mode = "plan"\n')
    profile = load_profile(tmp_path, "default")
    assert not profile.builtin and profile.role == "Site-wide role.\n" and profile.mode == "plan"


def test_an_unknown_name_lists_the_profiles_there_are(tmp_path: Path) -> None:
    make_profile(tmp_path, "builder")
    make_profile(tmp_path, "reviewer")
    with pytest.raises(UsageError) as caught:
        load_profile(tmp_path, "buidler")
    message = str(caught.value)
    assert "unknown agent profile 'buidler'" in message
    assert "configured: builder, reviewer; built in: default, demo, evolve, self-test" in message
    assert "\n" not in message


@pytest.mark.parametrize("name", ["../etc", "a/b", "", ".hidden", "x" * 65])
def test_a_name_that_is_not_a_plain_word_is_refused_before_any_path_is_built(tmp_path: Path, name: str) -> None:
    with pytest.raises(UsageError, match="is not valid"):
        load_profile(tmp_path, name)


@pytest.mark.parametrize(
    ("toml", "reason"),
    [
        ("temperature = 0.2\n", "unknown setting 'temperature'"),
        ('mode = "yolo"\n', "mode must be one of plan, auto, bypass, got 'yolo'"),
        ("max_iterations = 0\n", "max_iterations must be a whole number from 1 to 100, got 0"),
        ("max_iterations = true\n", "max_iterations must be a whole number"),
        ('allowed_tools = "read_file"\n', "allowed_tools must be a list of tool names"),
        ('model = ""\n', "model must be a model name"),
        ("model = \n", "is not valid TOML"),
        ("reply_tokens = 5\n", "reply_tokens must be a whole number of tokens from 16 to 65536, got 5"),
        ("[research]\nmax_pages = 0\n", "research.max_pages: input should be greater than or equal to 1"),
        ("[research]\npages = 3\n", "research.pages: extra inputs are not permitted"),
        ("research = true\n", "research must be a table of limits"),
    ],
    ids=[
        "unknown-key",
        "bad-mode",
        "zero-iters",
        "bool-iters",
        "tools-not-list",
        "empty-model",
        "bad-toml",
        "tiny-reply",
        "research-no-pages",
        "research-unknown-limit",
        "research-not-a-table",
    ],
)
def test_a_broken_settings_file_is_a_config_error_naming_the_file(tmp_path: Path, toml: str, reason: str) -> None:
    directory = make_profile(tmp_path, "builder", toml=toml)
    with pytest.raises(ConfigError) as caught:
        load_profile(tmp_path, "builder")
    assert str(directory / "agent.toml") in str(caught.value) and reason in str(caught.value)


def test_explicit_values_win_over_the_profile_which_wins_over_hearths_defaults(tmp_path: Path) -> None:
    make_profile(
        tmp_path,
        "builder",
        toml='model = "small-model"\nmode = "plan"\nallowed_tools = ["read_file"]\nmax_iterations = 5\n',
    )
    profile = load_profile(tmp_path, "builder")
    defaults = Settings.from_env({"HEARTH_MODEL": "dflt"})
    unset = apply_profile(profile, model=None, mode=None, max_iters=None, allowed_tools=None, defaults=defaults)
    assert unset == Chosen(model="small-model", mode="plan", max_iters=5, allowed_tools=("read_file",))
    given = apply_profile(
        profile, model="big", mode="bypass", max_iters=9, allowed_tools=["list_files"], defaults=defaults
    )
    assert given == Chosen(model="big", mode="bypass", max_iters=9, allowed_tools=("list_files",))
    bare = apply_profile(
        load_profile(tmp_path, "demo"), model=None, mode=None, max_iters=None, allowed_tools=None, defaults=defaults
    )
    assert bare == Chosen(model="dflt", mode="auto", max_iters=12, allowed_tools=None)
    site = Settings.from_env({"HEARTH_MODE": "plan", "HEARTH_MAX_ITERATIONS": "30"})
    assert apply_profile(
        load_profile(tmp_path, "demo"), model=None, mode=None, max_iters=None, allowed_tools=None, defaults=site
    ) == Chosen(model="qwen2.5-coder", mode="plan", max_iters=30, allowed_tools=None)


def test_a_replys_cap_is_the_requests_else_the_profiles_else_the_hosts(tmp_path: Path) -> None:
    make_profile(tmp_path, "terse", toml="reply_tokens = 300\n")
    terse, demo = load_profile(tmp_path, "terse"), load_profile(tmp_path, "demo")
    host = Settings.from_env({"HEARTH_REPLY_TOKENS": "1024"})
    none: dict[str, None] = {"model": None, "mode": None, "max_iters": None, "allowed_tools": None}
    assert apply_profile(terse, **none, defaults=host).reply_tokens == 300
    assert apply_profile(terse, **none, defaults=host, reply_tokens=99).reply_tokens == 99
    assert apply_profile(demo, **none, defaults=host).reply_tokens == 1024
    assert apply_profile(demo, **none, defaults=Settings.from_env({})).reply_tokens == 2048


def test_the_profile_ceiling_is_the_runners() -> None:
    assert MAX_ITERATIONS == MAX_ITERATIONS


def test_hearth_loop_applies_the_profile_to_the_model_tools_and_iterations(state_dir: Path, tmp_path: Path) -> None:
    make_profile(
        tmp_path / "config",
        "scout",
        toml='model = "small-model"\nmode = "plan"\nallowed_tools = ["list_files"]\nmax_iterations = 2\n',
    )
    with FakeOllama([tool_call("list_files", {})], models=MODELS, repeat_last=True) as fake:
        proc = run_cli("hearth-loop", "--ollama-host", fake.url, "--agent-name", "scout", "look around")
    assert proc.returncode == 3, proc.stderr  # stopped at the profile's 2 iterations
    assert len(fake.requests) == 2
    assert {r["model"] for r in fake.requests} == {"small-model"}
    assert tool_names(fake.requests[0]) == {"list_files"}
    [run] = rows(state_dir, "select * from runs")
    assert (run["agent_name"], run["model"], run["mode"], run["iterations"]) == ("scout", "small-model", "plan", 2)


def test_flags_given_on_the_command_line_override_the_profile(state_dir: Path, tmp_path: Path) -> None:
    make_profile(
        tmp_path / "config",
        "scout",
        toml='model = "small-model"\nmode = "plan"\nallowed_tools = ["list_files"]\nmax_iterations = 2\n',
    )
    with FakeOllama([tool_call("list_files", {})], models=MODELS, repeat_last=True) as fake:
        proc = run_cli(
            "hearth-loop",
            "--ollama-host",
            fake.url,
            "--agent-name",
            "scout",
            "--model",
            "qwen2.5-coder",
            "--max-iters",
            "3",
            "--mode",
            "bypass",
            "--allowed-tools",
            "list_files,read_file",
            "look",
        )
    assert proc.returncode == 3
    assert len(fake.requests) == 3 and {r["model"] for r in fake.requests} == {"qwen2.5-coder"}
    assert tool_names(fake.requests[0]) == {"list_files", "read_file"}
    [run] = rows(state_dir, "select * from runs")
    assert (run["model"], run["mode"]) == ("qwen2.5-coder", "bypass")


def test_a_requests_fields_override_the_profile(state_dir: Path, tmp_path: Path) -> None:
    make_profile(tmp_path / "config", "scout", toml='model = "small-model"\nmode = "plan"\n')
    with FakeOllama([final_answer("ok")], models=MODELS) as fake:
        settings = Settings.from_env(
            {"HEARTH_STATE_DIR": str(state_dir), "HEARTH_CONFIG_DIR": str(tmp_path / "config"), "OLLAMA_HOST": fake.url}
        )
        request = GoalRequest(goal="g", agent_name="scout", mode="bypass", source="queue", workspace=tmp_path / "ws")
        _, outcome = run_goal(request, settings, out=io.StringIO())
    assert outcome.status == "done"
    assert fake.requests[0]["model"] == "small-model"  # not given: the profile's
    assert "run_command" in tool_names(fake.requests[0])  # bypass, from the request, shows every tool


def test_an_unknown_profile_exits_2_with_one_line_and_is_recorded_as_rejected(state_dir: Path, tmp_path: Path) -> None:
    make_profile(tmp_path / "config", "builder")
    proc = run_cli("hearth-loop", "--agent-name", "nobody", "do it")
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "hearth-loop: unknown agent profile 'nobody'; configured: builder; built in: default, demo, evolve, "
        "self-test "
        f"(add {tmp_path}/config/agents/nobody/AGENTS.md to create it)"
    )
    [run] = rows(state_dir, "select * from runs")
    assert run["status"] == "rejected" and run["agent_name"] == "nobody" and "unknown agent profile" in run["error"]


def test_a_broken_profile_rejects_the_run_naming_the_file(state_dir: Path, tmp_path: Path) -> None:
    make_profile(tmp_path / "config", "builder", toml='mode = "yolo"\n')
    proc = run_cli("hearth-loop", "--agent-name", "builder", "do it")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "agents/builder/agent.toml: mode must be one of" in proc.stderr
    assert rows(state_dir, "select status from runs") == [{"status": "rejected"}]


def test_the_manifest_the_nixos_module_writes_loads_and_its_name_must_match(tmp_path: Path) -> None:
    make_profile(
        tmp_path,
        "notes",
        toml='name = "notes"\nmodel = "llama3.1"\nmode = "plan"\nallowed_tools = ["read_file", "list_files"]\n',
    )
    assert load_profile(tmp_path, "notes").allowed_tools == ("read_file", "list_files")
    make_profile(tmp_path, "copied", toml='name = "notes"\n')
    with pytest.raises(ConfigError, match="name must be 'copied', the directory's name"):
        load_profile(tmp_path, "copied")


@pytest.mark.parametrize(
    ("env", "reason"),
    [
        ({"HEARTH_MODE": "yolo"}, "HEARTH_MODE must be one of plan, auto, bypass, got 'yolo'"),
        ({"HEARTH_MAX_ITERATIONS": "0"}, "HEARTH_MAX_ITERATIONS must be a whole number from 1 to 100, got '0'"),
    ],
)
def test_site_defaults_from_the_environment_are_checked(state_dir: Path, env: dict[str, str], reason: str) -> None:
    proc = run_cli("hearth-loop", "go", env=env)
    assert proc.returncode == 2 and proc.stderr.strip() == f"hearth-loop: {reason}"


def test_a_profile_without_a_tool_list_is_shown_the_common_set_and_all_is_one_setting_away(tmp_path: Path) -> None:
    make_profile(tmp_path, "wide", toml='tool_set = "all"\n')
    defaults = Settings.from_env({})
    plain = apply_profile(load_profile(tmp_path, "default"), **UNSET, defaults=defaults)
    wide = apply_profile(load_profile(tmp_path, "wide"), **UNSET, defaults=defaults)
    host_all = apply_profile(
        load_profile(tmp_path, "default"), **UNSET, defaults=Settings.from_env({"HEARTH_TOOL_SET": "all"})
    )
    assert manifest_of(plain.allowed_tools, plain.tool_set) == list(COMMON)
    assert manifest_of(wide.allowed_tools, wide.tool_set) is None  # every tool
    assert manifest_of(host_all.allowed_tools, host_all.tool_set) is None
    listed = apply_profile(load_profile(tmp_path, "wide"), **{**UNSET, "allowed_tools": ["kb_add"]}, defaults=defaults)
    assert manifest_of(listed.allowed_tools, listed.tool_set) == ["kb_add"]  # a list wins over any set
    assert manifest_of(None, "common", ["files__read"]) == [*COMMON, "files__read"]  # approved MCP tools stay


def test_plan_mode_shows_no_tool_that_writes_or_runs(tmp_path: Path) -> None:
    for tool_set in ("common", "all"):
        shown = visible_tools(manifest_of(None, tool_set), "plan")
        assert shown and all(t.risk == "safe" and not t.writes for t in shown), [t.name for t in shown]


def test_a_bad_tool_set_think_or_web_extract_names_the_setting(tmp_path: Path) -> None:
    for toml, said in (
        ('tool_set = "most"', "tool_set must be one of common, all"),
        ('think = "max"', "think must be true, false or one of low, medium, high"),
        ("web_extract = 1", "web_extract must be true or false"),
    ):
        name = f"odd-{toml.split()[0]}"
        make_profile(tmp_path, name, toml=toml + "\n")
        with pytest.raises(ConfigError, match=said):
            load_profile(tmp_path, name)


def test_a_run_whose_profiles_have_no_research_table_never_loads_pydantic(tmp_path: Path) -> None:
    """Every run reads its profile; pydantic (a tenth of a second to import on a busy box) is for
    the [research] table alone."""
    script = """
import sys
from hearth.cli import loop
from pathlib import Path
from hearth.run.profiles import load_profile
(Path(sys.argv[1]) / "agents" / "tidy").mkdir(parents=True)
(Path(sys.argv[1]) / "agents" / "tidy" / "agent.toml").write_text("max_iterations = 5\\n")
load_profile(Path(sys.argv[1]), "tidy")
print(sorted(m for m in sys.modules if m.split(".")[0] in ("pydantic", "pydantic_core")))
"""
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
