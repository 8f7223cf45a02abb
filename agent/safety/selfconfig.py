"""hearth's own NixOS configuration repository: safe git, the path guard, and `nix flake check`.

Used by the config-repository tools (agent/tools/config_repo.py) and by self-evolution (hearth/evolve.py).

- ``git()`` runs git with every program-running setting neutralised (agent/safety/gitsafe.py:
  hooks, fsmonitor, pager, editor, filters, textconv and diff/merge drivers, ssh, credential
  helpers, gpg) and the repository trusted explicitly (hearth's user may not own it). For the
  config-repository tools it runs inside the run's command sandbox (``sandbox=``), with only the
  repository (and a worktree's git data) writable, no network and a scratch TMPDIR; never on the
  host as hearth's user with the repository's config.
- ``guard()`` is the extra rule for config paths on top of Workspace containment: nothing under
  ``.git``, no hook directories and no file that a tool would execute on the operator's behalf
  later (``.envrc``, ``.gitmodules``), and no path through a symlink.
- ``nix_flake_check()`` runs ``nix flake check --no-build`` offline: no substituters, no
  import-from-derivation, lock file never written, the flake's own ``nixConfig`` ignored, in a
  scratch HOME, with a timeout that kills the whole process group. With ``sandbox=`` (nix_check)
  it runs inside the command sandbox: no network at all, so no fetcher reaches anything, and a
  memory cap (NIX_MEMORY_BYTES). The store is nix-daemon's through its socket when there is one
  (the only relaxation: AF_UNIX, to reach it); otherwise a scratch store of its own. The log is
  trimmed to what a person (or a model) reads.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from agent.errors import AgentError
from agent.safety import gitsafe
from agent.safety.sandbox import SandboxPolicy, SandboxUnavailable, run_sandboxed, scrubbed_env
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
    "--option",
    "allow-import-from-derivation",
    "false",
]
NIX_MEMORY_BYTES = 4 << 30  # evaluating a NixOS configuration takes a few hundred MiB to 2 GiB
DAEMON_SOCKET = "/nix/var/nix/daemon-socket/socket"
GIT_OUTPUT_LIMIT = 1_000_000
_GIT_FAILED = "@@hearth-git-failed"
# stdout goes out as it is; stderr is kept and printed after a marker only when git fails
_GIT_SCRIPT = '{ err=$(git "$@" 2>&1 >&3 3>&-); } 3>&1; c=$?; [ $c -eq 0 ] || printf \'\\n%s %s\\n%s\\n\' "$MARK" $c "$err"; exit $c'


class GitFailed(AgentError):
    """A git command failed; str() is one line with its error."""


def git(repo: Path, *args: str, timeout_s: float = 60, check: bool = True, sandbox: SandboxPolicy | None = None) -> str:
    """Run git in ``repo`` without anything the repository could make it execute; its stdout.

    ``sandbox``: the run's command policy (the config-repository tools); None runs git on the host,
    which only hearth's own flows do (self-evolution's commit of its proposal).
    """
    data = _git_data(repo)
    drivers = gitsafe.inspect(Path(data[-1])).drivers if data else ()
    flags = gitsafe.flags((*gitsafe.driver_flags(drivers), f"safe.directory={repo}"))
    # no system or user config either: only the repository's own, neutralised as above
    env = {
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    command = ["git", *flags, "-C", str(repo), *args]
    if sandbox is not None:
        code, out, err = _sandboxed_git(repo, command[1:], env, sandbox, data, timeout_s)
    else:
        code, out, err = _host_git(command, env, timeout_s)
    if check and code != 0:
        detail = (err.strip().splitlines() or [f"exit {code}"])[-1]
        raise GitFailed(f"git {args[0]} failed: {detail}")
    return out


def _host_git(command: list[str], env: dict[str, str], timeout_s: float) -> tuple[int, str, str]:
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env={**scrubbed_env(), **env},
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise GitFailed("git is not installed") from None
    except subprocess.TimeoutExpired:
        raise GitFailed(f"git {command[-1]} timed out after {timeout_s:.0f}s") from None
    return done.returncode, done.stdout, done.stderr


def _sandboxed_git(
    repo: Path, args: list[str], env: dict[str, str], sandbox: SandboxPolicy, data: list[str], timeout_s: float
) -> tuple[int, str, str]:
    if shutil.which("git") is None:
        raise GitFailed("git is not installed")
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in {**env, "MARK": _GIT_FAILED}.items())
    script = f"{exports}set -- {shlex.join(args)}\n{_GIT_SCRIPT}"
    with tempfile.TemporaryDirectory(prefix="hearth-git-") as scratch:
        policy = SandboxPolicy(
            kind=sandbox.kind,
            hide=sandbox.hide,
            expose=sandbox.expose,
            writable=tuple(d for d in data if not _beneath(d, repo)),
            tmp=scratch,
            home=None,
        )
        try:
            result = run_sandboxed(script, repo, policy=policy, timeout_s=timeout_s, output_limit=GIT_OUTPUT_LIMIT)
        except SandboxUnavailable as exc:
            raise GitFailed(f"git cannot run: no command sandbox here ({exc})") from None
    if result.timed_out:
        raise GitFailed(f"git {args[-1]} timed out after {timeout_s:.0f}s")
    out, _, err = result.output.partition(f"\n{_GIT_FAILED} ")
    return result.exit_code or 0, out, err.partition("\n")[2]


def _git_data(repo: Path) -> list[str]:
    """The repository's git data: its .git directory, or a worktree's gitdir and common dir."""
    dot = repo / ".git"
    if dot.is_dir():
        return [str(dot)]
    if not dot.is_file():
        return []
    line = dot.read_text(errors="replace").strip()
    if not line.startswith("gitdir:"):
        return []
    gitdir = (repo / line[len("gitdir:") :].strip()).resolve()
    common = gitdir / "commondir"
    shared = (gitdir / common.read_text().strip()).resolve() if common.is_file() else gitdir
    return [str(gitdir), str(shared)]


def _beneath(path: str, repo: Path) -> bool:
    return Path(path).resolve().is_relative_to(repo.resolve())


def is_git_repo(repo: Path) -> bool:
    return (repo / ".git").exists()


def hooks_path(repo: Path) -> str | None:
    """The repository's own core.hooksPath, relative to it, when it points inside it."""
    if not is_git_repo(repo):
        return None
    try:
        data = _git_data(repo)  # read as data from the repository's own config file, not our -c override
        value = git(repo, "config", "--file", f"{data[-1]}/config", "--get", "core.hooksPath").strip() if data else ""
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


