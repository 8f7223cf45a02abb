"""The model router: `auto`, rules in router.toml, tags, fallbacks and escalation, end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hearth.errors import ConfigError
from hearth.run.router import Facts, Router, against_pulled, load_router, not_pulled, resolve_tag, route
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, Raw, final_answer, tool_call
from tests.queue_support import drop, rows

ROUTER = """
default = "general:8b"

[[rule]]
name = "planner"
model = "thinker:14b"
modes = ["plan"]

[[rule]]
name = "coder"
model = "qwen2.5-coder:7b"
agents = ["builder"]
tools = ["run_command"]
fallbacks = ["qwen2.5-coder:3b"]

[[rule]]
name = "tests"
model = "tester:7b"
goal = "(?i)\\\\btests?\\\\b"
goal_max_chars = 200

[[rule]]
name = "nightly"
model = "slow:32b"
sources = ["timer"]
"""


def _router(config: Path, text: str = ROUTER) -> Router:
    _write(config, text)
    return load_router(config)


def _write(config: Path, text: str) -> None:
    config.mkdir(parents=True, exist_ok=True)
    (config / "router.toml").write_text(text)


def _facts(**given: object) -> Facts:
    base: dict[str, object] = {"agent": "default", "mode": "auto", "tools": None, "source": "cli", "goal": "do it"}
    return Facts(**{**base, **given})  # type: ignore[arg-type]


def _route(router: Router, **given: object) -> tuple[str, str]:
    chosen = route(router, _facts(**given), requested="auto", profile_model=None, host_default="host:1b")
    return chosen.model, chosen.reason


def test_rules_match_in_order_on_mode_agent_tools_goal_and_source(tmp_path: Path) -> None:
    router = _router(tmp_path)
    assert _route(router, mode="plan", agent="builder") == ("thinker:14b", "planner")  # the first rule wins
    assert _route(router, agent="builder") == ("qwen2.5-coder:7b", "coder")  # every tool includes run_command
    assert _route(router, agent="builder", tools=("read_file",), goal="write tests") == ("tester:7b", "tests")
    assert _route(router, goal="write tests " + "x" * 300) == ("general:8b", "default")  # too long for `tests`
    assert _route(router, source="timer") == ("slow:32b", "nightly")
    assert _route(Router(), source="timer") == ("host:1b", "default")  # no file: HEARTH_MODEL


def test_a_named_model_or_the_profile_s_wins_over_the_rules(tmp_path: Path) -> None:
    router = _router(tmp_path)
    named = route(router, _facts(mode="plan"), requested="mine:1b", profile_model="theirs:2b", host_default="h")
    assert (named.model, named.reason, named.requested) == ("mine:1b", "request", "mine:1b")
    profile = route(router, _facts(mode="plan"), requested="", profile_model="theirs:2b", host_default="h")
    assert (profile.model, profile.reason, profile.requested) == ("theirs:2b", "profile", "auto")


def test_tags_resolve_as_ollama_does_and_an_unknown_model_says_what_is_pulled() -> None:
    assert resolve_tag("qwen2.5-coder", ["qwen2.5-coder:7b", "llama3.2:3b"]) == "qwen2.5-coder:7b"
    assert resolve_tag("qwen2.5-coder", ["qwen2.5-coder:7b", "qwen2.5-coder:latest"]) == "qwen2.5-coder:latest"
    assert resolve_tag("qwen2.5-coder", ["qwen2.5-coder:7b", "qwen2.5-coder:3b"]) is None  # which one? not a guess
    assert resolve_tag("qwen2.5-coder:14b", ["qwen2.5-coder:7b"]) is None
    assert not_pulled("qwen2.5-codr:7b", ["qwen2.5-coder:7b", "llama3.2:3b"]) == (
        "model qwen2.5-codr:7b is not pulled; pulled models: qwen2.5-coder:7b, llama3.2:3b; "
        "did you mean qwen2.5-coder:7b?"
    )


def test_a_model_not_pulled_gives_way_to_its_fallback_and_auto_to_any_pulled_model(tmp_path: Path) -> None:
    coder = route(_router(tmp_path), _facts(agent="builder"), requested=None, profile_model=None, host_default="h")
    fell = against_pulled(coder, ["qwen2.5-coder:3b", "other:1b"])
    assert (fell.model, fell.reason, fell.fallbacks) == ("qwen2.5-coder:3b", "fallback", ())
    anything = against_pulled(coder, ["other:1b"])
    assert (anything.model, anything.reason) == ("other:1b", "fallback")
    named = route(Router(), _facts(), requested="missing:1b", profile_model=None, host_default="h")
    assert against_pulled(named, ["other:1b"]).problem.startswith("model missing:1b is not pulled")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("[[rule]\nmodel = 1", "router.toml is not valid TOML"),
        ('[[rule]]\nname = "empty"', "router.toml: rule[0] names no model; add model"),
        ('[[rule]]\nmodel = "m"\nmodes = ["yolo"]', "router.toml: rule[0].modes: 'yolo' is not one of plan"),
        ('[[rule]]\nmodel = "m"\ngoal = "("', "router.toml: rule[0].goal is not a valid regular expression"),
        ('[[rule]]\nmodel = "m"\nagent = ["x"]', "router.toml: rule[0]: unknown key 'agent'"),
        ('default = "auto"', "router.toml: default must be a model name"),
        ('[[rule]]\nmodel = "m"\ngoal_max_chars = -1', "router.toml: rule[0].goal_max_chars must be a whole"),
    ],
)
def test_a_bad_router_file_is_one_line_naming_the_file_and_the_field(tmp_path: Path, text: str, error: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _router(tmp_path, text)
    assert error in str(caught.value) and "\n" not in str(caught.value)


def _show(run_id: str) -> dict[str, object]:
    proc = run_cli("hearth", "show", run_id, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["run"]


def test_the_command_center_default_launch_runs_to_done_on_a_host_with_one_pulled_model(state_dir: Path) -> None:
    # What the command center sends by default: a free-text label as `name`, and `auto`.
    launch = {"name": "agent", "model": "auto", "prompt": "Say hello.", "mode": "auto", "tools": ""}
    with FakeOllama([final_answer("hello")], models=("llama3.2:3b",)) as fake:
        drop(state_dir / "queue", "cc-default.json", launch)
        proc = run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url})
    assert proc.returncode == 0, proc.stderr
    run = _show("cc-default")
    assert (run["status"], run["agent_name"], run["label"]) == ("done", "default", "agent")
    assert (run["model"], run["model_requested"], run["model_reason"]) == ("llama3.2:3b", "auto", "fallback")
    assert [body["model"] for body in fake.requests] == ["llama3.2:3b"]
    shown = run_cli("hearth", "show", "cc-default").stdout
    assert "model: llama3.2:3b (asked auto; why: fallback)" in shown and "label='agent'" in shown
    report = json.loads(run_cli("hearth", "report", "--json").stdout)
    assert report["by_model_reason"] == {"fallback": 1}


def test_the_default_model_runs_by_its_only_pulled_tag(state_dir: Path) -> None:
    with FakeOllama([final_answer("ok")], models=("qwen2.5-coder:7b",)) as fake:
        proc = run_cli("hearth-loop", "say ok", env={"OLLAMA_HOST": fake.url, "HEARTH_MODEL": "qwen2.5-coder"})
    assert proc.returncode == 0, proc.stderr
    [run] = rows(state_dir, "select model, model_requested, model_reason from runs")
    assert run == {"model": "qwen2.5-coder:7b", "model_requested": "auto", "model_reason": "tag"}
    assert fake.requests[0]["model"] == "qwen2.5-coder:7b"


def test_a_named_model_that_is_not_pulled_ends_the_run_with_what_is_pulled(state_dir: Path) -> None:
    with FakeOllama([], models=("qwen2.5-coder:7b", "llama3.2:3b")) as fake:
        proc = run_cli("hearth-loop", "--model", "qwen2.5-codr:7b", "hi", env={"OLLAMA_HOST": fake.url})
    assert proc.returncode == 4  # model unavailable
    assert "did you mean qwen2.5-coder:7b?" in proc.stdout + proc.stderr
    [run] = rows(state_dir, "select status, error from runs")
    assert run["status"] == "model_unavailable" and "pulled models: qwen2.5-coder:7b, llama3.2:3b" in run["error"]
    assert fake.requests == []  # no model call was made


def test_a_run_ending_model_unavailable_is_followed_by_a_linked_run_on_the_fallback(
    state_dir: Path, tmp_path: Path
) -> None:
    _router(tmp_path / "config", '[[rule]]\nname = "all"\nmodel = "big:14b"\nfallbacks = ["small:3b"]\n')
    gone = Raw(404, json.dumps({"error": 'model "big:14b" not found, try pulling it first'}))
    with FakeOllama([gone, final_answer("done small")], models=("big:14b", "small:3b")) as fake:
        proc = run_cli("hearth-loop", "hi", env={"OLLAMA_HOST": fake.url})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first, second = rows(state_dir, "select * from runs order by started_at, rowid")
    assert (first["status"], first["model"], first["model_reason"]) == ("model_unavailable", "big:14b", "all")
    assert (second["status"], second["model"], second["model_reason"]) == ("done", "small:3b", "fallback")
    assert (second["id"], second["parent_run"], second["link"]) == (f"{first['id']}.fallback", first["id"], "fallback")


def test_escalate_retries_a_run_that_hit_its_limit_once_on_the_next_model(state_dir: Path, tmp_path: Path) -> None:
    router = '[[rule]]\nname = "cheap"\nmodel = "small:3b"\nfallbacks = ["big:14b", "huge:70b"]\nescalate = true\n'
    _router(tmp_path / "config", router)
    script = [tool_call("list_files", {"path": "."}), tool_call("list_files", {"path": "."})]
    with FakeOllama(script, models=("small:3b", "big:14b", "huge:70b")) as fake:
        proc = run_cli("hearth-loop", "--max-iters", "1", "look", env={"OLLAMA_HOST": fake.url})
    assert proc.returncode == 3  # the escalated run hit its limit too, and is not escalated again
    runs = rows(state_dir, "select * from runs order by started_at, rowid")
    assert [(r["status"], r["model"], r["link"], r["parent_run"]) for r in runs] == [
        ("iteration_limit", "small:3b", None, None),
        ("iteration_limit", "big:14b", "escalation", runs[0]["id"]),
    ]
    assert runs[0]["workspace"] == runs[1]["workspace"]  # the same work goes on
    assert [body["model"] for body in fake.requests] == ["small:3b", "big:14b"]


def test_a_broken_router_file_never_stops_a_run(state_dir: Path, tmp_path: Path) -> None:
    _write(tmp_path / "config", "[[rule]]\nname = 'x'\n")
    with FakeOllama([final_answer("fine")]) as fake:
        proc = run_cli("hearth-loop", "hi", env={"OLLAMA_HOST": fake.url})
    assert proc.returncode == 0, proc.stderr
    assert "rule[0] names no model" in proc.stdout
    [run] = rows(state_dir, "select status, model_reason from runs")
    assert run == {"status": "done", "model_reason": "default"}


def test_hearth_doctor_catches_a_bad_router_budget_or_alerts_file(state_dir: Path, tmp_path: Path) -> None:
    config = tmp_path / "config"
    _write(config, '[[rule]]\nname = "x"\n')
    (config / "budget.toml").write_text("daily = -3\n")
    (config / "alerts.toml").write_text(
        '[[destination]]\nname = "p"\nurl = "json://u:{cred:nope}@127.0.0.1:9/"\nlocal = true\n'
    )
    proc = run_cli("hearth", "doctor", "--json")
    found = {f["check"]: f["message"] for f in json.loads(proc.stdout)["findings"] if f["status"] == "error"}
    assert "router.toml: rule[0] names no model" in found["router"]
    assert "budget.toml: daily must be a whole number of tokens" in found["budget"]
    assert found["alerts"] == "alert destination p names credential 'nope', which the store does not have"
