"""Another run's files from hearth's own checkpoint history, never from its directory.

A hearth-agent@ unit sees only its own workspace (nix/units.nix): the directories of other runs
are an empty read-only tmpfs. What every run can read is `<state>/checkpoints`, the git
directories hearth owns (hearth/run/checkpoints.py). So a follow-up restores the run it
continues, a swarm's child the swarm's seed, and a synthesis reads its children's work, from
those commits, found through the audit's `checkpoints` rows of the one linked run:

    source_of(run_id, rows, histories)   the commit to start from: the run's last checkpoint with a
                                         commit in one of hearth's own git directories, or None when
                                         the workspace provably held nothing; NoHistory if neither
    restore(point, target)               that commit's tree written into an empty directory
    file_at(git_dir, commit, path)       one file's bytes at a commit (the synthesis's copies)

git runs as the checkpoints run it: hearth's config only, no work tree for reading, nothing the
agent wrote can configure it, and `checkout-index` never writes through a link.
"""

from __future__ import annotations

import re
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.safety import gitsafe
from agent.safety.sandbox import SandboxPolicy, SandboxUnavailable, run_sandboxed
from hearth.errors import HearthError
from hearth.run.checkpoints import ISOLATION

TIMEOUT_S = 120
_SHA = re.compile(r"^[0-9a-f]{40,64}$")


class NoHistory(HearthError):
    """The run left nothing hearth can restore from; str() is the one-line reason."""


@dataclass(frozen=True)
class Point:
    """A commit in one of hearth's own history directories."""

    git_dir: Path
    commit: str


def source_of(run_id: str, rows: list[dict[str, Any]], histories: Path) -> Point | None:
    """Where run `run_id`'s workspace last stood; None: it was empty and nothing could write to it."""
    committed = [r for r in rows if r.get("commit_sha") and _SHA.match(r["commit_sha"])]
    if committed:
        row = committed[-1]
        git_dir = Path(row.get("git_dir") or "")
        if not row.get("git_dir") or not _inside(git_dir, histories):
            raise NoHistory(
                f"run {run_id}'s checkpoints are in its own repository, not in hearth's histories "
                f"({histories}); it can be continued only where its workspace is seen"
            )
        if not (git_dir / "HEAD").is_file():
            raise NoHistory(f"run {run_id}'s checkpoint history {git_dir} is gone")
        return Point(git_dir, row["commit_sha"])
    if _empty_throughout(rows):
        return None
    raise NoHistory(f"run {run_id} left no checkpoint of its workspace to restore from")


def restore(point: Point | None, target: Path, directory: str = ".") -> int:
    """Write the commit's files (those under `directory` of it, at the top) into `target` (new and
    empty); how many. OSError if git cannot."""
    if point is None:
        return 0
    tree = point.commit if directory in ("", ".") else shlex.quote(f"{point.commit}:{directory}")
    with tempfile.TemporaryDirectory(prefix="hearth-restore-") as scratch:
        index = Path(scratch) / "index"
        script = (
            # a directory that held no file is no tree in the commit: nothing to restore
            f'[ "$(g cat-file -t {tree} 2>/dev/null)" = commit ] || [ "$(g cat-file -t {tree} 2>/dev/null)" = tree ] '
            "|| { echo 0; exit 0; }\n"
            f"g read-tree {tree} || exit 11\n"
            f"g checkout-index -a --prefix={shlex.quote(str(target))}/ || exit 12\n"
            "g ls-files | wc -l\n"
        )
        code, out = _git(point.git_dir, script, {"GIT_INDEX_FILE": str(index)}, scratch)
    if code != 0:
        raise OSError(f"git could not restore {point.commit[:12]} from {point.git_dir}: {_last(out)}")
    return int(out.split()[-1]) if out.split() and out.split()[-1].isdigit() else 0


def file_at(git_dir: Path, commit: str, path: str, limit: int) -> bytes | None:
    """A file's bytes at a commit, or None when it is not a file there or is larger than `limit`."""
    spec = shlex.quote(f"{commit}:{path}")
    with tempfile.TemporaryDirectory(prefix="hearth-file-") as scratch:
        copy = Path(scratch) / "blob"
        script = (
            f'[ "$(g cat-file -t {spec})" = blob ] && [ "$(g cat-file -s {spec})" -le {limit} ] || exit 9\n'
            f"g cat-file blob {spec} > {shlex.quote(str(copy))}\n"
        )
        code, _ = _git(git_dir, script, {}, scratch)
        return copy.read_bytes() if code == 0 and copy.is_file() else None


def _git(git_dir: Path, body: str, env: dict[str, str], cwd: str) -> tuple[int, str]:
    """A script with `g` = git over hearth's own history (its config only, no sandbox needed)."""
    exports = {**ISOLATION, "GIT_OPTIONAL_LOCKS": "0", "GIT_DIR": str(git_dir), **env}
    head = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in exports.items())
    flags = shlex.join(gitsafe.flags((f"safe.directory={git_dir}",)))
    policy = SandboxPolicy(kind="none", home=cwd, tmp=cwd)
    try:
        result = run_sandboxed(f'{head}g() {{ git {flags} "$@"; }}\n{body}', cwd, policy=policy, timeout_s=TIMEOUT_S)
    except SandboxUnavailable as exc:
        return 1, f"no way to run git ({exc})"
    return (1, f"git timed out after {TIMEOUT_S}s") if result.timed_out else (result.exit_code or 0, result.output)


def _empty_throughout(rows: list[dict[str, Any]]) -> bool:
    """Began empty ("nothing to commit yet") and ended unchanged with nothing committed; a swarm's
    `seed` row is both ends at once. A run cut off before its after checkpoint is not known empty."""
    before = [r for r in rows if r.get("phase") in ("before", "seed")]
    after = [r for r in rows if r.get("phase") in ("after", "seed")]
    return bool(before and after) and all(r.get("status") == "unchanged" for r in rows)


def _inside(path: Path, histories: Path) -> bool:
    try:
        return path.resolve().parent == histories.resolve()
    except OSError:
        return False


def _last(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(no output)"
