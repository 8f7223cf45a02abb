"""`hearth evolve` and `hearth proposals` as real processes, with the fake Ollama and a real git repo."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from agent.safety.selfconfig import git
from hearth.evolve import security_findings
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer, tool_call

pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
    pytest.mark.skipif(shutil.which("nix") is None, reason="nix is not installed (apt-get install nix-bin)"),
]

FLAKE = """{
  outputs = { self }: {
    checks.x86_64-linux.host = derivation {
      name = "host"; system = "x86_64-linux"; builder = "/bin/sh";
      args = [ "-c" "echo ${builtins.toJSON (import ./hosts/box.nix)} > $out" ];
    };
  };
}
"""


@pytest.fixture
def live(tmp_path: Path) -> Path:
    """The operator's live config checkout, with one uncommitted local edit of their own."""
    repo = tmp_path / "live"
    (repo / "hosts").mkdir(parents=True)
    (repo / "flake.nix").write_text(FLAKE)
    (repo / "hosts/box.nix").write_text("{ services.hearth.maxIterations = 12; }\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=op", "-c", "user.email=op@x", "commit", "-q", "-m", "init")
    (repo / "NOTES.md").write_text("operator's own uncommitted notes\n")
    return repo


@pytest.fixture
def rebuild_trap(tmp_path: Path) -> Path:
    """A `nixos-rebuild` first on PATH that leaves a mark if anything ever calls it."""
    bin_dir = tmp_path / "trap-bin"
    bin_dir.mkdir()
    script = bin_dir / "nixos-rebuild"
    script.write_text(f"#!/bin/sh\ntouch {tmp_path}/nixos-rebuild-was-called\n")
    script.chmod(0o755)
    return bin_dir


def tree(repo: Path) -> dict[str, str]:
    return {
        str(p.relative_to(repo)): p.read_text()
        for p in repo.rglob("*")
        if p.is_file() and ".git" not in p.relative_to(repo).parts
    }


def evolve(fake: FakeOllama, live: Path, trap: Path, *args: str) -> Any:
    env = {"OLLAMA_HOST": fake.url, "HEARTH_CONFIG_REPO": str(live), "PATH": f"{trap}:{os.environ['PATH']}"}
    return run_cli("hearth", "evolve", *args, env=env, timeout=120)