def nix_flake_check(repo: Path, *, timeout_s: float = 600, sandbox: SandboxPolicy | None = None) -> NixCheck:
    """`nix flake check --no-build` on the flake at ``repo``, offline (inside ``sandbox`` when given)."""
    nix = shutil.which("nix")
    if nix is None:
        return NixCheck(False, "nix is not installed on this host, so the flake cannot be checked", 0.0, None)
    if not (repo / "flake.nix").is_file():
        return NixCheck(False, f"{repo} has no flake.nix", 0.0, None)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hearth-nix-check-") as home:
        command = [nix, *NIX_FLAGS, "flake", "check", "--no-build", "--no-write-lock-file", str(repo)]
        if sandbox is None:
            env = {
                **scrubbed_env(),
                "HOME": home,
                "XDG_CACHE_HOME": home,
                "NIX_REMOTE": os.environ.get("NIX_REMOTE", ""),
            }
            code, output = _run_group(command, env, timeout_s)
        else:
            code, output = _sandboxed_nix(command, repo, home, sandbox, timeout_s)
    duration = time.monotonic() - started
    log = trim_log(output)
    if code is None:
        log = f"{log}\n[nix flake check killed after {timeout_s:.0f}s]".lstrip()
    return NixCheck(code == 0, log, duration, code)


def _sandboxed_nix(
    command: list[str], repo: Path, scratch: str, sandbox: SandboxPolicy, timeout_s: float
) -> tuple[int | None, str]:
    """nix in the command sandbox: no network, a memory cap, HOME and cache in ``scratch``."""
    daemon = os.path.exists(DAEMON_SOCKET) and (os.geteuid() != 0 or os.environ.get("NIX_REMOTE") == "daemon")
    env = {"HOME": scratch, "XDG_CACHE_HOME": scratch}
    if daemon:
        env["NIX_REMOTE"] = "daemon"
    else:  # a store of its own: the host's cannot be written from the sandbox
        command = [command[0], "--store", os.path.join(scratch, "store"), *command[1:]]
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())
    policy = SandboxPolicy(
        kind=sandbox.kind,
        hide=sandbox.hide,
        expose=(*sandbox.expose, *([os.path.dirname(DAEMON_SOCKET)] if daemon else [])),
        writable=(scratch,),
        tmp=scratch,
        memory_bytes=NIX_MEMORY_BYTES,
        unix_sockets=daemon,  # nix-daemon's socket: the one relaxation, and only for nix_check
    )
    try:
        result = run_sandboxed(
            exports + "exec " + shlex.join(command),
            repo,
            policy=policy,
            timeout_s=timeout_s,
            output_limit=GIT_OUTPUT_LIMIT,
        )
    except SandboxUnavailable as exc:
        return 1, f"nix cannot run: no command sandbox here ({exc})"
    return (None if result.timed_out else result.exit_code), result.output


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
