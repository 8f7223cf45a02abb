"""Self-knowledge tools: the system hearth runs on, and its own NixOS configuration repository.

current_generation / list_generations read the NixOS system profile; system_health reports load,
memory, disk, Ollama and failed hearth units; read_self_config / write_self_config / git_status /
git_diff / nix_check work on the config repository the appliance hands the run
(``RunServices.config_repo``; without one they refuse). Paths there go through a Workspace rooted
at the repository plus ``agent.safety.selfconfig.guard``. On a host that is not NixOS the generation
tools say so plainly. Every tool here is safe (read-only) except write_self_config (edit).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent.hearth_tools import Tool, ToolFailed, register
from agent.model.ollama_client import probe
from agent.safety.selfconfig import GitFailed, git, guard, is_git_repo, nix_flake_check
from agent.services import RunServices
from agent.safety.workspace import Workspace

_LINK = re.compile(r"^system-(\d+)-link$")
READ_LIMIT = 64_000
MAX_NIX_TIMEOUT_S = 1800


# --- NixOS generations -----------------------------------------------------------------------

def _root(ws: Workspace) -> Path:
    return ws.services.host_root


def _on_host(root: Path, target: str) -> Path:
    """A symlink target of the host, seen under ``root`` (itself '/' outside tests)."""
    return root / target.lstrip("/")


def _not_nixos(root: Path) -> str | None:
    if (root / "etc/NIXOS").exists() or (root / "run/current-system").is_symlink():
        return None
    return "this host is not NixOS (no /etc/NIXOS and no /run/current-system): it has no system generations"


def _version(root: Path, target: str) -> str:
    try:
        return _on_host(root, target).joinpath("nixos-version").read_text().strip()
    except OSError:
        return "?"


def _generations(root: Path) -> list[dict[str, Any]]:
    profiles = root / "nix/var/nix/profiles"
    current = os.readlink(root / "run/current-system") if (root / "run/current-system").is_symlink() else ""
    found = []
    for entry in sorted(profiles.iterdir() if profiles.is_dir() else [], key=lambda p: p.name):
        match = _LINK.match(entry.name)
        if match and entry.is_symlink():
            target = os.readlink(entry)
            built = datetime.fromtimestamp(entry.lstat().st_mtime, UTC).strftime("%Y-%m-%d %H:%M")
            found.append({"number": int(match.group(1)), "target": target, "built": built,
                          "version": _version(root, target), "current": target == current})
    return sorted(found, key=lambda g: g["number"])


def current_generation(args: dict[str, Any], ws: Workspace) -> str:
    root = _root(ws)
    if problem := _not_nixos(root):
        return problem
    target = os.readlink(root / "run/current-system")
    numbered = next((g for g in _generations(root) if g["target"] == target), None)
    number = f"generation {numbered['number']}, built {numbered['built']}" if numbered else "generation unknown"
    return f"running {target}\nNixOS {_version(root, target)}, {number}"


def list_generations(args: dict[str, Any], ws: Workspace) -> str:
    root = _root(ws)
    if problem := _not_nixos(root):
        return problem
    rows = _generations(root)
    if not rows:
        return "no system generations found in /nix/var/nix/profiles"
    return "\n".join(f"{g['number']:>4}  {g['built']}  NixOS {g['version']}  {g['target']}"
                     f"{'  (current)' if g['current'] else ''}" for g in rows)


# --- health ----------------------------------------------------------------------------------

def _meminfo() -> str:
    fields = {}
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            name, _, value = line.partition(":")
            fields[name] = int(value.split()[0]) // 1024
    except (OSError, ValueError, IndexError):
        return "memory: unknown (/proc/meminfo unreadable)"
    return f"memory: {fields.get('MemAvailable', 0)} MiB available of {fields.get('MemTotal', 0)} MiB"


def _disk(path: Path) -> str:
    usage = shutil.disk_usage(path)
    return f"disk {path}: {usage.free // 2**30} GiB free of {usage.total // 2**30} GiB ({usage.used * 100 // usage.total}% used)"


def _ollama(host: str) -> str:
    if not host:
        return "ollama: no server configured for this run"
    models = probe(host)
    if models is None:
        return f"ollama: not reachable at {host}"
    return f"ollama: reachable at {host}; models: {', '.join(models) or 'none pulled'}"


def _failed_units(root: Path) -> str:
    if not (root / "run/systemd/system").is_dir():
        return "hearth units: systemd is not running on this host, so there is no unit status"
    try:
        done = subprocess.run(["systemctl", "list-units", "--failed", "--plain", "--no-legend", "--no-pager",
                               "hearth*"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"hearth units: could not ask systemd ({exc})"
    failed = [line.split()[0] for line in done.stdout.splitlines() if line.strip()]
    if done.returncode != 0:
        return f"hearth units: systemctl failed: {done.stderr.strip()[:200]}"
    return f"hearth units: failed: {', '.join(failed)}" if failed else "hearth units: none failed"


def system_health(args: dict[str, Any], ws: Workspace) -> str:
    root = _root(ws)
    load = os.getloadavg()
    lines = [
        _not_nixos(root) or current_generation(args, ws).replace("\n", "; "),
        f"load: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs",
        _meminfo(),
        _disk(ws.root),
        _ollama(ws.services.ollama_host),
        _failed_units(root),
    ]
    return "\n".join(lines)


# --- the config repository -------------------------------------------------------------------

def _repo(ws: Workspace) -> Path:
    repo = ws.services.config_repo
    if repo is None:
        raise ToolFailed("no config repository is set for this run (services.hearth.configRepo; `hearth evolve` runs with one)")
    if not Path(repo).is_dir():
        raise ToolFailed(f"the config repository {repo} does not exist")
    return Path(repo)


def read_self_config(args: dict[str, Any], ws: Workspace) -> str:
    with Workspace(_repo(ws)) as repo:
        rel = guard(repo, args.get("path") or ".", writing=False)
        entry = repo.stat(rel)
        if entry is None:
            raise ToolFailed(f"not found in the config repository: {rel}")
        if entry.kind == "dir":
            names = [f"{e.name}/" if e.kind == "dir" else e.name for e in repo.iter_dir(rel) if e.name != ".git"]
            return "\n".join(names) or "(empty directory)"
        text, cut = repo.read_text(rel, limit=READ_LIMIT)
    return text + (f"\n[read_self_config: cut at {READ_LIMIT} bytes]" if cut else "")


def write_self_config(args: dict[str, Any], ws: Workspace) -> str:
    path = _repo(ws)
    with Workspace(path) as repo:
        rel = guard(repo, args["path"], writing=True)
        new = repo.stat(rel) is None
        data = args["content"].encode("utf-8")
        repo.write_bytes(rel, data)
    if new and is_git_repo(path):
        # intent-to-add: nix flake check reads a git flake's tracked files only
        _git_or_fail(path, "add", "--intent-to-add", "--", rel)
    return f"wrote {len(data)} bytes to {rel} in the config repository"


def _git_or_fail(repo: Path, *args: str) -> str:
    try:
        return git(repo, *args)
    except GitFailed as exc:
        raise ToolFailed(str(exc)) from None


def git_status(args: dict[str, Any], ws: Workspace) -> str:
    repo = _repo(ws)
    if not is_git_repo(repo):
        raise ToolFailed(f"the config repository {repo} is not a git checkout")
    return _git_or_fail(repo, "status", "--short", "--branch").rstrip() or "(clean)"


def git_diff(args: dict[str, Any], ws: Workspace) -> str:
    repo = _repo(ws)
    if not is_git_repo(repo):
        raise ToolFailed(f"the config repository {repo} is not a git checkout")
    paths = ["--", args["path"]] if args.get("path") else []
    if args.get("path"):
        with Workspace(repo) as view:
            guard(view, args["path"], writing=False)
    diff = _git_or_fail(repo, "diff", "--no-ext-diff", "--no-textconv", "HEAD", *paths)
    return diff.rstrip() or "(no changes against HEAD)"


def nix_check(args: dict[str, Any], ws: Workspace) -> str:
    timeout = args.get("timeout_s", ws.services.nix_check_timeout_s)
    if not 10 <= timeout <= MAX_NIX_TIMEOUT_S:
        raise ToolFailed(f"timeout_s must be between 10 and {MAX_NIX_TIMEOUT_S}, got {timeout}")
    result = nix_flake_check(_repo(ws), timeout_s=timeout)
    report = f"{result.summary()}\n{result.log}".rstrip()
    if not result.passed:
        raise ToolFailed(report)
    return report


_NONE: dict[str, dict[str, Any]] = {}


def _on_nixos(services: RunServices) -> bool:
    return _not_nixos(services.host_root) is None


def _has_repo(services: RunServices) -> bool:
    return services.config_repo is not None
_CONFIG_PATH = {"type": "string", "description": "A path relative to the config repository."}

for _tool in (
    Tool("current_generation", "Show the running NixOS system generation (or say the host is not NixOS).",
         _NONE, current_generation, risk="safe", available=_on_nixos),
    Tool("list_generations", "List the NixOS system generations with their dates and versions, marking the running one.",
         _NONE, list_generations, risk="safe", available=_on_nixos),
    Tool("system_health", "Report load, memory, disk, Ollama reachability and models, and failed hearth units.",
         _NONE, system_health, risk="safe"),
    Tool("read_self_config", "Read a file of hearth's NixOS config repository, or list a directory of it (default: its root).",
         {"path": _CONFIG_PATH}, read_self_config, risk="safe", available=_has_repo),
    Tool("write_self_config", "Create or replace a file of hearth's NixOS config repository (never .git or hooks).",
         {"path": _CONFIG_PATH, "content": {"type": "string", "description": "The whole new content."}},
         write_self_config, risk="edit", required=("path", "content"), available=_has_repo),
    Tool("git_status", "Show the git status (branch, changed and new files) of the config repository.",
         _NONE, git_status, risk="safe", available=_has_repo),
    Tool("git_diff", "Show the changes of the config repository against its last commit, optionally for one path.",
         {"path": _CONFIG_PATH}, git_diff, risk="safe", available=_has_repo),
    Tool("nix_check", "Check the config repository's flake offline with `nix flake check --no-build`; returns pass or fail and the log.",
         {"timeout_s": {"type": "integer", "description": "Seconds before it is killed, 10 to 1800 (default 600)."}},
         nix_check, risk="safe", available=_has_repo),
):
    register(_tool)
