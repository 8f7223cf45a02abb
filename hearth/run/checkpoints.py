"""Workspace checkpoints: a run's workspace is a git repository, committed before and after the run.

Which repository, decided per workspace (`repository_kind`):
- `own`: the workspace has its own `.git` directory: hearth commits there, on the branch that is
  checked out.
- `linked`: the workspace's `.git` is a file (a git worktree or a submodule) whose repository
  lies outside the workspace, where the sandbox cannot write: no checkpoints (`hearth evolve`
  works in such a worktree and commits its proposal itself).
- `none`: no `.git` in the workspace or above it: hearth runs `git init` there (branch `main`).
- `parent`: the workspace is a subdirectory of another repository: no checkpoints. hearth never
  commits to a repository whose root is not the workspace and never nests a new one inside a
  directory the user chose; the run records why (point --workspace at the repository root).
  A fresh per-run workspace that hearth made itself is its own: it gets `git init` even when the
  state directory lies inside some repository (as `make demo`'s ./.hearth does).

Before the run: a commit if the tree is dirty, tagged hearth/RUN/before. After: a commit if
anything changed, tagged hearth/RUN/OUTCOME (done, failed, ...); when the agent committed its own
work and left the tree clean, its last commit gets the tag. Nothing is ever rolled back; `hearth
show RUN` lists the checkpoints and how to compare them.

Every git command runs inside the run's command sandbox, because the repository is the agent's to
write: a `.git/config` it planted (hooks, fsmonitor, clean filters) can only act inside the
sandbox (with HEARTH_SANDBOX=none, the operator's explicit unsafe choice, git runs bare like
every command). git sees hearth's own identity (GIT_AUTHOR_*, GIT_COMMITTER_*) and never the machine's
config (GIT_CONFIG_GLOBAL=/dev/null, GIT_CONFIG_NOSYSTEM=1); -c flags turn off hooks, fsmonitor,
signing and auto-gc, and GIT_CEILING_DIRECTORIES keeps git from walking up to a parent repository.
Never committed: the Landlock sandbox's `.tmp/`, hearth's spilled outputs, and hearth's state
directory when it lies inside the workspace.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

from agent.safety.sandbox import SandboxPolicy, SandboxUnavailable, run_sandboxed
from agent.tools.spill import SPILL_DIR
from hearth.audit.store import AuditStore
from hearth.run.recorder import Recorder

IDENTITY = {
    "GIT_AUTHOR_NAME": "hearth",
    "GIT_AUTHOR_EMAIL": "hearth@localhost",
    "GIT_COMMITTER_NAME": "hearth",
    "GIT_COMMITTER_EMAIL": "hearth@localhost",
}
ISOLATION = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"}
FLAGS = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "init.defaultBranch=main",
    "core.quotePath=false",
)
TIMEOUT_S = 120
# Each phase is one sandboxed script (a sandbox start costs ~10 ms): before the run, the commit
# and the state the prompt shows; after it, the commit, and only when a tool that writes ran.
# Exit codes 10/11/12 name the step that failed; `@name value` lines carry the results.
COMMIT_SCRIPT = """\
g add -A -- {pathspec} || exit 11
n=$(g diff --cached --name-only -z | tr -cd '\\000' | wc -c)
if [ "$n" -gt 0 ]; then
  g commit -q --no-verify -m "$HEARTH_MESSAGE" || exit 12
  g tag "$HEARTH_TAG" HEAD || echo "@tagfail"
