"""The self-knowledge tools through call_tool: generations, health, the config repo guard, nix_check."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from pathlib import Path

import pytest

from agent.safety.selfconfig import _run_group, git
from agent.safety.workspace import Workspace
from agent.services import RunServices
from agent.tools.gate import call_tool
from agent.tools.registry import ToolResult
from tests.fake_ollama import FakeOllama
from tests.queue_support import wait_for

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
needs_nix = pytest.mark.skipif(shutil.which("nix") is None, reason="nix is not installed (apt-get install nix-bin)")


def tool(name: str, tmp: Path, args: dict | None = None, **services: object) -> ToolResult:
    workspace = tmp / "workspace"
    workspace.mkdir(exist_ok=True)
    with Workspace(workspace, services=RunServices(**services)) as ws:
        return call_tool(name, args or {}, ws, mode="auto")


def fake_nixos(root: Path) -> Path:
    """A host tree with three system generations, the second one running."""
    (root / "etc").mkdir(parents=True)
    (root / "etc/NIXOS").touch()
    profiles = root / "nix/var/nix/profiles"
    profiles.mkdir(parents=True)
    for number, version in ((1, "24.05.1"), (2, "24.11.7"), (3, "24.11.9")):
        store = root / f"nix/store/{number}abc-nixos-system-box-{version}"
        store.mkdir(parents=True)
        (store / "nixos-version").write_text(version + "\n")
        os.symlink(f"/nix/store/{store.name}", profiles / f"system-{number}-link")
    os.symlink("system-3-link", profiles / "system")
    (root / "run").mkdir()
    os.symlink("/nix/store/2abc-nixos-system-box-24.11.7", root / "run/current-system")
    return root


def test_generations_are_listed_in_order_with_the_running_one_marked(tmp_path: Path) -> None:
    root = fake_nixos(tmp_path / "host")
    listing = tool("list_generations", tmp_path, host_root=root).output.splitlines()
    assert [line.split()[0] for line in listing] == ["1", "2", "3"]
    assert "NixOS 24.05.1" in listing[0] and listing[1].endswith("(current)") and "(current)" not in listing[2]


def test_current_generation_names_the_running_system_and_its_number(tmp_path: Path) -> None:
    result = tool("current_generation", tmp_path, host_root=fake_nixos(tmp_path / "host"))
    assert result.ok and "running /nix/store/2abc-nixos-system-box-24.11.7" in result.output
    assert "NixOS 24.11.7, generation 2" in result.output


def test_a_host_that_is_not_nixos_is_told_plainly(tmp_path: Path) -> None:
    (tmp_path / "host").mkdir()
    for name in ("current_generation", "list_generations", "system_health"):
        assert "this host is not NixOS" in tool(name, tmp_path, host_root=tmp_path / "host").output


def test_system_health_reports_load_memory_disk_the_servers_models_and_no_systemd(tmp_path: Path) -> None:
    (tmp_path / "host").mkdir()
    with FakeOllama(models=("qwen2.5-coder:7b", "llama3.1:8b")) as fake:
        report = tool("system_health", tmp_path, host_root=tmp_path / "host", model_host=fake.url).output
    assert "load: " in report and "memory: " in report and "GiB free" in report
    assert f"reachable at {fake.url}; models: qwen2.5-coder:7b, llama3.1:8b" in report
    assert "systemd is not running on this host" in report


def test_system_health_says_when_the_model_server_does_not_answer(tmp_path: Path) -> None:
    (tmp_path / "host").mkdir()
    report = tool("system_health", tmp_path, host_root=tmp_path / "host", model_host="127.0.0.1:9").output
    assert "model server: not reachable at 127.0.0.1:9" in report


# --- the config repository -------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "config"
    path.mkdir()
    (path / "flake.nix").write_text("{ outputs = { self }: { }; }\n")
    (path / "hosts").mkdir()
    (path / "hosts/box.nix").write_text("{ }\n")
    if shutil.which("git"):
        git(path, "init", "-q")
        git(path, "add", "-A")
        git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init")
    return path


def snapshot(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file() and not p.is_symlink()
    }


def write(tmp: Path, repo: Path, path: str, content: str = "x") -> ToolResult:
    return tool("write_self_config", tmp, {"path": path, "content": content}, config_repo=repo)


@needs_git
@pytest.mark.parametrize(
    "path",
    [
        "../outside.nix",
        "/etc/passwd",
        "hosts/../../outside.nix",
        ".git/config",
        ".git/hooks/pre-commit",
        "hosts/../.git/HEAD",
        ".GIT/config",
        ".githooks/pre-commit",
        ".husky/pre-commit",
        ".envrc",
        "hosts/.envrc",
        ".gitmodules",
    ],
)
def test_write_self_config_refuses_escapes_git_data_and_hooks(path: str, tmp_path: Path, repo: Path) -> None:
    before = snapshot(repo)
    result = write(tmp_path, repo, path)
    assert not result.ok and result.output.startswith("Error:"), result.output
    assert snapshot(repo) == before
    assert not (tmp_path / "outside.nix").exists()


@needs_git
def test_write_self_config_refuses_a_symlink_to_git_data_or_out_of_the_repo(tmp_path: Path, repo: Path) -> None:
    os.symlink(".git", repo / "meta")
    os.symlink(str(tmp_path), repo / "out")
    before = snapshot(repo)
    assert "through the symlink 'meta'" in write(tmp_path, repo, "meta/hooks/pre-commit").output
    assert not write(tmp_path, repo, "out/x.nix").ok
    assert snapshot(repo) == before and not (tmp_path / "x.nix").exists()


@needs_git
def test_write_self_config_refuses_the_repositorys_own_hooks_path(tmp_path: Path, repo: Path) -> None:
    git(repo, "config", "core.hooksPath", "ci/hooks")
    result = write(tmp_path, repo, "ci/hooks/post-checkout", "#!/bin/sh\ntouch /tmp/pwned\n")
    assert "hooks directory (ci/hooks)" in result.output
    assert not (repo / "ci").exists()


@needs_git
def test_write_self_config_writes_inside_and_a_new_file_shows_in_git_diff(tmp_path: Path, repo: Path) -> None:
    assert write(tmp_path, repo, "hosts/new.nix", "{ services.x = true; }\n").ok
    assert (repo / "hosts/new.nix").read_text() == "{ services.x = true; }\n"
    diff = tool("git_diff", tmp_path, config_repo=repo).output
    assert "+++ b/hosts/new.nix" in diff and "+{ services.x = true; }" in diff
    assert "A hosts/new.nix" in tool("git_status", tmp_path, config_repo=repo).output


@needs_git
def test_read_self_config_reads_and_lists_but_never_git_data(tmp_path: Path, repo: Path) -> None:
    assert tool("read_self_config", tmp_path, {"path": "hosts/box.nix"}, config_repo=repo).output == "{ }\n"
    assert tool("read_self_config", tmp_path, {}, config_repo=repo).output.splitlines() == ["flake.nix", "hosts/"]
    refused = tool("read_self_config", tmp_path, {"path": ".git/config"}, config_repo=repo)
    assert not refused.ok and "git's data" in refused.output


def test_config_tools_refuse_when_the_run_has_no_config_repo(tmp_path: Path) -> None:
    for name, args in (
        ("read_self_config", {}),
        ("write_self_config", {"path": "a", "content": "b"}),
        ("git_status", {}),
        ("git_diff", {}),
        ("nix_check", {}),
    ):
        result = tool(name, tmp_path, args)
        assert not result.ok and "no config repository is set for this run" in result.output, name


# --- nix_check -------------------------------------------------------------------------------


def flake(path: Path, body: str) -> Path:
    path.mkdir(parents=True)
    (path / "flake.nix").write_text(body)
    return path


VALID = """{
  nixConfig.extra-substituters = [ "http://127.0.0.1:9" ];
  outputs = { self }: {
    checks.x86_64-linux.ok = derivation { name = "ok"; system = "x86_64-linux"; builder = "/bin/sh"; args = [ "-c" "echo > $out" ]; };
  };
}
"""


@needs_nix
def test_nix_check_passes_on_a_tiny_valid_flake_offline_and_ignores_its_nix_config(tmp_path: Path) -> None:
    result = tool("nix_check", tmp_path, config_repo=flake(tmp_path / "good", VALID))
    assert result.ok, result.output
    assert result.output.startswith("nix flake check --no-build: PASS (exit 0")
    assert "ignoring untrusted flake configuration setting 'extra-substituters'" in result.output


@needs_nix
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("{ outputs = { self }: { lib.x = 1 +; }; }\n", "syntax error"),
        (
            '{ outputs = { self }: { checks.x86_64-linux.boom = throw "option services.foo does not exist"; }; }\n',
            "option services.foo does not exist",
        ),
    ],
)
def test_nix_check_fails_on_a_broken_flake_with_the_error_in_its_log(body: str, expected: str, tmp_path: Path) -> None:
    result = tool("nix_check", tmp_path, config_repo=flake(tmp_path / "bad", body))
    assert not result.ok and "nix flake check --no-build: FAIL (exit 1" in result.output
    assert expected in result.output


@needs_nix
@needs_git
def test_nix_check_sees_a_file_written_by_write_self_config(tmp_path: Path, repo: Path) -> None:
    (repo / "flake.nix").write_text("{ outputs = { self }: { checks.x86_64-linux.n = import ./n.nix; }; }\n")
    missing = tool("nix_check", tmp_path, config_repo=repo)
    assert not missing.ok and "n.nix" in missing.output
    assert write(
        tmp_path, repo, "n.nix", 'derivation { name = "n"; system = "x86_64-linux"; builder = "/bin/sh"; }\n'
    ).ok
    assert tool("nix_check", tmp_path, config_repo=repo).ok


def test_a_check_that_outlives_its_timeout_is_killed_with_its_children() -> None:
    marker = f"30.{secrets.randbelow(10**9)}"  # a command line no other process on the machine has
    code, _ = _run_group(["/bin/sh", "-c", f"sleep {marker} & sleep {marker}"], {"PATH": "/usr/bin:/bin"}, 0.3)
    assert code is None
    wait_for(lambda: not survivors(marker), what=f"the check's children (sleep {marker}) to be gone")


def survivors(marker: str) -> str:
    return subprocess.run(["pgrep", "-f", f"^sleep {marker}$"], capture_output=True, text=True).stdout


def test_nix_check_timeout_is_bounded(tmp_path: Path, repo: Path) -> None:
    result = tool("nix_check", tmp_path, {"timeout_s": 5}, config_repo=repo)
    assert not result.ok and "between 10 and 1800" in result.output
