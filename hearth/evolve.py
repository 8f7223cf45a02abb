"""Self-evolution: an agent proposes a change to hearth's own NixOS configuration; a person applies it.

`hearth evolve "GOAL"` (and a queue request with `evolve: true`, through `run_evolve_request`):

1. a scratch `git worktree` of the config repository on a new branch `hearth/proposal-<run id>`,
   at the run's own workspace (`<state>/agents/<run id>`);
2. one run with the self tools only (no write_file or run_command: nothing may rewrite the
   worktree's `.git` pointer), its workspace and config repository being that worktree;
3. whatever the run changed is committed on the branch (git hooks off);
4. `nix flake check --no-build`, offline, on the committed result;
5. the proposal (branch, base, diff, check log, whether it touches hearth's own security
   settings) is recorded in the audit (`proposals`), and the scratch worktree is removed.

It succeeds only when the check passes. hearth never runs nixos-rebuild or switches anything, and
the live checkout's files, index and HEAD are never touched: only a branch is added to it.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from agent.clock import utc_now
from agent.model.reply import ChatModel
from agent.safety.selfconfig import GitFailed, NixCheck, git, is_git_repo, nix_flake_check
from agent.safety.widening import diff_findings
from hearth.audit import proposals as proposal_rows
from hearth.audit.store import AuditStore, cap, new_run_id
from hearth.errors import UsageError
from hearth.run.goal import GoalRequest
from hearth.run.runner import run_goal
from hearth.run.workdir import fresh_run_dir
from hearth.settings import Settings

SELF_TOOLS = [
    "current_generation",
    "list_generations",
    "system_health",
    "read_self_config",
    "write_self_config",
    "git_status",
    "git_diff",
    "nix_check",
]
DIFF_CAP = 200_000
AUTHOR = ["-c", "user.name=hearth", "-c", "user.email=hearth@localhost"]


@dataclass
class Proposal:
    id: str
    goal: str
    repo: str
    branch: str
    base_commit: str
    status: str = "running"  # proposed | check_failed | no_changes | run_failed
    run_status: str = ""
    head_commit: str = ""
    check_passed: bool = False
    check_log: str = ""
    diff: str = ""
    diffstat: str = ""
    security_flag: bool = False
    security_reasons: list[str] = field(default_factory=list)
    created_at: str = ""

    @property
    def succeeded(self) -> bool:
        return self.status == "proposed"


def security_findings(diff: str) -> list[str]:
    """Why a diff touches hearth's own security settings (changed lines and file names only)."""
    return diff_findings(diff)


def config_repo(explicit: Path | None = None) -> Path:
    """The live config checkout: the argument, else HEARTH_CONFIG_REPO; a UsageError if unusable."""
    raw = explicit or os.environ.get("HEARTH_CONFIG_REPO")
    if not raw:
        raise UsageError(
            "no config repository: pass --repo PATH or set HEARTH_CONFIG_REPO (services.hearth.configRepo)"
        )
    repo = Path(raw).resolve()
    if not is_git_repo(repo):
        raise UsageError(f"config repository {repo} is not a git checkout")
    return repo


def run_evolve_request(
    request: GoalRequest, settings: Settings, *, repo: Path | None = None, model: ChatModel | None = None
) -> Proposal:
    """Propose a change for `request.goal`; the queue calls this for a request with `evolve: true`."""
    live = config_repo(repo or request.config_repo)
    run_id = request.run_id or new_run_id()
    scratch = settings.agents_dir / run_id
    proposal = Proposal(
        id=run_id,
        goal=request.goal,
        repo=str(live),
        branch=f"hearth/proposal-{run_id}",
        base_commit=_git(live, "rev-parse", "HEAD").strip(),
        created_at=utc_now(),
    )
    settings.writable_state_dir()
    _add_worktree(live, scratch, proposal)
    try:
        run = replace(
            request,
            run_id=run_id,
            workspace=scratch,
            config_repo=scratch,
            allowed_tools=SELF_TOOLS,
            source=request.source if request.source != "cli" else "evolve",
        )
        _, outcome = run_goal(run, settings, model=model)
        proposal.run_status = outcome.status
        _conclude(proposal, scratch, settings)
    finally:
        _remove_worktree(live, scratch, keep_branch=proposal.status not in ("no_changes", "running"))
    record_proposal(settings, proposal)
    return proposal