fi
echo "@files $n"
echo "@head $(g rev-parse --verify -q HEAD)"
"""
STATE_SCRIPT = """\
b=$(g symbolic-ref --short -q HEAD) || b=detached
s=$(g rev-parse --short --verify -q HEAD) || s=none
st=$(g status --porcelain --untracked-files=all -- {pathspec}) || exit 13
echo "@branch $b"
echo "@sha $s"
if [ -n "$st" ]; then echo "@dirty yes"; else echo "@dirty no"; fi
"""


@dataclass
class Checkpoint:
    phase: str  # before | after
    status: str  # committed | tagged | unchanged | skipped | failed
    commit: str | None = None
    tag: str | None = None
    files: int = 0
    detail: str = ""

    def describe(self) -> str:
        where = f" {self.commit[:12]}" if self.commit else ""
        tag = f" tagged {self.tag}" if self.tag else ""
        files = f" ({self.files} files)" if self.files else ""
        extra = f": {self.detail}" if self.detail else ""
        return f"checkpoint {self.phase} the run: {self.status}{where}{tag}{files}{extra}"


def repository_kind(root: Path) -> tuple[str, Path | None]:
    """('own' | 'linked' | 'none' | 'parent', the repository root or None)."""
    if os.path.lexists(root / ".git"):
        return ("own" if (root / ".git").is_dir() and not (root / ".git").is_symlink() else "linked"), root
    for directory in root.parents:
        if os.path.lexists(directory / ".git"):
            return "parent", directory
    return "none", None


def tag_name(run_id: str, label: str) -> str:
    """hearth/RUN/LABEL, with anything git would refuse in a ref name replaced by '-'."""
    parts = [re.sub(r"[^A-Za-z0-9_-]+", "-", part).strip("-") or "x" for part in (run_id, label)]
    return "hearth/" + "/".join(parts)


class Checkpoints:
    def __init__(
        self, root: Path, run_id: str, policy: SandboxPolicy, *, exclude: tuple[str, ...] = (), fresh: bool = False
    ) -> None:
        self.root = root
        self.run_id = run_id
        self.policy = SandboxPolicy(kind=policy.kind, network=False, hide=policy.hide)
        self.kind, self.repo = repository_kind(root)
        if fresh and self.kind == "parent":
            self.kind, self.repo = "none", None  # hearth made this directory for this run: it is its own
        self.pathspec = [".", *(f":(exclude,top){p}" for p in (".tmp", SPILL_DIR, *exclude))]
        self.base: str | None = None
        self._state: dict[str, str] | None = None  # what before() saw, so git_state() needs no second call

    def before(self, *, agent_name: str, model: str, goal: str) -> Checkpoint:
        skipped = self._skip_reason()
        if skipped:
            return Checkpoint("before", "skipped", detail=skipped)
        if self.kind == "none" and _empty(self.root):
            # A new, empty directory (a fresh per-run workspace): git would find nothing to commit,
            # and its state is known. `git init` waits until a tool that writes has run.
            self._state = {"gitBranch": "main", "gitHeadShortSha": "none", "gitDirty": "no"}
            return Checkpoint("before", "unchanged", detail="nothing to commit yet")
        message = f"hearth: checkpoint before run {self.run_id}\n\n{self._trailers(agent_name, model, goal)}"
        point = self._commit("before", message, tag_name(self.run_id, "before"), init=self.kind == "none", state=True)
        if point.status != "failed":
            self.kind, self.repo = "own", self.root
        self.base = point.commit
        return point

    def after(
        self, *, outcome: str, summary: str, agent_name: str, model: str, goal: str, changed: bool = True
    ) -> Checkpoint:
        """The checkpoint after the run; `changed=False` (no tool that can write ran) costs no git call."""
        skipped = self._skip_reason()
        if skipped:
            return Checkpoint("after", "skipped", detail=skipped)
        if not changed:
            return Checkpoint("after", "unchanged", self.base, detail="no tool that can change the workspace ran")
        body = f"{summary.strip()[:1500]}\n\n" if summary.strip() else ""
        message = (
            f"hearth: run {self.run_id} {outcome}\n\n{body}{self._trailers(agent_name, model, goal)}\n"
            f"Hearth-Outcome: {outcome}"
        )
        tag = tag_name(self.run_id, outcome)
        point = self._commit("after", message, tag, init=self.kind == "none")
        if point.status == "unchanged" and point.commit and point.commit != self.base:
            code, out = self._script(
                'g tag "$HEARTH_TAG" "$HEARTH_HEAD"', {"HEARTH_TAG": tag, "HEARTH_HEAD": point.commit}
            )
            detail = "the agent committed its own changes" if code == 0 else f"git tag failed: {_last_line(out)}"
            return Checkpoint("after", "tagged", point.commit, tag if code == 0 else None, detail=detail)
        return point

    def git_state(self) -> dict[str, str]:
        """Branch, short HEAD and dirtiness for the prompt's placeholders (empty outside git)."""
        if self._state is not None:
            return self._state
        if self.kind == "none" or self._skip_reason(parent_ok=True):
            return {}
        code, out = self._script(
            STATE_SCRIPT.format(pathspec=shlex.join(self.pathspec)), {}, ceiling=self.kind == "own"
        )
        fields = _fields(out)
        if code != 0 or not {"branch", "sha", "dirty"} <= set(fields):
            return {}  # git cannot look here: every value takes its fallback
        return {"gitBranch": fields["branch"], "gitHeadShortSha": fields["sha"], "gitDirty": fields["dirty"]}

    def _trailers(self, agent_name: str, model: str, goal: str) -> str:
        first = " ".join(goal.split())[:200]
        return f"Hearth-Run: {self.run_id}\nHearth-Agent: {agent_name}\nHearth-Model: {model}\nHearth-Goal: {first}"

    def _skip_reason(self, parent_ok: bool = False) -> str:
        if shutil.which("git") is None:
            return "git is not installed"
        if self.kind == "parent" and not parent_ok:
            return (
                f"the workspace is inside the git repository at {self.repo}; hearth commits only to a "
                "repository rooted at the workspace (point --workspace at the repository root)"
            )
        if self.kind == "linked" and not parent_ok:
            return (
                "the workspace's .git is a file (a worktree or submodule) whose repository lies outside "
                "it, where the sandbox cannot write"
            )
        return ""

    def _commit(self, phase: str, message: str, tag: str, *, init: bool = False, state: bool = False) -> Checkpoint:
        """Stage everything, commit and tag if anything is staged (and, with `state`, read the state the
        prompt's placeholders show): one sandboxed script."""
        pathspec = shlex.join(self.pathspec)
        body = ("g init -q || exit 10\n" if init else "") + COMMIT_SCRIPT.format(pathspec=pathspec)
        code, out = self._script(
            body + (STATE_SCRIPT.format(pathspec=pathspec) if state else ""),
            {"HEARTH_MESSAGE": message, "HEARTH_TAG": tag},
        )
        fields = _fields(out)
        if state and code == 0 and {"branch", "sha", "dirty"} <= set(fields):
            self._state = {"gitBranch": fields["branch"], "gitHeadShortSha": fields["sha"], "gitDirty": fields["dirty"]}
        if code not in (0, 13):  # 13: the commit is made, only its state could not be read
            step = {10: "git init", 11: "git add", 12: "git commit"}.get(code, "git")
            return Checkpoint(phase, "failed", detail=f"{step} failed: {_last_line(out)}")
        head, files = fields.get("head") or None, int(fields.get("files", "0"))
        if files == 0:
            return Checkpoint(phase, "unchanged", head, detail="" if head else "nothing to commit yet")
        tagged = "tagfail" not in fields
        return Checkpoint(
            phase,
            "committed",
            head,
            tag if tagged else None,
            files,
            "" if tagged else f"git tag failed: {_last_line(out)}",
        )

    def _script(self, body: str, env: dict[str, str], *, ceiling: bool = True) -> tuple[int, str]:
        """Run a shell script with `g` = hearth's git, in the sandbox: (exit code, merged output)."""
        env = {**IDENTITY, **ISOLATION, "GIT_OPTIONAL_LOCKS": "0", **env}
        if ceiling:
            env["GIT_CEILING_DIRECTORIES"] = str(self.root.parent)
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())
        flags = " ".join(f"-c {shlex.quote(flag)}" for flag in (*FLAGS, f"safe.directory={self.root}"))
        script = f'{exports}g() {{ git {flags} "$@"; }}\n{body}'
        try:
            result = run_sandboxed(script, self.root, policy=self.policy, timeout_s=TIMEOUT_S, output_limit=64_000)
        except SandboxUnavailable as exc:
            return 1, f"no sandbox to run git in ({exc})"
        if result.timed_out:
            return 1, f"git timed out after {TIMEOUT_S}s"
        return result.exit_code or 0, result.output


def record_checkpoint(audit: AuditStore, recorder: Recorder, root: Path, point: Checkpoint) -> None:
    """Into the audit's checkpoints table, and in front of the operator unless nothing happened."""
    audit.record_checkpoint(
        recorder.run_id,
        phase=point.phase,
        status=point.status,
        commit_sha=point.commit,
        tag=point.tag,
        files=point.files,
        detail=point.detail or None,
        workspace=str(root),
    )
    if point.status != "unchanged":
        recorder.notice("checkpoint", point.describe(), step=False)


def state_inside(state_dir: Path, root: Path) -> tuple[str, ...]:
    """hearth's state directory as a workspace path when the workspace holds it: never committed."""
    state = state_dir.resolve()
    return (str(state.relative_to(root)),) if state != root and state.is_relative_to(root) else ()


def _empty(directory: Path) -> bool:
    with os.scandir(directory) as entries:
        return next(entries, None) is None


def _fields(output: str) -> dict[str, str]:
    """The `@name value` lines a script printed (git's own messages are anything else)."""
    return {
        line[1:].partition(" ")[0]: line[1:].partition(" ")[2].strip()
        for line in output.splitlines()
        if line.startswith("@")
    }


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("@")]
    return lines[-1][:300] if lines else "(no output)"
