"""A run's workspace diff between its checkpoints: for the run page, the swarm's synthesis and proposals.

git runs as the checkpoints run it (hearth/run/checkpoints.py says why): in hearth's own history
directory (`git_dir`, hearth's config) with no sandbox; in a user's repository, which the agent
could write, inside the command sandbox with every program-running setting neutralised
(agent/safety/gitsafe.py). Never with the machine's config. The diff is shown as text; its size
is capped.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

from agent.safety import gitsafe
from agent.safety.sandbox import SandboxPolicy, SandboxUnavailable, run_sandboxed
from hearth.run.checkpoints import ISOLATION
from hearth.settings import Settings

DIFF_LIMIT = 200_000
_SHA = re.compile(r"^[0-9a-f]{7,64}$")


def checkpoint_range(checkpoints: list[dict[str, Any]]) -> tuple[str | None, str] | None:
    """The commits to compare: the first and last checkpoint's, or (None, after) when the run
    began from nothing committed (its diff is then what the after commit itself changed)."""
    shas = [row["commit_sha"] for row in checkpoints if row.get("commit_sha") and _SHA.match(row["commit_sha"])]
    if len(set(shas)) > 1:
        return shas[0], shas[-1]
    after = [r for r in checkpoints if r.get("phase") == "after" and r.get("status") == "committed"]
    return (None, shas[-1]) if shas and after else None


def history_of(checkpoints: list[dict[str, Any]]) -> str | None:
    """hearth's own git directory of the run's checkpoints, when they live there."""
    return next((row["git_dir"] for row in checkpoints if row.get("git_dir")), None)


def workspace_diff(
    settings: Settings, workspace: str, before: str | None, after: str, git_dir: str | None = None
) -> str:
    """`git diff before after` of the workspace as text, or one line saying why there is none.
    With `git_dir` (hearth's own history) the workspace itself is not needed: a run that cannot
    see it (another hearth-agent@ unit's) reads the diff from the history alone."""
    root = Path(workspace)
    data = Path(git_dir) if git_dir else root / ".git"
    if not data.is_dir():
        return f"(no diff: the workspace {workspace} is gone or has no repository)"
    drivers = () if git_dir else gitsafe.driver_flags(gitsafe.inspect(data).drivers)
    flags = shlex.join(gitsafe.flags((*drivers, f"safe.directory={root}", f"safe.directory={data}")))
    exports = {**ISOLATION, "GIT_OPTIONAL_LOCKS": "0", "GIT_DIR": str(data)}
    if not git_dir:
        exports["GIT_WORK_TREE"] = str(root)
    env = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in exports.items())
    what = f"diff {before} {after}" if before else f"show --format= {after}"
    script = f"{env}exec git {flags} {what} --no-ext-diff --no-textconv --no-color --"
    if git_dir:  # hearth's own history: nothing in it is the agent's to configure
        policy, where = SandboxPolicy(kind="none", home=str(data), tmp=str(data.parent)), data
    else:
        policy, where = SandboxPolicy(kind=settings.sandbox, hide=(str(settings.state_dir),)), root
    try:
        result = run_sandboxed(script, where, policy=policy, timeout_s=30, output_limit=DIFF_LIMIT)
    except SandboxUnavailable as exc:
        return f"(no diff: no sandbox to run git in: {exc})"
    if result.exit_code != 0:
        return f"(no diff: git said: {result.output.strip().splitlines()[-1] if result.output.strip() else 'nothing'})"
    return result.output + ("\n[... cut at 200 000 characters]" if result.truncated else "")


def diff_lines(diff: str) -> list[tuple[str, str]]:
    """Each line with its kind (add, del, hunk, file, ctx), for colouring; the text stays text."""
    kinds = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---", "diff --git", "index ")):
            kinds.append(("file", line))
        elif line.startswith("@@"):
            kinds.append(("hunk", line))
        elif line.startswith("+"):
            kinds.append(("add", line))
        elif line.startswith("-"):
            kinds.append(("del", line))
        else:
            kinds.append(("ctx", line))
    return kinds
