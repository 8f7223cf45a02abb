"""The policy, generated from the registry: every tool x mode x manifest -> run / ask / deny, through
call_tool; the risk classes the spec fixes; look-alike names; the floor in bypass; auto heads."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.loop import Loop
from agent.model.scripted import ScriptedModel
from agent.parsing import ToolCall
from agent.safety.policy import MODES, Decision
from agent.safety.sandbox import SandboxPolicy
from agent.safety.workspace import Workspace
from agent.services import RunServices
from agent.tools.gate import TOOLS, ToolRunner, call_tool, risk_of, visible_tools
from agent.tools.registry import Tool

# The risk classes of the engine spec; a tool registered under one of these names must carry it.
SPEC_RISKS = {
    **dict.fromkeys(
        [
            "read_file",
            "list_files",
            "list_tree",
            "search_files",
            "kb_search",
            "recall",
            "current_generation",
            "list_generations",
            "system_health",
            "read_self_config",
            "git_status",
            "git_diff",
            "nix_check",
            "delegate",  # grants nothing: the child's walls are the caller's, at most
            "load_skill",
        ],
        "safe",
    ),
    **dict.fromkeys(
        ["write_file", "edit_file", "replace_in_files", "kb_add", "index_dir", "remember", "write_self_config"], "edit"
    ),
    **dict.fromkeys(["run_command", "http_request", "web_fetch", "web_search", "fetch_to_kb"], "dangerous"),
}
BUILT_HERE = [
    "read_file",
    "list_files",
    "list_tree",
    "write_file",
    "search_files",
    "edit_file",
    "replace_in_files",
    "run_command",
]
MANIFESTS = ["all", "only-this", "all-but-this", "empty"]


def expected_action(risk: str, mode: str, listed: bool) -> str:
    """The issue's table, written out independently of agent.safety.policy."""
    if not listed:
        return "deny"
    if mode == "bypass":
        return "run"
    if mode == "plan":
        return "run" if risk == "safe" else "deny"
    return "ask" if risk == "dangerous" else "run"


def manifest(kind: str, name: str) -> list[str] | None:
    return {"all": None, "only-this": [name], "all-but-this": [n for n in TOOLS if n != name], "empty": []}[kind]


def sample_arguments(tool: Tool) -> dict[str, Any]:
    """Valid arguments from the schema alone, so the matrix covers tools registered later too."""
    samples = {"string": "probe", "integer": 1, "boolean": False}
    return {
        p: (tool.params[p].get("enum") or [samples[tool.params[p].get("type", "string")]])[0] for p in tool.required
    }


