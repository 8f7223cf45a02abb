"""What a marathon checks between legs besides the judge: the deliverable, and whether a leg changed anything.

`check_deliverable`: the files the request names must exist in the workspace (looked up through
the workspace's own containment: no `..`, no symlink out) and its command must exit 0, run like
the agent's commands in the command sandbox (no network, hearth's state hidden, a time limit).

`leg_changed`: the leg's after-checkpoint (hearth/run/checkpoints.py, as the marathon heard it
recorded) says whether it changed anything: a commit after the run is a change, `unchanged` is none. Where git cannot checkpoint
the workspace (no git, or inside another repository) a fingerprint of the tree (paths, sizes,
modification times) taken before the leg is compared instead.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from agent.safety.sandbox import SandboxPolicy, SandboxUnavailable, run_sandboxed
from agent.safety.workspace import PathRefused, Workspace
from agent.tools.spill import SPILL_DIR
from hearth.queue.longspec import Deliverable
from hearth.settings import Settings

CHECK_TIMEOUT_S = 300
SKIPPED = (".git", ".tmp", SPILL_DIR)
MAX_ENTRIES = 50_000  # a tree larger than this is taken as changed rather than walked for minutes


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    detail: str


def check_deliverable(check: Deliverable, root: Path, settings: Settings) -> CheckResult:
    problems = []
    missing = _missing(check.files, root)
    if missing:
        problems.append(f"missing: {', '.join(missing)}")
    if check.command:
        failed = _command_fails(check.command, root, settings)
        if failed:
            problems.append(failed)
    if problems:
        return CheckResult(False, "; ".join(problems))
    return CheckResult(True, "the deliverable is there" + (" and its command exits 0" if check.command else ""))


def _missing(files: list[str], root: Path) -> list[str]:
    with Workspace(root) as ws:
        found = []
        for path in files:
            try:
                found.append(ws.stat(path) is None)
            except (OSError, ValueError, PathRefused):  # refused (outside, through a link) or unreadable: not there
                found.append(True)
    return [path for path, gone in zip(files, found, strict=True) if gone]


def _command_fails(command: str, root: Path, settings: Settings) -> str:
    """Why the check command did not pass, or "" when it exited 0."""
    policy = SandboxPolicy(kind=settings.sandbox, network=False, hide=(str(settings.state_dir),))
    try:
        result = run_sandboxed(command, root, policy=policy, timeout_s=CHECK_TIMEOUT_S, output_limit=4_000)
    except SandboxUnavailable as exc:
        return f"no sandbox to run the check command in: {exc}"
    if result.timed_out:
        return f"the check command timed out after {CHECK_TIMEOUT_S}s"
    if result.exit_code == 0:
        return ""
    tail = " | ".join(result.output.strip().splitlines()[-3:]) or "no output"
    return f"the check command exited {result.exit_code}: {tail[:500]}"


def leg_changed(status: str | None, before: str | None, root: Path) -> bool:
    """Whether the leg changed the workspace, by its after-checkpoint's status, else by the tree's fingerprint."""
    if status in ("committed", "tagged"):
        return True
    if status == "unchanged":
        return False
    return before is None or fingerprint(root) != before


def fingerprint(root: Path) -> str | None:
    """A digest of the tree's paths, sizes and times (None: too large to tell, taken as changed)."""
    digest = hashlib.sha256()
    seen = 0
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not (directory == str(root) and d in SKIPPED))
        for name in sorted(files):
            seen += 1
            if seen > MAX_ENTRIES:
                return None
            try:
                info = os.lstat(os.path.join(directory, name))
            except OSError:
                continue
            digest.update(f"{directory}/{name}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()
