"""hearth's own NixOS configuration repository: safe git, the path guard, and `nix flake check`.

Used by the config-repository tools (agent/tools/config_repo.py) and by self-evolution (hearth/evolve.py).

- ``git()`` runs git with the repository's hooks, fsmonitor, pager and external diff drivers off,
  and the repository trusted explicitly (hearth's user may not own it), so reading or committing
  never runs a program the repository names.
- ``guard()`` is the extra rule for config paths on top of Workspace containment: nothing under
  ``.git``, no hook directories and no file that a tool would execute on the operator's behalf
  later (``.envrc``, ``.gitmodules``), and no path through a symlink.
- ``nix_flake_check()`` runs ``nix flake check --no-build`` offline: no substituters, lock file
  never written, the flake's own ``nixConfig`` ignored, in a scratch HOME, with a timeout that
  kills the whole process group. The log is trimmed to what a person (or a model) reads.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from agent.safety.sandbox import scrubbed_env
from agent.safety.workspace import PathRefused, Workspace

REFUSED_DIRS = frozenset({".git", ".githooks", ".husky"})  # git's own data and hook managers' dirs
REFUSED_FILES = frozenset({".envrc", ".gitmodules"})  # run by direnv / fetched by git on the operator's behalf
LOG_HEAD_LINES, LOG_TAIL_LINES, LOG_CHARS = 8, 40, 6_000
NIX_FLAGS = [
    "--extra-experimental-features",
    "nix-command flakes",
    "--offline",
    "--option",
    "substituters",
    "",
    "--option",
    "accept-flake-config",
    "false",
]


class GitFailed(Exception):
    """A git command failed; str() is one line with its error."""


def git(repo: Path, *args: str, timeout_s: float = 60, check: bool = True) -> str:
    """Run git in ``repo`` without anything the repository could make it execute; its stdout."""
    command = [
        "git",
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "core.fsmonitor=false",
        "-c",
        "core.pager=cat",
        "-c",
        f"safe.directory={repo}",
        "-c",
        "commit.gpgSign=false",
        "-C",
        str(repo),
        *args,
    ]
    # no system or user config either: only the repository's own and the overrides above count
    env = {
        **scrubbed_env(),
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout_s, env=env, stdin=subprocess.DEVNULL
        )
    except FileNotFoundError:
        raise GitFailed("git is not installed") from None
    except subprocess.TimeoutExpired:
        raise GitFailed(f"git {args[0]} timed out after {timeout_s:.0f}s") from None
    if check and done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise GitFailed(f"git {args[0]} failed: {detail}")
    return done.stdout


def is_git_repo(repo: Path) -> bool:
    return (repo / ".git").exists()


def hooks_path(repo: Path) -> str | None:
    """The repository's own core.hooksPath, relative to it, when it points inside it."""
    if not is_git_repo(repo):
        return None
    try:
        value = git(repo, "config", "--local", "--get", "core.hooksPath").strip()  # --local: not our -c override
    except GitFailed:
        return None
    return os.path.relpath(os.path.join(repo, value), repo) if value else None


def guard(ws: Workspace, path: str, *, writing: bool) -> str:
    """The normalised relative path, or PathRefused naming the rule it breaks."""
    rel = ws.relpath(path)
    parts = [] if rel == "." else rel.split("/")
    if any(part.lower() in REFUSED_DIRS for part in parts):
        raise PathRefused(f"path {path!r} is inside git's data or a hooks directory; it is never read or written")
    hooks = hooks_path(ws.root) if writing else None
    if hooks and not hooks.startswith("..") and (rel == hooks or rel.startswith(hooks.rstrip("/") + "/")):
        raise PathRefused(f"path {path!r} is in the repository's hooks directory ({hooks})")
    if writing and parts and parts[-1].lower() in REFUSED_FILES:
        raise PathRefused(f"path {path!r} names a file other tools run or fetch for the operator; it is not written")
    for depth in range(1, len(parts)):
        entry = ws.stat("/".join(parts[:depth]))
        if entry is not None and entry.kind == "symlink":
            raise PathRefused(
                f"path {path!r} goes through the symlink {'/'.join(parts[:depth])!r}; config paths are not followed through symlinks"
            )
    return rel


@dataclass(frozen=True)
class NixCheck:
    passed: bool
    log: str
    duration_s: float
    exit_code: int | None  # None when it timed out or could not start

    def summary(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        how = "timed out" if self.exit_code is None else f"exit {self.exit_code}"
        return f"nix flake check --no-build: {verdict} ({how}, {self.duration_s:.1f}s)"


def nix_flake_check(repo: Path, *, timeout_s: float = 600) -> NixCheck:
    """`nix flake check --no-build` on the flake at ``repo``, offline."""
    nix = shutil.which("nix")
    if nix is None:
        return NixCheck(False, "nix is not installed on this host, so the flake cannot be checked", 0.0, None)
    if not (repo / "flake.nix").is_file():
        return NixCheck(False, f"{repo} has no flake.nix", 0.0, None)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hearth-nix-check-") as home:
        env = {**scrubbed_env(), "HOME": home, "XDG_CACHE_HOME": home, "NIX_REMOTE": os.environ.get("NIX_REMOTE", "")}
        command = [nix, *NIX_FLAGS, "flake", "check", "--no-build", "--no-write-lock-file", str(repo)]
        code, output = _run_group(command, env, timeout_s)
    duration = time.monotonic() - started
    log = trim_log(output)
    if code is None:
        log = f"{log}\n[nix flake check killed after {timeout_s:.0f}s]".lstrip()
    return NixCheck(code == 0, log, duration, code)


def _run_group(command: list[str], env: dict[str, str], timeout_s: float) -> tuple[int | None, str]:
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env={k: v for k, v in env.items() if v},
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=timeout_s)
        return proc.returncode, output.decode("utf-8", errors="replace")
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        return None, output.decode("utf-8", errors="replace")


def trim_log(text: str) -> str:
    """The head and the tail (where nix puts the error), without progress noise, capped in size."""
    lines = [line for line in text.splitlines() if line.strip() and line.strip() != "evaluating flake..."]
    if len(lines) > LOG_HEAD_LINES + LOG_TAIL_LINES:
        cut = len(lines) - LOG_HEAD_LINES - LOG_TAIL_LINES
        lines = lines[:LOG_HEAD_LINES] + [f"[... {cut} lines cut ...]"] + lines[-LOG_TAIL_LINES:]
    joined = "\n".join(lines)
    return joined if len(joined) <= LOG_CHARS else "[...]\n" + joined[-LOG_CHARS:]