def proposals(*args: str) -> Any:
    done = run_cli("hearth", "proposals", "--json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def write(path: str, content: str) -> dict[str, Any]:
    return tool_call("write_self_config", {"path": path, "content": content})


def test_evolve_makes_a_checked_proposal_branch_and_never_touches_the_live_checkout(
    state_dir: Path, live: Path, rebuild_trap: Path, tmp_path: Path
) -> None:
    before, head = tree(live), git(live, "rev-parse", "HEAD")
    script = [
        write("hosts/box.nix", "{ services.hearth.maxIterations = 20; }\n"),
        tool_call("nix_check", {}),
        final_answer("Raised maxIterations to 20; nix_check passes."),
    ]
    with FakeOllama(script) as fake:
        done = evolve(fake, live, rebuild_trap, "raise the iteration cap to 20")
    assert done.returncode == 0, done.stdout + done.stderr
    [proposal] = proposals()
    assert proposal["status"] == "proposed" and proposal["check_passed"] and not proposal["security_flag"]
    assert "PASS" in proposal["check_log"] and "+{ services.hearth.maxIterations = 20; }" in proposal["diff"]
    branch = proposal["branch"]
    assert git(live, "show", f"{branch}:hosts/box.nix") == "{ services.hearth.maxIterations = 20; }\n"
    assert git(live, "rev-parse", f"{branch}~1") == head
    # the live checkout: same files, same HEAD, same status, no scratch worktree left behind
    assert tree(live) == before and git(live, "rev-parse", "HEAD") == head
    assert git(live, "status", "--porcelain") == "?? NOTES.md\n"
    assert len(git(live, "worktree", "list").splitlines()) == 1
    assert not (tmp_path / "nixos-rebuild-was-called").exists()


def test_the_run_is_audited_with_only_the_self_tools(state_dir: Path, live: Path, rebuild_trap: Path) -> None:
    script = [
        tool_call("write_file", {"path": ".git", "content": "gitdir: /tmp/elsewhere"}),
        write(".git/config", "[core]\n\thooksPath = /tmp\n"),
        write("hosts/box.nix", "{ services.hearth.maxIterations = 13; }\n"),
        final_answer("done"),
    ]
    config_before = (live / ".git/config").read_text()
    with FakeOllama(script) as fake:
        assert evolve(fake, live, rebuild_trap, "tweak").returncode == 0
        tools = [t["function"]["name"] for t in fake.requests[0]["tools"]]
    on_nixos = Path("/etc/NIXOS").exists() or Path("/run/current-system").is_symlink()
    generations = ["current_generation", "list_generations"] if on_nixos else []  # hidden elsewhere
    assert sorted(tools) == sorted(
        generations + ["system_health", "read_self_config", "write_self_config", "git_status", "git_diff", "nix_check"]
    )
    runs = json.loads(run_cli("hearth", "runs", "--json").stdout)
    assert runs[0]["source"] == "evolve" and runs[0]["status"] == "done"
    steps = json.loads(run_cli("hearth", "show", runs[0]["id"], "--json").stdout)["steps"]
    verdicts = [(s["tool"], s["verdict"], s["ok"]) for s in steps if s["kind"] == "tool"]
    assert verdicts[0] == ("write_file", "denied", 0) and verdicts[1] == ("write_self_config", "run", 0)
    assert (live / ".git/config").read_text() == config_before


def test_a_change_that_breaks_the_flake_is_not_a_proposal(state_dir: Path, live: Path, rebuild_trap: Path) -> None:
    script = [write("hosts/box.nix", "{ services.hearth.maxIterations = ; }\n"), final_answer("done")]
    with FakeOllama(script) as fake:
        done = evolve(fake, live, rebuild_trap, "break it")
    assert done.returncode == 1
    [proposal] = proposals()
    assert proposal["status"] == "check_failed" and not proposal["check_passed"]
    assert "FAIL" in proposal["check_log"] and "syntax error" in proposal["check_log"]


def test_a_change_to_hearths_security_settings_is_flagged(state_dir: Path, live: Path, rebuild_trap: Path) -> None:
    script = [write("hosts/box.nix", '{ services.hearth.sandbox = "none"; }\n'), final_answer("done")]
    with FakeOllama(script) as fake:
        assert evolve(fake, live, rebuild_trap, "speed things up").returncode == 0
    [proposal] = proposals()
    assert proposal["security_flag"] and "sandbox" in proposal["security_reasons"][0]
    shown = run_cli("hearth", "proposals", proposal["id"][:10])
    assert "FLAGGED: it touches hearth's own security settings" in shown.stdout
    assert '+{ services.hearth.sandbox = "none"; }' in shown.stdout


def test_a_run_that_changes_nothing_leaves_no_branch(state_dir: Path, live: Path, rebuild_trap: Path) -> None:
    with FakeOllama([tool_call("git_status", {}), final_answer("nothing to do")]) as fake:
        assert evolve(fake, live, rebuild_trap, "look around").returncode == 1
    [proposal] = proposals()
    assert proposal["status"] == "no_changes"
    assert "hearth/proposal" not in git(live, "branch", "--list")


def test_evolve_without_a_config_repo_is_a_one_line_usage_error(state_dir: Path) -> None:
    done = run_cli("hearth", "evolve", "x", env={"HEARTH_CONFIG_REPO": ""})
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "HEARTH_CONFIG_REPO" in done.stderr


@pytest.mark.parametrize(
    ("line", "flagged"),
    [
        ('+  services.hearth.submitters = [ "mallory" ];', True),
        ('+  services.hearth.agents.x.mode = "bypass";', True),
        ('-  systemd.services.hearth-spawn.serviceConfig.ProtectSystem = "strict";', True),
        ("+  security.sudo.wheelNeedsPassword = false;", True),
        ("+  services.hearth.maxIterations = 20;", False),
        (' services.hearth.sandbox = "landlock";', False),  # context, not a change
    ],
)
def test_security_findings_read_changed_lines_only(line: str, flagged: bool) -> None:
    assert bool(security_findings(f"--- a/x.nix\n+++ b/x.nix\n@@ -1 +1 @@\n{line}\n")) is flagged


def test_a_queued_evolve_request_becomes_a_proposal(state_dir: Path, live: Path, rebuild_trap: Path) -> None:
    script = [write("hosts/box.nix", "{ services.hearth.maxIterations = 20; }\n"), final_answer("raised the cap")]
    before = tree(live)
    with FakeOllama(script) as fake:
        env = {"OLLAMA_HOST": fake.url, "HEARTH_CONFIG_REPO": str(live), "PATH": f"{rebuild_trap}:{os.environ['PATH']}"}
        queued = run_cli("hearth", "enqueue", "raise the iteration cap", "--id", "ev-1", "--evolve", env=env)
        assert queued.returncode == 0, queued.stderr
        spawned = run_cli("hearth", "spawn", "--local", env=env, timeout=120)
    assert spawned.returncode == 0, spawned.stderr
    [proposal] = proposals()
    assert (proposal["id"], proposal["status"], proposal["branch"]) == ("ev-1", "proposed", "hearth/proposal-ev-1")
    assert "maxIterations = 20" in git(live, "show", "hearth/proposal-ev-1:hosts/box.nix")
    assert tree(live) == before and not (state_dir / "queue" / "ev-1.json").exists()
    assert not (rebuild_trap.parent / "nixos-rebuild-was-called").exists()


def test_a_queued_evolve_request_without_a_config_repo_is_rejected_with_the_reason(state_dir: Path) -> None:
    with FakeOllama([final_answer("unused")]) as fake:
        env = {"OLLAMA_HOST": fake.url, "HEARTH_CONFIG_REPO": ""}
        assert run_cli("hearth", "enqueue", "improve yourself", "--id", "ev-2", "--evolve", env=env).returncode == 0
        spawned = run_cli("hearth", "spawn", "--local", env=env, timeout=120)
    assert spawned.returncode == 0, spawned.stderr
    error = json.loads((state_dir / "queue" / "rejected" / "ev-2.json.error.json").read_text())
    assert "no config repository" in error["reason"] and "HEARTH_CONFIG_REPO" in error["reason"]
    assert fake.requests == []


def test_a_proposal_that_widens_security_is_held_apart_unless_asked_to_show_it_as_ordinary(
    state_dir: Path, live: Path, rebuild_trap: Path
) -> None:
    widening = '{ services.hearth.maxIterations = 12; services.hearth.agents.x.egress = [ "*.example.org" ]; }\n'
    with FakeOllama([write("hosts/box.nix", widening), final_answer("opened the web")]) as fake:
        assert evolve(fake, live, rebuild_trap, "let agents reach example.org").returncode == 0
    [proposal] = proposals()
    assert proposal["security_flag"] and proposal["security_reasons"][0].startswith("egress:")
    listed = run_cli("hearth", "proposals").stdout
    assert "proposed: widens security" in listed and "SECURITY: egress" in listed
    held = run_cli("hearth", "proposals", proposal["id"]).stdout
    assert "widens security (egress)" in held and "review: git" not in held and "--as-ordinary" in held
    ordinary = run_cli("hearth", "proposals", proposal["id"], "--as-ordinary").stdout
    assert "review: git" in ordinary and "widens security" not in ordinary
    assert "widens security" not in run_cli("hearth", "proposals", "--as-ordinary").stdout


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ('+  services.hearth.agents.x.egress = [ "*" ];', "egress"),
        ('+  services.hearth.defaultMode = "auto";', "mode"),
        ('+  services.hearth.autoCommands = [ "rm" ];', "mode"),
        ('+  systemd.services.foo.serviceConfig.LoadCredential = "k:/etc/k";', "credentials"),
        ('+  services.hearth.writablePaths = [ "/etc" ];', "writable paths"),
        ('+  environment.variables.HEARTH_SANDBOX = "none";', "sandbox"),
        ('+  services.hearth.agents.x.max_tools = [ "run_command" ];', "tools"),
    ],
)
def test_each_kind_of_widening_is_named(line: str, kind: str) -> None:
    reasons = security_findings(f"--- a/x.nix\n+++ b/x.nix\n@@ -1 +1 @@\n{line}\n")
    assert kind in [reason.split(":", 1)[0] for reason in reasons]
