"""hearth's own git never runs a program a repository names.

Used by the checkpoints (hearth/run/checkpoints.py) and the config-repository tools
(agent/safety/selfconfig.py). A repository's config is the agent's to write when the agent works
in it, and git runs programs from it: hooks, fsmonitor, clean/smudge filters (named by
.gitattributes, which is a work-tree file), textconv and external diff drivers, pagers, editors,
ssh commands, credential helpers, gpg. So:

- `NEUTRAL` is the `-c` list that switches every such setting off for one git call (a `-c` value
  beats the repository's config; an empty helper list resets it);
- `inspect()` reads a repository's own config files as data (`git config --file ... --list
  --no-includes` parses, it runs nothing) and says what cannot be neutralised from outside: an
  include (another file, maybe the agent's), a `commondir` (the config and objects live
  elsewhere), a clean/smudge filter (turning it off would commit other bytes than the user's own
  git would). It also names every diff/merge/filter driver, so `driver_flags()` can empty each one,
  and fingerprints the config files, so a change during a run is noticed before git reads them.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["NEUTRAL", "RepoConfig", "driver_flags", "flags", "inspect"]

NEUTRAL = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "core.pager=cat",
    "core.editor=false",
    "sequence.editor=false",
    "core.sshCommand=false",
    "core.askPass=",
    "credential.helper=",
    "core.alternateRefsCommand=",
    "uploadpack.packObjectsHook=",
    "diff.external=",
    "gpg.program=false",
    "gpg.ssh.program=false",
    "gpg.x509.program=false",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "protocol.allow=never",
    "submodule.recurse=false",
    "diff.ignoreSubmodules=all",
    "status.submoduleSummary=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "core.quotePath=false",
    "init.defaultBranch=main",
)
CONFIG_FILES = ("config", "config.worktree")


@dataclass(frozen=True)
class RepoConfig:
    fingerprint: str  # of the config files' bytes (and whether commondir exists)
    problems: tuple[str, ...] = ()  # what cannot be neutralised: hearth does not commit there
    drivers: tuple[tuple[str, str], ...] = field(default_factory=tuple)  # (section, name): diff/merge/filter drivers


def inspect(git_dir: Path) -> RepoConfig:
    """What the repository whose git data is ``git_dir`` says, read as data."""
    digest = hashlib.sha256()
    problems: list[str] = []
    drivers: set[tuple[str, str]] = set()
    if os.path.lexists(git_dir / "commondir"):
        problems.append("its git data has a commondir file (its config and objects live elsewhere)")
        digest.update(b"commondir")
    for name in CONFIG_FILES:
        path = git_dir / name
        if not os.path.lexists(path):
            continue
        if path.is_symlink() or not path.is_file():
            problems.append(f".git/{name} is not a regular file")
            continue
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
        keys = _keys(path)
        if keys is None:
            problems.append(f".git/{name} cannot be parsed")
            continue
        problems += _problems(keys, name)
        drivers |= {_driver(k) for k in keys if k.split(".")[0] in ("diff", "merge", "filter") and k.count(".") >= 2}
    return RepoConfig(digest.hexdigest(), tuple(problems), tuple(sorted(drivers)))


def driver_flags(drivers: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    """`-c` values that empty every named driver's program."""
    keys = {"diff": ("textconv", "command"), "merge": ("driver",), "filter": ("clean", "smudge", "process")}
    out = [f"{section}.{name}.{key}=" for section, name in drivers for key in keys[section]]
    out += [f"filter.{name}.required=false" for section, name in drivers if section == "filter"]
    return tuple(out)


def flags(extra: tuple[str, ...] = ()) -> list[str]:
    """NEUTRAL and ``extra`` as git's `-c` arguments."""
    return [arg for value in (*NEUTRAL, *extra) for arg in ("-c", value)]


def _keys(path: Path) -> list[str] | None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    try:
        done = subprocess.run(
            ["git", "config", "--file", str(path), "--list", "--null", "--no-includes", "--name-only"],
            capture_output=True,
            env=env,
            stdin=subprocess.DEVNULL,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return [k.decode("utf-8", "replace") for k in done.stdout.split(b"\0") if k]  # git lowercases all but subsections


def _driver(key: str) -> tuple[str, str]:
    """filter.my.driver.clean -> ('filter', 'my.driver'): a subsection may hold dots."""
    section, rest = key.split(".", 1)
    return section, rest.rsplit(".", 1)[0]


def _problems(keys: list[str], name: str) -> list[str]:
    found = []
    if any(k == "include.path" or (k.startswith("includeif.") and k.endswith(".path")) for k in keys):
        found.append(f".git/{name} includes other files (include.path or includeIf)")
    filters = sorted({_driver(k)[1] for k in keys if k.startswith("filter.") and k.count(".") >= 2})
    if filters:
        found.append(
            f".git/{name} defines clean/smudge filters ({', '.join(filters)}); hearth runs none, so it "
            "would commit other bytes than your git does"
        )
    return found
