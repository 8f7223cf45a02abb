"""A swarm's children from the outside: their seeded workspaces, waiting for them, what they did.

seed(parent, child)       copy the swarm's files into a child's new workspace: links stay
                          links (never followed), special files and `.git` are left out
wait_for_children(...)    until every child has ended: its run has a final status and its
                          request has left claimed/ (it is placed only after the run's last
                          checkpoint), or the queue rejected it; or the swarm's time is up
collect(...)              each child's summary, the files it changed and its diff, written
                          under the swarm's `.hearth/swarm/<child>/` (changes.diff, files/)
synthesis_preface(...)    what the synthesis run is told before the goal
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from agent.safety.workspace import PathRefused, Workspace
from agent.tools.spill import SPILL_DIR
from hearth.audit.store import AuditStore
from hearth.queue import Queue
from hearth.run.diffs import checkpoint_range, history_of, workspace_diff
from hearth.settings import Settings

SWARM_DIR = ".hearth/swarm"
LEFT_OUT = (".git", ".tmp", SPILL_DIR)  # at the top of the workspace; and .hearth/swarm
POLL_S = 0.25
FILE_LIMIT = 1 << 20  # a changed file larger than this is in the diff only
LISTED = 60
_CHANGED = re.compile(r"^diff --git a/(.+?) b/(.+)$", re.M)


@dataclass
class Child:
    id: str
    goal: str
    status: str | None = None  # None: not ended yet
    summary: str = ""
    error: str = ""
    changed: list[str] = field(default_factory=list)


def listing(root: Path) -> str:
    """The top of the workspace, for the planner: names only, at most LISTED."""
    names = sorted(n for n in os.listdir(root) if n not in LEFT_OUT and n != ".hearth")
    shown = "\n".join(f"- {n}" for n in names[:LISTED]) or "(empty)"
    return shown + (f"\n- ... and {len(names) - LISTED} more" if len(names) > LISTED else "")


def seed(parent: Path, child: Path) -> None:
    """Fill a child's new, empty workspace with a copy of the parent's files (OSError if it cannot)."""

    def left_out(directory: str, names: list[str]) -> set[str]:
        skip = set(LEFT_OUT) if directory == str(parent) else set()
        if directory == str(parent / ".hearth"):
            skip.add("swarm")
        for name in names:  # a fifo or a device would block or mean nothing in a copy
            mode = os.lstat(os.path.join(directory, name)).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
                skip.add(name)
        return skip

    shutil.copytree(parent, child, symlinks=True, ignore=left_out, dirs_exist_ok=True)


def wait_for_children(children: list[Child], settings: Settings, audit: AuditStore, *, limit_s: float) -> None:
    """Block until each child has ended; one still going after `limit_s` is reported as such."""
    deadline = time.monotonic() + limit_s
    pending = [c for c in children if c.status is None]
    claimed = Queue(settings.queue_dir).claimed
    while pending:
        for child in pending:
            if not (claimed / f"{child.id}.json").exists():
                _look(audit, child)
        pending = [c for c in pending if c.status is None]
        if pending and time.monotonic() >= deadline:
            for child in pending:
                child.status, child.error = "unfinished", "still not ended when the swarm stopped waiting"
            return
        if pending:
            time.sleep(POLL_S)


def _look(audit: AuditStore, child: Child) -> None:
    run = audit.run(child.id)
    if run is not None and run["status"] != "running":
        child.status, child.summary, child.error = run["status"], run["summary"] or "", run["error"] or ""
        return
    refused = audit.rows("select reason from rejections where request_id = ? limit 1", [child.id])
    if refused:
        child.status, child.error = "rejected", f"the queue refused it: {refused[0]['reason']}"


def collect(children: list[Child], settings: Settings, audit: AuditStore, root: Path) -> None:
    """Each child's changes into the swarm's workspace, under .hearth/swarm/<child>/."""
    with Workspace(root) as ws:
        for child in children:
            run = audit.run(child.id)
            points = audit.checkpoints(child.id) if run else []
            span = checkpoint_range(points)
            if run is None or span is None:
                continue
            diff = workspace_diff(settings, run["workspace"] or "", *span, git_dir=history_of(points))
            child.changed = sorted({b for _, b in _CHANGED.findall(diff)})
            ws.write_bytes(f"{SWARM_DIR}/{child.id}/changes.diff", diff.encode())
            _copy_changed(Path(run["workspace"]), ws, child)


def _copy_changed(source: Path, ws: Workspace, child: Child) -> None:
    """The changed files as the child left them (read through its workspace's containment)."""
    with Workspace(source) as theirs:
        for path in child.changed:
            try:
                data, cut = theirs.read_bytes(path, limit=FILE_LIMIT)
            except (OSError, PathRefused):
                continue  # deleted, or not a plain file inside it: the diff says what happened
            if not cut:
                ws.write_bytes(f"{SWARM_DIR}/{child.id}/files/{path}", data)


def synthesis_preface(swarm_id: str, children: list[Child]) -> str:
    parts = [
        f"## Swarm {swarm_id}: the results of its {len(children)} children\n"
        f"The goal below was split into {len(children)} sub-goals, each worked on by its own agent in its own "
        f"copy of this workspace. Each child's diff is in {SWARM_DIR}/<child>/changes.diff and the files it "
        f"changed, as it left them, are under {SWARM_DIR}/<child>/files/. Merge into this workspace what "
        "should be merged (a child that did not finish may have left partial or wrong work), then answer "
        "with a summary of the whole."
    ]
    for n, child in enumerate(children, 1):
        said = f"Summary: {child.summary}" if child.summary else f"Error: {child.error or '(none recorded)'}"
        files = ", ".join(child.changed) or "none"
        parts.append(
            f"### Child {n}: {child.id} ({child.status})\nSub-goal: {child.goal}\n{said}\nChanged files: {files}"
        )
    return "\n\n".join(parts)
