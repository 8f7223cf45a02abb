"""A swarm's children from the outside: their seed, waiting for them, what they did.

A hearth-agent@ unit sees only its own workspace (nix/units.nix), so no run reads another's
directory: the files go both ways through hearth's checkpoint history (hearth/run/history.py).

checkpoint_seed(...)      the swarm's files committed (a `seed` checkpoint) before any child is
                          queued; each child's admission restores it into its new directory
wait_for_children(...)    until every child has ended: its run has a final status and its
                          request has left claimed/ (it is placed only after the run's last
                          checkpoint), or the queue rejected it; or the swarm's time is up
collect(...)              each child's summary, the files it changed and its diff, read from its
                          checkpoints (before and after) and written under the swarm's
                          `.hearth/swarm/<child>/` (changes.diff, files/)
synthesis_preface(...)    what the synthesis run is told before the goal
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from agent.safety.sandbox import SandboxPolicy
from agent.safety.workspace import Workspace
from agent.tools.spill import SPILL_DIR
from hearth.audit import requests
from hearth.audit.store import AuditStore
from hearth.queue.directory import Queue
from hearth.run.checkpoints import Checkpoints, keep_checkpoint, made_by_hearth, state_inside
from hearth.run.diffs import checkpoint_range, history_of, workspace_diff
from hearth.run.events import RunRecorder
from hearth.run.goal import RunPlan
from hearth.run.history import file_at
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


def checkpoint_seed(root: Path, swarm_id: str, settings: Settings, sink: RunRecorder, goal: RunPlan) -> str:
    """Commit the swarm's files for its children to start from; '' or why it could not."""
    sandbox = SandboxPolicy(kind=settings.sandbox, hide=(str(settings.state_dir),))
    exclude = (*state_inside(settings.state_dir, root), SWARM_DIR)
    made = made_by_hearth(root, settings.agents_dir)
    points = Checkpoints(root, swarm_id, sandbox, exclude=exclude, made=made, history=settings.checkpoints_dir)
    point = points.before(agent_name=goal.agent_name, model=goal.model, goal=goal.goal)
    keep_checkpoint(sink, swarm_id, root, replace(point, phase="seed"), points.history_dir)
    if point.status in ("committed", "unchanged") and (point.commit or not os.listdir(root)):
        return ""
    return f"the swarm's files could not be checkpointed for its children: {point.status} {point.detail}".strip()


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
    refused = requests.refusal_of(audit, child.id)
    if refused is not None:
        child.status, child.error = "rejected", f"the queue refused it: {refused}"


def collect(children: list[Child], settings: Settings, audit: AuditStore, root: Path) -> None:
    """Each child's changes into the swarm's workspace, under .hearth/swarm/<child>/, from its history."""
    with Workspace(root) as ws:
        for child in children:
            points = audit.checkpoints(child.id)
            span, git_dir = checkpoint_range(points), history_of(points)
            if span is None or git_dir is None:
                continue
            diff = workspace_diff(settings, "", *span, git_dir=git_dir)
            child.changed = sorted({b for _, b in _CHANGED.findall(diff)})
            ws.write_bytes(f"{SWARM_DIR}/{child.id}/changes.diff", diff.encode())
            for path in child.changed:  # as the child left them; a deleted one is in the diff only
                data = file_at(Path(git_dir), span[1], path, FILE_LIMIT)
                if data is not None:
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
