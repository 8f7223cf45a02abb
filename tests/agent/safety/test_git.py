"""Git never runs what the agent planted, and file tools never write git's data.

The config-repository tools (git_status, git_diff, write_self_config, nix_check) run git and nix
inside the command sandbox with every program-running setting neutralised: a planted filter,
textconv, fsmonitor and hooks leave no marker. nix_check has no network at all. File tools refuse
any path inside a .git directory and hearth's checkpoint histories, each with its own line.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent.safety.workspace import Workspace
from agent.services import RunServices
from agent.tools.gate import call_tool
from agent.tools.registry import ToolResult

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def tool(name: str, ws_root: Path, args: dict[str, Any] | None = None, **services: Any) -> ToolResult:
    ws_root.mkdir(exist_ok=True)
    with Workspace(ws_root, services=RunServices(**services)) as ws:
        return call_tool(name, args or {}, ws, mode="bypass")


def planted_repo(path: Path, marker: Path) -> Path:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull}
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=env)
    (path / "flake.nix").write_text("{ outputs = { self }: { }; }\n")
    run = ["git", "-C", str(path), "-c", "user.name=u", "-c", "user.email=u@u"]
    subprocess.run([*run, "add", "-A"], check=True, env=env)
    subprocess.run([*run, "commit", "-q", "-m", "first"], check=True, env=env)
    touch = f"touch {marker}"
    with open(path / ".git" / "config", "a") as config:
        config.write(
            f'[filter "evil"]\n  clean = "{touch}; cat"\n  smudge = "{touch}; cat"\n  required = true\n'
            f'[diff "evil"]\n  textconv = "{touch}; cat"\n  command = "{touch}"\n'
            f'[core]\n  fsmonitor = "{touch}"\n  pager = "{touch}"\n[diff]\n  external = "{touch}"\n'
        )
    for hook in ("pre-commit", "post-index-change", "reference-transaction", "post-checkout"):
        (path / ".git" / "hooks" / hook).write_text(f"#!/bin/sh\n{touch}\n")
        (path / ".git" / "hooks" / hook).chmod(0o755)
    (path / ".gitattributes").write_text("* filter=evil diff=evil\n")
    (path / "flake.nix").write_text("{ outputs = { self }: { changed = 1; }; }\n")  # dirty: status and diff look
    return path


@needs_git
def test_the_config_repository_tools_never_run_a_planted_program(tmp_path: Path) -> None:
    marker = tmp_path / "config" / "PLANTED-RAN"  # inside the repository: the sandbox lets git write there
    repo = planted_repo(tmp_path / "config", marker)
    ws = tmp_path / "ws"
    status = tool("git_status", ws, config_repo=repo)
    diff = tool("git_diff", ws, config_repo=repo)
    written = tool("write_self_config", ws, {"path": "hosts/new.nix", "content": "{ }\n"}, config_repo=repo)
    assert status.ok and "flake.nix" in status.output, status.output
    assert diff.ok and "changed = 1" in diff.output, diff.output
    assert written.ok, written.output
    assert not marker.exists()


def test_file_tools_never_write_into_a_git_directory(tmp_path: Path) -> None:
    (tmp_path / "ws" / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / "ws" / "sub" / ".GIT").mkdir(parents=True)
    for path in (".git/hooks/pre-commit", ".git/config", "sub/.GIT/config", "./.git/info/attributes"):
        result = tool("write_file", tmp_path / "ws", {"path": path, "content": "#!/bin/sh\n"})
        assert result.output == f"Error: path {path!r} is inside a .git directory; file tools never write git's data"
    assert os.listdir(tmp_path / "ws" / ".git" / "hooks") == []
    assert tool("write_file", tmp_path / "ws", {"path": "notes.git/x", "content": "fine"}).ok  # only the name .git


def test_file_tools_never_write_hearths_checkpoint_histories(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "state" / "checkpoints").mkdir(parents=True)
    protected = (str(ws / "state" / "checkpoints"),)
    result = tool("write_file", ws, {"path": "state/checkpoints/x.git/config", "content": "x"}, protected=protected)
    assert result.output == (
        "Error: path 'state/checkpoints/x.git/config' is hearth's checkpoint history; file tools never write it"
    )
    assert tool("write_file", ws, {"path": "state/notes.txt", "content": "x"}, protected=protected).ok


@pytest.mark.skipif(shutil.which("nix") is None, reason="nix is not installed")
def test_nix_check_has_no_network_at_all(tmp_path: Path, listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    repo = tmp_path / "flake"
    repo.mkdir()
    fetch = f'builtins.fetchurl {{ url = "http://127.0.0.1:{port}/f"; sha256 = "{"0" * 52}"; }}'
    drv = f'derivation {{ name = builtins.readFile ({fetch}); system = "x86_64-linux"; builder = "/bin/sh"; }}'
    (repo / "flake.nix").write_text(f"{{ outputs = {{ self }}: {{ checks.x86_64-linux.x = {drv}; }}; }}\n")
    result = tool("nix_check", tmp_path / "ws", config_repo=repo)
    assert not result.ok and "unable to download" in result.output, result.output
    with pytest.raises(BlockingIOError):
        listener.accept()  # nothing reached the loopback listener
