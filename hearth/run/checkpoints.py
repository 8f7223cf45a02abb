"""Workspace checkpoints: a run's work committed before and after it, by a git that runs nothing planted.

Where the history lives, decided per workspace (`repository_kind`):
- `none`: no `.git` in the workspace or above it (a fresh per-run workspace, or a plain directory
  given with --workspace): the history lives in a git directory hearth owns, outside the
  workspace, `<state>/checkpoints/<key>.git` (branch `main`), with a config hearth wrote. The
  workspace is only its work tree: nothing the agent writes there (a `.git/config`, hooks, a
  `.gitattributes` naming filters) is read as config or run by hearth's git, which therefore
  needs no sandbox (and costs no bwrap start).
- `own`: the workspace is a user's repository (its own `.git` directory): hearth commits there,
  on the branch that is checked out, inside the run's command sandbox, with every
  program-running setting neutralised (agent/safety/gitsafe.py: hooks, fsmonitor, filters,
  textconv, pager, editor, ssh command, credential helpers, gpg). It does not commit when the
  repository's config includes other files, defines clean/smudge filters or points elsewhere
  (commondir), and refuses the after-commit when the config changed during the run; each is
  recorded with why.
- `linked`: the workspace's `.git` is a file (a git worktree or a submodule) whose repository
  lies outside the workspace: no checkpoints (`hearth evolve` commits its proposal itself).
- `parent`: the workspace is a subdirectory of another repository: no checkpoints. hearth never
  commits to a repository whose root is not the workspace; the run records why. A directory that
  hearth made itself (a fresh run's, or the marathon's or swarm's its legs, synthesis and seed
  reuse: `made`) is its own (`none`) even inside some repository (as `make demo`'s and the
  README's ./.hearth are).

Before the run: a commit if the tree is dirty, tagged hearth/RUN/before. After: a commit if
anything changed, tagged hearth/RUN/OUTCOME (done, failed, ...); when the agent committed its own
work and left the tree clean, its last commit gets the tag. Nothing is ever rolled back; `hearth
show RUN` lists the checkpoints and how to compare them. git sees hearth's identity and never
the machine's config (GIT_CONFIG_GLOBAL=/dev/null, GIT_CONFIG_NOSYSTEM=1). Never committed: a
Landlock sandbox's `.tmp/`, hearth's spilled outputs, and hearth's state directory when it lies
inside the workspace.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from agent.safety.sandbox import SandboxPolicy, SandboxUnavailable, run_sandboxed
from agent.tools.spill import SPILL_DIR
from hearth.run.events import CheckpointKept, RunRecorder
from hearth.run.recorder import Recorder

if TYPE_CHECKING:  # gitsafe is loaded where git is about to run: a run that changes nothing never loads it
    from agent.safety import gitsafe

IDENTITY = {
    "GIT_AUTHOR_NAME": "hearth",
    "GIT_AUTHOR_EMAIL": "hearth@localhost",
    "GIT_COMMITTER_NAME": "hearth",
    "GIT_COMMITTER_EMAIL": "hearth@localhost",
}
ISOLATION = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"}
# hearth's own checkpoint git directories: written once, read by nobody but hearth
HEARTH_CONFIG = """\
[core]
\trepositoryformatversion = 0
\tbare = false
\thooksPath = /dev/null
\tfsmonitor = false
\tuntrackedCache = false
\tautocrlf = false
\tquotePath = false
[gc]
\tauto = 0
[maintenance]
\tauto = false
[commit]
\tgpgSign = false
[tag]
\tgpgSign = false
"""
TIMEOUT_S = 120
# Each phase is one script (in a user's repository a sandbox start costs ~15 ms): before the run,
# the commit and the state the prompt shows; after it, the commit, and only when a tool that writes ran.
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
    status: str  # committed | tagged | unchanged | skipped | refused | failed
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
    """The two checkpoints of one run; ``history`` is where hearth keeps the git directories it owns
    (`<state>/checkpoints`); without one, a workspace without git gets no checkpoints."""

    def __init__(
        self,
        root: Path,
        run_id: str,
        policy: SandboxPolicy,
        *,
        exclude: tuple[str, ...] = (),
        fresh: bool = False,
        made: bool = False,
        history: Path | None = None,
    ) -> None:
        self.root = root
        self.run_id = run_id
        self.policy = SandboxPolicy(kind=policy.kind, hide=policy.hide, expose=policy.expose)
        self.kind, self.repo = repository_kind(root)
        if (fresh or made) and self.kind == "parent":
            self.kind, self.repo = "none", None  # hearth made this directory: it is its own
        self.history = history
        self.git_dir: Path | None = root / ".git" if self.kind == "own" else None
        if self.kind == "none" and history is not None:
            self.git_dir = history / (f"{_safe(run_id)}.git" if fresh else _workspace_key(root))
        self.pathspec = [".", *(f":(exclude,top){p}" for p in (".tmp", SPILL_DIR, *exclude))]
        self.base: str | None = None
        self.config: gitsafe.RepoConfig | None = None  # a user's repository's config, as before() saw it
        self._state: dict[str, str] | None = None  # what before() saw, so git_state() needs no second call

    @property
    def owned(self) -> bool:
        """The history is in hearth's own git directory (the workspace is only its work tree)."""
        return self.kind == "none"

    @property
    def history_dir(self) -> str | None:
        """hearth's git directory of this workspace's history, for the audit (None: the repository's own)."""
        return str(self.git_dir) if self.owned and self.git_dir is not None else None

    def before(self, *, agent_name: str, model: str, goal: str) -> Checkpoint:
        skipped = self._skip_reason()
        if skipped:
            return Checkpoint("before", "skipped", detail=skipped)
        if self.owned and not self._initialised() and _empty(self.root):
            # A new, empty directory (a fresh per-run workspace): git would find nothing to commit,
            # and its state is known. The history is made once a tool that writes has run.
            self._state = {"gitBranch": "main", "gitHeadShortSha": "none", "gitDirty": "no"}
            return Checkpoint("before", "unchanged", detail="nothing to commit yet")
        message = f"hearth: checkpoint before run {self.run_id}\n\n{self._trailers(agent_name, model, goal)}"
        point = self._commit("before", message, tag_name(self.run_id, "before"), state=True)
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
        from agent.safety import gitsafe

        if self.kind == "own" and self.config is not None and gitsafe.inspect(self.root / ".git") != self.config:
            return Checkpoint(
                "after",
                "refused",
                detail="the repository's git config changed during the run (.git/config); hearth does not "
                "run git with a config it did not see before the run: review it, then commit yourself",
            )
        body = f"{summary.strip()[:1500]}\n\n" if summary.strip() else ""
        message = (
            f"hearth: run {self.run_id} {outcome}\n\n{body}{self._trailers(agent_name, model, goal)}\n"
            f"Hearth-Outcome: {outcome}"
        )
        tag = tag_name(self.run_id, outcome)
        point = self._commit("after", message, tag)
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
        if (self.owned and not self._initialised()) or self._skip_reason(parent_ok=True):
            return {}
        if self.kind in ("parent", "linked"):  # read for the prompt only
            self.git_dir = (self.repo or self.root) / ".git"
        code, out = self._script(STATE_SCRIPT.format(pathspec=shlex.join(self.pathspec)), {})
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
        if self.owned and self.git_dir is None:
            return "no directory for hearth's checkpoint histories was given"
        if self.kind == "own":
            from agent.safety import gitsafe

            self.config = self.config or gitsafe.inspect(self.root / ".git")
            if self.config.problems:
                return f"hearth does not commit to this repository: {self.config.problems[0]}"
        return ""

    def _initialised(self) -> bool:
        return self.git_dir is not None and (self.git_dir / "HEAD").exists()

    def _commit(self, phase: str, message: str, tag: str, *, state: bool = False) -> Checkpoint:
        """Stage everything, commit and tag if anything is staged (and, with `state`, read the state the
        prompt's placeholders show): one script."""
        if self.owned and not self._initialised():
            failure = self._init_history()
            if failure:
                return Checkpoint(phase, "failed", detail=f"git init failed: {failure}")
        pathspec = shlex.join(self.pathspec)
        code, out = self._script(
            COMMIT_SCRIPT.format(pathspec=pathspec) + (STATE_SCRIPT.format(pathspec=pathspec) if state else ""),
            {"HEARTH_MESSAGE": message, "HEARTH_TAG": tag},
        )
        fields = _fields(out)
        if state and code == 0 and {"branch", "sha", "dirty"} <= set(fields):
            self._state = {"gitBranch": fields["branch"], "gitHeadShortSha": fields["sha"], "gitDirty": fields["dirty"]}
        if code not in (0, 13):  # 13: the commit is made, only its state could not be read
            step = {11: "git add", 12: "git commit"}.get(code, "git")
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

    def _init_history(self) -> str:
        """hearth's git directory for this workspace, with hearth's config; '' or why not."""
        assert self.git_dir is not None
        try:
            self.git_dir.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            return str(exc)
        init = '(unset GIT_WORK_TREE; git -c init.defaultBranch=main init -q --bare --template= "$GIT_DIR") && printf %s "$HEARTH_CONFIG" > "$GIT_DIR/config"'
        code, out = self._script(init, {"HEARTH_CONFIG": HEARTH_CONFIG})
        return "" if code == 0 else _last_line(out)

    def _script(self, body: str, env: dict[str, str]) -> tuple[int, str]:
        """Run a shell script with `g` = hearth's git: (exit code, merged output).

        hearth's own history: no sandbox (git reads only hearth's config and runs nothing the
        workspace names). A user's repository, or a parent's for the prompt: the run's command
        sandbox, every program-running setting neutralised, no parent repository found by walking up.
        """
        from agent.safety import gitsafe

        assert self.git_dir is not None
        env = {**IDENTITY, **ISOLATION, "GIT_DIR": str(self.git_dir), **env}
        extra: tuple[str, ...] = ()
        if self.owned:
            policy = SandboxPolicy(kind="none", home=str(self.git_dir.parent), tmp=str(self.git_dir.parent))
            env["GIT_WORK_TREE"] = str(self.root)
        else:
            top = self.repo or self.root  # a parent repository is read (for the prompt) from its root
            seen = (str(top),) if top != self.root else _linked_git_data(self.git_dir)
            policy = replace(self.policy, expose=(*self.policy.expose, *seen))
            env |= {"GIT_WORK_TREE": str(top), "GIT_OPTIONAL_LOCKS": "0", "GIT_CEILING_DIRECTORIES": str(top.parent)}
            self.config = self.config or gitsafe.inspect(self.git_dir)
            extra = gitsafe.driver_flags(self.config.drivers)
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())
        flags = shlex.join(gitsafe.flags((*extra, f"safe.directory={self.root}", f"safe.directory={self.git_dir}")))
        script = f'{exports}g() {{ git {flags} "$@"; }}\n{body}'
        try:
            result = run_sandboxed(script, self.root, policy=policy, timeout_s=TIMEOUT_S, output_limit=64_000)
        except SandboxUnavailable as exc:
            return 1, f"no sandbox to run git in ({exc})"
        if result.timed_out:
            return 1, f"git timed out after {TIMEOUT_S}s"
        return result.exit_code or 0, result.output


