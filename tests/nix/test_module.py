"""nix/module.nix evaluated without nixpkgs: option types, required options, what it writes, and
every .nix file of the repository parses."""

from __future__ import annotations

import json
import subprocess
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agent.context.prompt import unknown_placeholders
from hearth.errors import UsageError
from hearth.run.admission import resolved
from hearth.run.goal import GoalRequest
from hearth.run.profiles import load_profile
from hearth.run.prompting import config_parts
from hearth.settings import Settings
from tests.nixunits import NIX_INSTANTIATE, ROOT, NixError, evaluate, needs_nix

pytestmark = needs_nix


def nix_files() -> list[Path]:
    tracked = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.nix"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [ROOT / name for name in tracked]


def test_the_repository_has_its_nix_files() -> None:
    names = {path.relative_to(ROOT).as_posix() for path in nix_files()}
    assert {"flake.nix", "nix/module.nix", "nix/units.nix", "nix/package.nix", "nix/vm-test.nix"} <= names


@pytest.mark.parametrize("path", nix_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_nix_file_parses(path: Path) -> None:
    done = subprocess.run([NIX_INSTANTIATE, "--parse", str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def _error(hearth: dict[str, Any], tmp: Path) -> str:
    with pytest.raises(NixError) as failure:
        evaluate({"enable": True, **hearth}, tmp)
    return str(failure.value)


@pytest.mark.parametrize(
    ("hearth", "message"),
    [
        ({"maxIterations": "twelve"}, "services.hearth.maxIterations' has a value of the wrong type"),
        ({"maxIterations": 0}, "services.hearth.maxIterations' has a value of the wrong type"),
        ({"defaultMode": "yolo"}, "services.hearth.defaultMode' has a value of the wrong type"),
        ({"sandbox": "chroot"}, "services.hearth.sandbox' has a value of the wrong type"),
        ({"submitters": "alice"}, "services.hearth.submitters' has a value of the wrong type"),
        ({"ollama": {"models": ["a", 3]}}, "services.hearth.ollama.models.[1]' has a value of the wrong type"),
        ({"agents": {"x": {"allowedTools": "read_file"}}}, "services.hearth.agents.x.allowedTools' has a value"),
        (
            {"schedules": {"s": {"goal": "g", "onCalendar": "daily", "mode": "fast"}}},
            "services.hearth.schedules.s.mode'",
        ),
        ({"credentials": {"c": {"file": "relative/path", "hosts": []}}}, "services.hearth.credentials.c.file'"),
    ],
)
def test_a_value_of_the_wrong_type_names_the_option(hearth: dict[str, Any], message: str, tmp_path: Path) -> None:
    assert message in _error(hearth, tmp_path)


def test_an_option_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    assert "services.hearth.maxIterationz' does not exist" in _error({"maxIterationz": 3}, tmp_path)
    assert "services.hearth.schedules.s.calendar' does not exist" in _error(
        {"schedules": {"s": {"goal": "g", "onCalendar": "daily", "calendar": "x"}}}, tmp_path
    )


def test_a_schedule_without_its_calendar_is_an_error(tmp_path: Path) -> None:
    assert "services.hearth.schedules.s.onCalendar' is used but not defined" in _error(
        {"schedules": {"s": {"goal": "g"}}}, tmp_path
    )


def test_disabled_module_sets_nothing(tmp_path: Path) -> None:
    assert evaluate({"enable": False}, tmp_path)["config"] == {}


def _failed_assertions(result: dict[str, Any]) -> list[str]:
    return [a["message"] for a in result["config"]["assertions"] if not a["assertion"]]


def test_assertions_catch_a_state_dir_outside_var_lib_and_an_unknown_schedule_agent(tmp_path: Path) -> None:
    result = evaluate(
        {
            "enable": True,
            "stateDir": "/srv/hearth",
            "schedules": {"s": {"goal": "g", "onCalendar": "daily", "agent": "ghost"}},
            "credentials": {"bad/name": {"file": "/run/x", "hosts": []}},
        },
        tmp_path,
    )
    failed = _failed_assertions(result)
    assert any("stateDir must be below /var/lib" in m for m in failed)
    assert any("schedules.s.agent is ghost" in m for m in failed)
    assert any("credentials.bad/name" in m for m in failed)
    assert _failed_assertions(evaluate({"enable": True}, tmp_path)) == []


def test_a_hosts_key_is_a_credential_the_module_has_and_is_written_by_name(tmp_path: Path) -> None:
    host = {"url": "http://10.0.0.7:8000", "kind": "openai", "apiKey": "vllm"}
    missing = _failed_assertions(evaluate({"enable": True, "ollama": {"hosts": [host]}}, tmp_path))
    assert missing == [
        "services.hearth.ollama.hosts: the host http://10.0.0.7:8000 names apiKey vllm, which is not in "
        "services.hearth.credentials"
    ]
    credentials = {"vllm": {"file": "/run/secrets/vllm", "hosts": ["10.0.0.7"]}}
    result = evaluate({"enable": True, "ollama": {"hosts": [host]}, "credentials": credentials}, tmp_path)
    assert _failed_assertions(result) == []
    router = result["config"]["environment"]["etc"]["hearth/router.toml"]["text"]
    assert 'kind = "openai"' in router and 'api_key = "cred:vllm"' in router and "/run/secrets" not in router


def test_agent_profiles_are_written_as_agents_md_and_a_toml_manifest(tmp_path: Path) -> None:
    result = evaluate(
        {
            "enable": True,
            "agents": {
                "notes": {
                    "model": "llama3.1",
                    "mode": "plan",
                    "allowedTools": ["read_file", "list_files"],
                    "prompt": 'Keep "notes" tidy.\n',
                }
            },
        },
        tmp_path,
    )
    etc = result["config"]["environment"]["etc"]
    assert etc["hearth/agents/notes/AGENTS.md"]["text"] == 'Keep "notes" tidy.\n'
    manifest = tomllib.loads(etc["hearth/agents/notes/agent.toml"]["text"])
    assert manifest == {
        "name": "notes",
        "model": "llama3.1",
        "mode": "plan",
        "allowed_tools": ["read_file", "list_files"],
    }


def test_what_the_module_writes_under_etc_hearth_is_what_hearth_reads(tmp_path: Path) -> None:
    result = evaluate(
        {
            "enable": True,
            "soul": "Calm and exact.\n",
            "prompts": {"10-rules": "Run the tests on {{gitBranch}} first.\n"},
            "agents": {
                "notes": {
                    "mode": "plan",
                    "maxIterations": 30,
                    "allowedTools": ["read_file"],
                    "prompt": "Keep notes tidy.\n",
                }
            },
        },
        tmp_path,
    )
    config = tmp_path / "etc-hearth"
    for name, entry in result["config"]["environment"]["etc"].items():
        if name.startswith("hearth/") and "text" in entry:
            (config / name.removeprefix("hearth/")).parent.mkdir(parents=True, exist_ok=True)
            (config / name.removeprefix("hearth/")).write_text(entry["text"])
    profile = load_profile(config, "notes")
    assert (profile.mode, profile.max_iterations, profile.allowed_tools) == ("plan", 30, ("read_file",))
    parts = config_parts(config, profile)
    assert [(p.label, p.text) for p in parts] == [
        ("prompts/10-rules.md", "Run the tests on {{gitBranch}} first.\n"),
        ("role (notes)", "Keep notes tidy.\n"),
        ("voice", "Calm and exact.\n"),
    ]
    assert not any(unknown_placeholders(p.text) for p in parts)


def test_no_soul_no_file_and_names_hearth_would_refuse_fail_the_build(tmp_path: Path) -> None:
    etc = evaluate({"enable": True}, tmp_path)["config"]["environment"]["etc"]
    assert "hearth/SOUL.md" not in etc and not any(n.startswith("hearth/prompts/") for n in etc)
    failed = _failed_assertions(
        evaluate({"enable": True, "agents": {".hidden": {}}, "prompts": {"../x": "y"}}, tmp_path)
    )
    assert any("services.hearth.agents..hidden: an agent name is letters" in m for m in failed)
    assert any("services.hearth.prompts.../x: a prompt name is letters" in m for m in failed)


def test_credentials_file_has_host_bindings_and_no_secret(tmp_path: Path) -> None:
    result = evaluate(
        {"enable": True, "credentials": {"gh": {"file": "/run/secrets/gh", "hosts": ["api.github.com"]}}}, tmp_path
    )
    assert json.loads(result["config"]["environment"]["etc"]["hearth/credentials.json"]["text"]) == {
        "gh": {"hosts": ["api.github.com"]}
    }


def test_queue_is_writable_by_submitters_only_and_state_is_private(tmp_path: Path) -> None:
    config = evaluate({"enable": True, "submitters": ["alice", "bob"]}, tmp_path)["config"]
    assert config["users"]["groups"]["hearth-submit"]["members"] == ["alice", "bob"]
    rules = config["systemd"]["tmpfiles"]["rules"]
    assert "d /var/lib/hearth/queue 2770 hearth hearth-submit - -" in rules
    assert "d /var/lib/hearth/agents 0700 hearth hearth - -" in rules
    assert "d /var/lib/hearth/credentials 0700 hearth hearth - -" in rules


def test_ollama_is_enabled_with_its_models_only_when_asked(tmp_path: Path) -> None:
    on = evaluate({"enable": True, "ollama": {"enable": True, "models": ["qwen2.5-coder:7b"]}}, tmp_path)["config"]
    assert on["services"]["ollama"] == {"enable": True, "loadModels": ["qwen2.5-coder:7b", "nomic-embed-text"]}
    off = {"enable": True, "ollama": {"enable": True, "models": ["m"]}, "settings": {"embedModel": "off"}}
    assert evaluate(off, tmp_path)["config"]["services"]["ollama"]["loadModels"] == ["m"]  # semantic recall off
    assert "ollama" not in evaluate({"enable": True}, tmp_path)["config"].get("services", {})


REQUIRED_WITHOUT_DEFAULT = {
    "services.hearth.schedules.<name>.goal",
    "services.hearth.schedules.<name>.onCalendar",
    "services.hearth.credentials.<name>.file",
    "services.hearth.credentials.<name>.hosts",
    "services.hearth.alerts.destinations.<name>.url",
    "services.hearth.users.<name>.role",
    "services.hearth.users.<name>.keys.<name>.file",
}


def test_every_option_has_a_type_default_example_and_description(tmp_path: Path) -> None:
    options = evaluate({"enable": False}, tmp_path)["options"]
    assert len(options) > 30
    for option in options:
        assert option["hasDescription"] and option["hasExample"], option["path"]
        assert option["hasDefault"] or option["path"] in REQUIRED_WITHOUT_DEFAULT, option["path"]


def _write_etc(result: dict[str, Any], config: Path) -> None:
    for name, entry in result["config"]["environment"]["etc"].items():
        if name.startswith("hearth/") and "text" in entry:
            (config / name.removeprefix("hearth/")).parent.mkdir(parents=True, exist_ok=True)
            (config / name.removeprefix("hearth/")).write_text(entry["text"])


LEASH = {
    "enable": True,
    "ollama": {
        "enable": True,
        "models": ["qwen2.5-coder:7b", "qwen2.5-coder:3b"],
        "hosts": [
            {"url": "http://10.0.0.5:11434", "label": "gpu1"},
            {"url": "http://10.0.0.6:11434", "weight": 2},
            {"url": "http://10.0.0.7:8000/v1", "kind": "openai", "label": "vllm", "timeoutSec": 900},
        ],
    },
    "agents": {"notes": {"fallbacks": ["qwen2.5-coder:3b"], "escalate": True, "maxTokens": 9000}},
    "router": {
        "default": "qwen2.5-coder:7b",
        "rules": [
            {"name": "coder", "model": "qwen2.5-coder:7b", "tools": ["run_command"], "fallbacks": ["qwen2.5-coder:3b"]},
            {
                "name": "nightly",
                "model": "qwen2.5-coder:3b",
                "sources": ["timer"],
                "goalRegex": "(?i)notes",
                "host": "gpu1",
            },
        ],
    },
    "budget": {"daily": 2000000, "perAgent": {"notes": 100000}},
    "credentials": {"ntfy": {"file": "/run/secrets/ntfy", "hosts": ["ntfy.example.org"]}},
    "alerts": {
        "destinations": {
            "phone": {"url": "ntfy://{cred:ntfy}@ntfy.example.org/hearth", "events": ["approval"]},
            "lan": {"url": "json://192.168.1.5:8080/hook", "events": ["failed"], "local": True},
        },
        "approval": {"publicUrl": "https://hearth.lan:8443", "remindAfter": "2h", "remindBefore": False},
    },
    "schedules": {
        "notes": {
            "goal": "Tidy the notes",
            "agent": "notes",
            "onCalendar": "Mon..Fri 06:00",
            "model": "auto",
            "egress": ["api.github.com"],
            "maxTokens": 5000,
            "label": "nightly notes",
        }
    },
}


def test_router_budget_alerts_and_missions_are_written_as_hearth_reads_them(tmp_path: Path) -> None:
    from hearth.leash.alerts import load_approval_alerts, load_destinations
    from hearth.leash.budget import load_budget
    from hearth.leash.missions import load_missions
    from hearth.run.hosts import configured
    from hearth.run.router import load_router
    from hearth.settings import Settings

    result = evaluate(LEASH, tmp_path)
    assert _failed_assertions(result) == []
    config = tmp_path / "etc-hearth"
    _write_etc(result, config)
    router = load_router(config)
    assert router.default == "qwen2.5-coder:7b"
    assert [(r.name, r.model, r.tools, r.sources, r.fallbacks) for r in router.rules] == [
        ("coder", "qwen2.5-coder:7b", ("run_command",), (), ("qwen2.5-coder:3b",)),
        ("nightly", "qwen2.5-coder:3b", (), ("timer",), ()),
    ]
    assert [r.host for r in router.rules] == ["", "gpu1"]
    settings_here = Settings.from_env({"HEARTH_CONFIG_DIR": str(config), "HEARTH_STATE_DIR": str(tmp_path / "s")})
    assert [(h.url, h.label, h.weight, h.kind, h.timeout_s) for h in configured(settings_here)] == [
        ("http://10.0.0.5:11434", "gpu1", 1.0, "ollama", None),
        ("http://10.0.0.6:11434", "", 2.0, "ollama", None),
        ("http://10.0.0.7:8000/v1", "vllm", 1.0, "openai", 900.0),
    ]
    agent_allow = result["config"]["systemd"]["services"]["hearth-agent@"]["serviceConfig"]["IPAddressAllow"]
    assert "10.0.0.5" in agent_allow and "10.0.0.6" in agent_allow
    assert load_budget(config).daily == 2000000 and load_budget(config).per_agent == {"notes": 100000}
    lan, phone = load_destinations(config)
    assert (phone.name, phone.events, phone.credentials, phone.local) == ("phone", ("approval",), ["ntfy"], False)
    assert (lan.name, lan.url, lan.local) == ("lan", "json://192.168.1.5:8080/hook", True)
    approval = load_approval_alerts(config)
    assert (approval.public_url, approval.remind_after_s, approval.remind_before_s) == (
        "https://hearth.lan:8443",
        7200,
        None,
    )
    profile = load_profile(config, "notes")
    assert (profile.fallbacks, profile.escalate, profile.max_tokens) == (("qwen2.5-coder:3b",), True, 9000)
    settings = Settings.from_env({"HEARTH_CONFIG_DIR": str(config), "HEARTH_STATE_DIR": str(tmp_path / "s")})
    [mission], problems = load_missions(settings)
    assert problems == [] and (mission.name, mission.timer, mission.schedule) == ("notes", "systemd", "Mon..Fri 06:00")
    assert mission.fields == {
        "goal": "Tidy the notes",
        "agent_name": "notes",
        "model": "auto",
        "egress": ["api.github.com"],
        "max_tokens": 5000,
        "label": "nightly notes",
    }


def test_assertions_catch_a_fallback_not_pulled_an_unknown_alert_credential_and_more(tmp_path: Path) -> None:
    bad = {
        **LEASH,
        "router": {"fallbacks": ["llama3.2:1b"]},
        "alerts": {"destinations": {"chat": {"url": "tgram://{cred:bot-token}/123"}}},
        "budget": {"perAgent": {"nobody": 5}},
        "schedules": {"notes": {"goal": "g", "onCalendar": "daily", "credentials": ["github"]}},
    }
    failed = _failed_assertions(evaluate(bad, tmp_path))
    assert failed == [
        "services.hearth: the fallback model llama3.2:1b is not in services.hearth.ollama.models",
        "services.hearth.alerts.destinations.chat.url names credential bot-token, which is not in services.hearth.credentials",
        "services.hearth.schedules.notes.credentials names github, which is not in services.hearth.credentials",
        "services.hearth.budget.perAgent.nobody: nobody is not in services.hearth.agents",
    ]
    assert "services.hearth.budget.daily" in _error({"enable": True, "budget": {"daily": -1}}, tmp_path)
    assert "services.hearth.alerts.destinations.x.events.[0]" in _error(
        {"enable": True, "alerts": {"destinations": {"x": {"url": "json://h", "events": ["fail"]}}}}, tmp_path
    )
    assert "services.hearth.router.rules.[0].model" in _error(
        {"enable": True, "router": {"rules": [{"name": "r", "model": ""}]}}, tmp_path
    )


def test_an_agent_s_max_mode_and_max_tools_are_written_as_the_ceilings_hearth_enforces(tmp_path: Path) -> None:
    ceilings = {
        "mode": "plan",
        "maxMode": "auto",
        "maxTools": ["read_file", "list_files"],
        "allowedTools": ["read_file"],
    }
    result = evaluate({"enable": True, "agents": {"reader": {**ceilings, "prompt": "Read only.\n"}}}, tmp_path)
    assert _failed_assertions(result) == []
    text = result["config"]["environment"]["etc"]["hearth/agents/reader/agent.toml"]["text"]
    assert tomllib.loads(text) == {
        "name": "reader",
        "mode": "plan",
        "max_mode": "auto",
        "allowed_tools": ["read_file"],
        "max_tools": ["read_file", "list_files"],
    }
    config = tmp_path / "etc-hearth"
    (config / "agents" / "reader").mkdir(parents=True)
    (config / "agents" / "reader" / "agent.toml").write_text(text)
    settings = replace(Settings.from_env({}), config_dir=config)
    with pytest.raises(UsageError, match="limit: max_mode = 'auto'"):
        resolved(GoalRequest(goal="g", agent_name="reader", mode="bypass", model="m"), settings)
    with pytest.raises(UsageError, match="max_tools"):
        resolved(GoalRequest(goal="g", agent_name="reader", allowed_tools=["run_command"], model="m"), settings)
    ran = resolved(
        GoalRequest(goal="g", agent_name="reader", mode="auto", allowed_tools=["list_files"], model="m"), settings
    )
    assert (ran.mode, ran.allowed_tools) == ("auto", ("list_files",))


def test_a_profile_above_its_own_ceilings_fails_the_build(tmp_path: Path) -> None:
    agents = {
        "loud": {"mode": "bypass", "maxMode": "auto"},
        "wide": {"allowedTools": ["run_command"], "maxTools": ["read_file"]},
    }
    failed = _failed_assertions(evaluate({"enable": True, "agents": agents}, tmp_path))
    assert "services.hearth.agents.loud.mode is bypass, above its maxMode auto" in failed
    assert "services.hearth.agents.wide.allowedTools names a tool its maxTools does not allow" in failed


def test_mcp_servers_are_written_as_the_files_hearth_reads(tmp_path: Path) -> None:
    from hearth.mcp.config import ToolRule, load_servers

    servers = {
        "git": {
            "command": "/run/current-system/sw/bin/mcp-server-git",
            "args": ["--repository", "."],
            "env": {"GITHUB_TOKEN": "forge"},
            "network": ["api.github.com"],
            "read": ["/var/lib/repos"],
            "timeout": 60,
            "tools": {"git_status": {"risk": "safe"}, "git.push": {"risk": "edit", "offer": False}},
        },
        "forge": {
            "transport": "http",
            "url": "https://mcp.example.org/mcp",
            "headers": {"Authorization": "Bearer cred:forge"},
        },
    }
    result = evaluate({"enable": True, "mcp": {"servers": servers}}, tmp_path)
    config = tmp_path / "etc-hearth"
    _write_etc(result, config)
    forge, git = load_servers(config)
    assert (git.name, git.transport, git.command, git.args) == (
        "git",
        "stdio",
        "/run/current-system/sw/bin/mcp-server-git",
        ("--repository", "."),
    )
    assert (git.env, git.egress, git.read, git.timeout_s) == (
        (("GITHUB_TOKEN", "forge"),),
        ("api.github.com",),
        ("/var/lib/repos",),
        60.0,
    )
    assert git.tools == {"git_status": ToolRule("safe", True), "git.push": ToolRule("edit", False)}
    assert git.rule("git_log") == ToolRule("dangerous", True)
    assert (forge.transport, forge.url, forge.headers, forge.egress) == (
        "http",
        "https://mcp.example.org/mcp",
        (("Authorization", "Bearer cred:forge"),),
        (),
    )
    assert "services.hearth.mcp.servers.x.tools.t.risk" in _error(
        {"enable": True, "mcp": {"servers": {"x": {"command": "c", "tools": {"t": {"risk": "harmless"}}}}}}, tmp_path
    )


def test_an_agent_s_tool_set_think_and_web_extract_are_written_as_hearth_reads_them(tmp_path: Path) -> None:
    agent = {"toolSet": "all", "think": "low", "webExtract": False}
    result = evaluate({"enable": True, "agents": {"thinker": agent}}, tmp_path)
    assert _failed_assertions(result) == []
    text = result["config"]["environment"]["etc"]["hearth/agents/thinker/agent.toml"]["text"]
    assert tomllib.loads(text) == {"name": "thinker", "tool_set": "all", "think": "low", "web_extract": False}
    config = tmp_path / "etc-hearth"
    (config / "agents" / "thinker").mkdir(parents=True)
    (config / "agents" / "thinker" / "agent.toml").write_text(text)
    ran = resolved(
        GoalRequest(goal="g", agent_name="thinker", model="m"), replace(Settings.from_env({}), config_dir=config)
    )
    assert (ran.tool_set, ran.think, ran.web_extract) == ("all", "low", False)