@pytest.fixture
def probed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each registered tool keeps its name, schema and risk, but its body only notes that it ran:
    the gate is what is under test here, and a real body (a web search) must not run in a unit test."""
    ran: list[str] = []
    for name, tool in list(TOOLS.items()):
        monkeypatch.setitem(TOOLS, name, dataclasses.replace(tool, fn=lambda args, ws, n=name: ran.append(n) or "ran"))
    return ran


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    """A workspace whose services make every tool usable (a config repo, a NixOS-looking host, skills),
    so the matrix sees the policy alone; hiding unusable tools is tested on its own below."""
    (tmp_path / "host" / "etc").mkdir(parents=True)
    (tmp_path / "host" / "etc" / "NIXOS").touch()
    services = RunServices(
        config_repo=tmp_path / "repo",
        host_root=tmp_path / "host",
        delegate=lambda goal, profile, where: "handed",
        skills=tmp_path / "skills",
    )
    with Workspace(tmp_path, services=services) as workspace:
        yield workspace


class Approvals:
    def __init__(self, grant: bool) -> None:
        self.grant, self.asked = grant, []

    def __call__(self, name: str, args: dict[str, Any], reason: str) -> Decision:
        self.asked.append((name, args))
        return Decision(self.grant, by="matrix-test", detail="the matrix test says no" if not self.grant else "")


@pytest.mark.parametrize("kind", MANIFESTS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(TOOLS))
def test_policy_matrix(name: str, mode: str, kind: str, probed: list[str], ws: Workspace) -> None:
    tool, allowed = TOOLS[name], manifest(kind, name)
    args = sample_arguments(tool)
    want = expected_action(tool.risk, mode, kind in ("all", "only-this"))
    refuse, grant = Approvals(False), Approvals(True)
    first = call_tool(name, args, ws, mode=mode, allowed=allowed, approve=refuse)
    second = call_tool(name, args, ws, mode=mode, allowed=allowed, approve=grant)
    shown = name in {t.name for t in visible_tools(allowed, mode, ws.services)}
    if want == "run":
        assert (first.verdict, second.verdict, probed, refuse.asked) == ("run", "run", [name, name], [])
    elif want == "ask":
        assert (first.verdict, refuse.asked, grant.asked) == ("denied", [(name, args)], [(name, args)])
        assert second.verdict == "approved" and probed == [name]
        assert "the matrix test says no" in first.output
    else:
        assert (first.verdict, second.verdict, probed, refuse.asked, grant.asked) == ("denied", "denied", [], [], [])
        assert first.output.startswith(f"Denied: {name} was not run (")
    assert shown is (want != "deny")


def test_tools_a_run_cannot_use_are_not_shown(tmp_path: Path) -> None:
    bare = {t.name for t in visible_tools(None, "bypass", RunServices(host_root=tmp_path))}
    config_tools = {"read_self_config", "write_self_config", "git_status", "git_diff", "nix_check"}
    assert not bare & (config_tools | {"current_generation", "list_generations", "delegate", "load_skill"})
    with_repo = {t.name for t in visible_tools(None, "bypass", RunServices(config_repo=tmp_path, host_root=tmp_path))}
    assert config_tools <= with_repo and "system_health" in bare


def test_every_tool_this_issue_builds_is_registered() -> None:
    assert set(BUILT_HERE) <= set(TOOLS)


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_a_registered_tool_is_one_reviewable_record(name: str) -> None:
    tool = TOOLS[name]
    if name in SPEC_RISKS:
        assert tool.risk == SPEC_RISKS[name]
    description = tool.description
    assert description.endswith(".") and "\n" not in description and description.count(". ") == 0
    assert set(tool.required) <= set(tool.params)
    for param, spec in tool.params.items():
        # flat schemas only; the one exception is a string-to-string map (http_request's headers)
        flat = spec.get("type") in ("string", "integer", "boolean")
        assert flat or (name, param) == ("http_request", "headers")
        # a description only where the name does not say it, and then a short one (issue 25)
        assert len(spec.get("description", "")) <= 60
        bounded = "minimum" in spec or "maximum" in spec
        assert not bounded or spec.get("description"), f"{name}.{param}: the bounds are said in words"


def test_a_name_without_a_class_is_dangerous() -> None:
    assert risk_of("tool_nobody_registered") == "dangerous"
    assert Tool("x", "X.", {}, lambda a, w: "").risk == "dangerous"
    with pytest.raises(ValueError, match="risk must be one of"):
        Tool("bad_risk", "X.", {}, lambda a, w: "", risk="harmless")


# --- look-alike names ----------------------------------------------------------------------------

LOOK_ALIKES = [
    "Run_Command",
    "run_command ",
    " run_command",
    "RUN_COMMAND",
    "run-command",
    "runCommand",
    "run_command\u200b",
    "run_commands",
    "functions.run_command",
    "ｒｕｎ_command",
]


@pytest.mark.parametrize("name", LOOK_ALIKES)
@pytest.mark.parametrize("mode", MODES)
def test_a_look_alike_name_never_executes(name: str, mode: str, ws: Workspace) -> None:
    result = call_tool(name, {"command": "touch pwned"}, ws, mode=mode, approve=lambda *a: Decision(True))
    assert result.verdict == "unknown" and not result.ok
    assert not (ws.root / "pwned").exists()


def test_a_repaired_look_alike_still_goes_through_the_policy_of_the_real_tool(ws: Workspace) -> None:
    """The loop repairs Run_Command to run_command for a weak model; policy then judges run_command."""
    asked: list[str] = []

    def refuse(name: str, args: dict[str, Any], reason: str) -> Decision:
        asked.append(name)
        return Decision(False, by="test", detail="not now")

    toolbox = ToolRunner(ws, mode="auto", approve=refuse)
    model = ScriptedModel(
        [
            {
                "content": "",
                "tool_calls": [{"function": {"name": "Run_Command", "arguments": {"command": "touch pwned"}}}],
            },
            {"content": "gave up"},
        ]
    )
    outcome = Loop(model, toolbox, system_prompt="s").run("go")
    assert outcome.status == "done" and asked == ["run_command"]
    assert not (ws.root / "pwned").exists()
    assert model.requests[1][-1]["content"].startswith("Denied: run_command was not run (not now)")


# --- the floor in bypass, auto heads -------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "touch pwned; rm -rf /",
        "touch pwned && sudo rm -rf ~",
        "touch pwned; reboot",
        "touch pwned; sh -c 'mkfs.ext4 /dev/sda1'",
        "touch pwned; :(){ :|:& };:",
        "touch pwned; chmod -R 777 /",
        "touch pwned; dd if=/dev/zero of=/dev/sda",
    ],
)
def test_the_hard_floor_holds_in_bypass_and_nothing_of_the_line_runs(command: str, ws: Workspace) -> None:
    result = call_tool("run_command", {"command": command}, ws, mode="bypass")
    assert result.verdict == "denied" and "hard floor" in result.output
    assert "Do not retry it" in result.output
    assert not (ws.root / "pwned").exists()


def auto_ws(root: Path, heads: tuple[str, ...]) -> Workspace:
    return Workspace(root, services=RunServices(sandbox=SandboxPolicy(kind="auto"), auto_commands=heads))


def test_listed_heads_run_in_auto_without_asking_and_chains_are_judged_on_their_own(tmp_path: Path) -> None:
    asked: list[str] = []

    def refuse(name: str, args: dict[str, Any], reason: str) -> Decision:
        asked.append(args["command"])
        return Decision(False, by="test", detail="no")

    with auto_ws(tmp_path, ("echo", "ls")) as ws:
        ran = call_tool("run_command", {"command": "echo hi && ls"}, ws, mode="auto", approve=refuse)
        chained = call_tool("run_command", {"command": "echo hi; touch pwned"}, ws, mode="auto", approve=refuse)
    assert (
        ran.ok
        and ran.verdict == "run"
        and ran.detail == {"policy": "every program in it is an auto-approved command head"}
    )
    assert chained.verdict == "denied" and asked == ["echo hi; touch pwned"]
    assert not (tmp_path / "pwned").exists()


def test_a_listed_head_approves_only_a_simple_command_anything_else_asks(tmp_path: Path) -> None:
    asked: list[str] = []

    def refuse(name: str, args: dict[str, Any], reason: str) -> Decision:
        asked.append(args["command"])
        return Decision(False, by="test", detail="no")

    lines = ["ls > out", "ls >> out", "(ls; touch sub)", "ls $(touch subst)", "env ls", "sh -c 'ls > out'", "xargs ls"]
    with auto_ws(tmp_path, ("ls", "env", "xargs", "sh")) as ws:
        results = [call_tool("run_command", {"command": line}, ws, mode="auto", approve=refuse) for line in lines]
        plain = call_tool("run_command", {"command": "ls"}, ws, mode="auto", approve=refuse)
    assert [r.verdict for r in results] == ["denied"] * len(lines) and asked == lines
    assert not any((tmp_path / name).exists() for name in ("out", "sub", "subst"))
    assert plain.verdict == "run"


def test_listed_heads_do_not_widen_plan_mode(tmp_path: Path) -> None:
    with auto_ws(tmp_path, ("touch",)) as ws:
        result = call_tool("run_command", {"command": "touch pwned"}, ws, mode="plan")
    assert result.verdict == "denied" and not (tmp_path / "pwned").exists()


def test_the_denial_tells_the_model_not_to_route_around_it(ws: Workspace) -> None:
    call = ToolCall("write_file", {"path": "a", "content": "b"})
    result = call_tool(call.name, call.arguments, ws, mode="plan")
    assert result.output == (
        "Denied: write_file was not run (plan mode runs only read-only tools and write_file is "
        "edit). Do not retry it or reach the same result another way; continue without it or "
        "finish with what you have."
    )


def test_an_approver_that_fails_is_a_deny_not_a_crash(ws: Workspace) -> None:
    def broken(name: str, args: dict[str, Any], reason: str) -> Decision:
        raise OSError("database is locked")

    result = call_tool("run_command", {"command": "touch pwned"}, ws, mode="auto", approve=broken)
    assert result.verdict == "denied" and "approval could not be asked: OSError: database is locked" in result.output
    assert not (ws.root / "pwned").exists()