def record_checkpoint(recorder: Recorder, root: Path, point: Checkpoint, git_dir: str | None = None) -> None:
    """Into the run's record (the audit's checkpoints table), and in front of the operator unless nothing happened."""
    keep_checkpoint(recorder.sink, recorder.run_id, root, point, git_dir)
    if point.status != "unchanged":
        recorder.notice("checkpoint", point.describe(), step=False)


def keep_checkpoint(sink: RunRecorder, run_id: str, root: Path, point: Checkpoint, git_dir: str | None) -> None:
    """The checkpoint's row (what `hearth show` lists and a follow-up restores from)."""
    sink.record(
        CheckpointKept(
            run_id,
            phase=point.phase,
            status=point.status,
            commit_sha=point.commit,
            tag=point.tag,
            files=point.files,
            detail=point.detail or None,
            workspace=str(root),
            git_dir=git_dir,
        )
    )


def made_by_hearth(root: Path, agents_dir: Path) -> bool:
    """Whether `root` is a run directory hearth made (`<state>/agents/<id>`), fresh or reused by
    long work, rather than one the operator named."""
    try:
        return root.resolve().parent == agents_dir.resolve()
    except OSError:
        return False


def state_inside(state_dir: Path, root: Path) -> tuple[str, ...]:
    """hearth's state directory as a workspace path when the workspace holds it: never committed."""
    state = state_dir.resolve()
    return (str(state.relative_to(root)),) if state != root and state.is_relative_to(root) else ()


def _linked_git_data(dot_git: Path) -> tuple[str, ...]:
    """A worktree's git data outside it (its gitdir and the common dir), to be read in the sandbox."""
    if not dot_git.is_file():
        return ()
    line = dot_git.read_text(errors="replace").strip()
    if not line.startswith("gitdir:"):
        return ()
    gitdir = (dot_git.parent / line[len("gitdir:") :].strip()).resolve()
    common = gitdir / "commondir"
    shared = (gitdir / common.read_text().strip()).resolve() if common.is_file() else gitdir
    return tuple(str(p) for p in {gitdir, shared} if p.exists())


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name)[:80] or "x"


def _workspace_key(root: Path) -> str:
    """A directory given with --workspace keeps one history across runs, named after it."""
    digest = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:12]
    return f"{_safe(root.name)}-{digest}.git"


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
