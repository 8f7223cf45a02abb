"""Config-repository tools: hearth's own NixOS configuration, read, written and checked.

read_self_config / write_self_config / git_status / git_diff / nix_check work on the config
repository the appliance hands the run (``RunServices.config_repo``; without one they are not
shown, and refuse if called). Paths there go through a Workspace rooted at the repository plus
``agent.safety.selfconfig.guard``; git and nix run as that module says, inside the run's command
sandbox, never on the host with the repository's config. Every tool here is safe
(read-only) except write_self_config: edit, and dangerous (asks in auto; plan refuses it as an
edit anyway) when the write widens hearth's security (agent/safety/widening.py: mode, tools,
egress, writable paths, sandbox, credentials, hardening, users, against the file as it is now).
The one exception is evolve's proposal checkout (see write_risk).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from agent.safety.workspace import PathRefused, Workspace
from agent.services import RunServices
from agent.tools.args import integer
from agent.tools.registry import Tool, ToolFailed

READ_LIMIT = 64_000
WRITE_CHECK_LIMIT = 16_000_000  # bytes of a config file compared with what the run read
MAX_NIX_TIMEOUT_S = 1800


def _repo(ws: Workspace) -> Path:
    repo = ws.services.config_repo
    if repo is None:
        raise ToolFailed(
            "no config repository is set for this run (services.hearth.configRepo; `hearth evolve` runs with one)"
        )
    if not Path(repo).is_dir():
        raise ToolFailed(f"the config repository {repo} does not exist")
    return Path(repo)


def read_self_config(args: dict[str, Any], ws: Workspace) -> str:
    from agent.safety.selfconfig import guard

    with Workspace(_repo(ws)) as repo:
        rel = guard(repo, args.get("path") or ".", writing=False)
        entry = repo.stat(rel)
        if entry is None:
            raise ToolFailed(f"not found in the config repository: {rel}")
        if entry.kind == "dir":
            names = [f"{e.name}/" if e.kind == "dir" else e.name for e in repo.iter_dir(rel) if e.name != ".git"]
            return "\n".join(names) or "(empty directory)"
        text, cut = repo.read_text(rel, limit=READ_LIMIT)
        whole, _ = repo.read_bytes(rel, limit=WRITE_CHECK_LIMIT)
    ws.services.config_seen[rel] = _digest(whole)
    return text + (f"\n[read_self_config: cut at {READ_LIMIT} bytes]" if cut else "")


def write_self_config(args: dict[str, Any], ws: Workspace) -> str:
    from agent.safety.selfconfig import guard, is_git_repo

    path = _repo(ws)
    with Workspace(path) as repo:
        rel = guard(repo, args["path"], writing=True)
        new = repo.stat(rel) is None
        seen = ws.services.config_seen.get(rel)
        if not new and seen is not None and _digest(repo.read_bytes(rel, limit=WRITE_CHECK_LIMIT)[0]) != seen:
            raise ToolFailed(
                f"{rel} was changed by someone else since this run read it; nothing was written. "
                "Read it again with read_self_config and make your change on top of what is there now"
            )
        data = args["content"].encode("utf-8")
        repo.write_bytes(rel, data)
    ws.services.config_seen[rel] = _digest(data)
    if new and is_git_repo(path):
        # intent-to-add: nix flake check reads a git flake's tracked files only
        _git_or_fail(path, "add", "--intent-to-add", "--", rel, ws=ws)
    return f"wrote {len(data)} bytes to {rel} in the config repository"


def write_risk(args: dict[str, Any], ws: Workspace) -> str:
    """dangerous when writing `content` over the file as it is now widens security, else edit.

    Not in a proposal checkout: when the config repository is the run's own workspace (hearth
    evolve's scratch worktree), a write lands only on a proposal branch that a person applies, and a
    proposal that widens security is flagged and held apart (hearth/evolve.py); there it stays edit,
    so an auto evolve run still ends in a proposal."""
    from agent.safety.selfconfig import guard
    from agent.safety.widening import widening

    try:
        target = _repo(ws)
        if target.resolve() == Path(ws.root).resolve():
            return "edit"
        with Workspace(target) as repo:
            rel = guard(repo, args["path"], writing=True)
            old = None
            if repo.stat(rel) is not None:
                old = repo.read_bytes(rel, limit=WRITE_CHECK_LIMIT)[0].decode("utf-8", "replace")
    except (PathRefused, ToolFailed):
        return "edit"  # the write itself refuses it, with its own reason, and writes nothing
    return "dangerous" if widening(old, args["content"], rel) else "edit"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _git_or_fail(repo: Path, *args: str, ws: Workspace) -> str:
    from agent.safety.selfconfig import GitFailed, git

    try:
        return git(repo, *args, sandbox=ws.services.sandbox)
    except GitFailed as exc:
        raise ToolFailed(str(exc)) from None


def git_status(args: dict[str, Any], ws: Workspace) -> str:
    from agent.safety.selfconfig import is_git_repo

    repo = _repo(ws)
    if not is_git_repo(repo):
        raise ToolFailed(f"the config repository {repo} is not a git checkout")
    return _git_or_fail(repo, "status", "--short", "--branch", ws=ws).rstrip() or "(clean)"


def git_diff(args: dict[str, Any], ws: Workspace) -> str:
    from agent.safety.selfconfig import guard, is_git_repo

    repo = _repo(ws)
    if not is_git_repo(repo):
        raise ToolFailed(f"the config repository {repo} is not a git checkout")
    paths = ["--", args["path"]] if args.get("path") else []
    if args.get("path"):
        with Workspace(repo) as view:
            guard(view, args["path"], writing=False)
    diff = _git_or_fail(repo, "diff", "--no-ext-diff", "--no-textconv", "HEAD", *paths, ws=ws)
    return diff.rstrip() or "(no changes against HEAD)"


def nix_check(args: dict[str, Any], ws: Workspace) -> str:
    from agent.safety.selfconfig import nix_flake_check

    timeout = args.get("timeout_s", ws.services.nix_check_timeout_s)
    result = nix_flake_check(_repo(ws), timeout_s=timeout, sandbox=ws.services.sandbox)
    report = f"{result.summary()}\n{result.log}".rstrip()
    if not result.passed:
        raise ToolFailed(report)
    return report


_NONE: dict[str, dict[str, Any]] = {}
_CONFIG_PATH = {"type": "string", "description": "Relative to the config repository."}


def _has_repo(services: RunServices) -> bool:
    return services.config_repo is not None


TOOLS = [
    Tool(
        "read_self_config",
        "Read a file of hearth's config repository, or list a directory.",
        {"path": _CONFIG_PATH},
        read_self_config,
        risk="safe",
        available=_has_repo,
    ),
    Tool(
        "write_self_config",
        "Create or replace a file of hearth's config repository.",
        {"path": _CONFIG_PATH, "content": {"type": "string"}},
        write_self_config,
        risk="edit",
        required=("path", "content"),
        available=_has_repo,
        risk_of_call=write_risk,
    ),
    Tool(
        "git_status",
        "Show the config repository's git status.",
        _NONE,
        git_status,
        risk="safe",
        available=_has_repo,
    ),
    Tool(
        "git_diff",
        "Show the config repository's uncommitted changes.",
        {"path": _CONFIG_PATH},
        git_diff,
        risk="safe",
        available=_has_repo,
    ),
    Tool(
        "nix_check",
        "Check the config repository's flake offline (nix flake check).",
        {"timeout_s": integer("10 to 1800 (default 600).", 10, MAX_NIX_TIMEOUT_S)},
        nix_check,
        risk="safe",
        available=_has_repo,
    ),
]