def _git(repo: Path, *args: str) -> str:
    try:
        return git(repo, *args)
    except GitFailed as exc:
        raise UsageError(f"config repository {repo}: {exc}") from None


def _add_worktree(live: Path, scratch: Path, proposal: Proposal) -> None:
    fresh_run_dir(scratch.parent, scratch.name)  # new, never reused, never through a symlink
    _git(live, "worktree", "add", "--quiet", "-b", proposal.branch, str(scratch), proposal.base_commit)


def _conclude(proposal: Proposal, scratch: Path, settings: Settings) -> None:
    _git(scratch, "add", "--all")
    if not _git(scratch, "status", "--porcelain").strip():
        proposal.status = "no_changes"
        return
    _git(
        scratch,
        *AUTHOR,
        "commit",
        "--quiet",
        "--no-verify",
        "-m",
        f"hearth proposal: {proposal.goal[:60]}\n\n{proposal.goal}",
    )
    proposal.head_commit = _git(scratch, "rev-parse", "HEAD").strip()
    proposal.diff = _git(scratch, "diff", "--no-ext-diff", "--no-textconv", proposal.base_commit, "HEAD")
    proposal.diffstat = _git(scratch, "diff", "--stat", proposal.base_commit, "HEAD").strip()
    proposal.security_reasons = security_findings(proposal.diff)
    proposal.security_flag = bool(proposal.security_reasons)
    check: NixCheck = nix_flake_check(scratch)
    proposal.check_passed = check.passed
    proposal.check_log = f"{check.summary()}\n{check.log}".rstrip()
    if proposal.run_status != "done":
        proposal.status = "run_failed"
    else:
        proposal.status = "proposed" if check.passed else "check_failed"


def _remove_worktree(live: Path, scratch: Path, *, keep_branch: bool) -> None:
    branch = None
    if not keep_branch and scratch.exists():
        branch = git(scratch, "rev-parse", "--abbrev-ref", "HEAD", check=False).strip()
    git(live, "worktree", "remove", "--force", str(scratch), check=False)
    git(live, "worktree", "prune", check=False)
    if branch and branch.startswith("hearth/proposal-"):
        git(live, "branch", "-D", branch, check=False)


# --- the audit ---------------------------------------------------------------------------------

_BOOL_FIELDS = ("check_passed", "security_flag")


def record_proposal(settings: Settings, proposal: Proposal) -> None:
    row = asdict(proposal)
    row["diff"] = cap(row["diff"], DIFF_CAP)
    row["security_reasons"] = json.dumps(row["security_reasons"])
    for name in _BOOL_FIELDS:
        row[name] = int(row[name])
    with AuditStore(settings.audit_path) as audit:
        proposal_rows.save(audit, row)


def _from_row(row: dict[str, object]) -> Proposal:
    values = dict(row)
    values["security_reasons"] = json.loads(str(values.get("security_reasons") or "[]"))
    for name in _BOOL_FIELDS:
        values[name] = bool(values[name])
    return Proposal(**values)  # type: ignore[arg-type]


def proposals(settings: Settings, limit: int = 20) -> list[Proposal]:
    with AuditStore(settings.audit_path) as audit:
        return [_from_row(row) for row in proposal_rows.latest(audit, limit)]


def find_proposal(settings: Settings, prefix: str) -> Proposal | None:
    with AuditStore(settings.audit_path) as audit:
        row = proposal_rows.find(audit, prefix)
    return _from_row(row) if row else None
