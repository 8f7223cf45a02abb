"""What a new run's workspace starts with, before its first model call: a swarm's child gets the
swarm's files, a delegated child nothing or the directory its caller named, a follow-up the last
checkpoint of the run it continues, an eval case's run its case's workspace, a chat's run the
files sent with its goal. Each is recorded as a `restore` step; one that cannot be made is recorded
`rejected` and raises (admission, hearth/run/admission.py, calls them).
"""

from __future__ import annotations

from pathlib import Path

from hearth.audit.store import AuditStore
from hearth.errors import UsageError
from hearth.run.events import RunFinished, RunRecorder, StepRecorded
from hearth.run.goal import RunPlan
from hearth.settings import Settings


def seed_swarm_child(
    audit: AuditStore, sink: RunRecorder, plan: RunPlan, root: Path, run_id: str, settings: Settings
) -> None:
    """A swarm's child starts in its own new directory holding the swarm's files, restored from
    the checkpoint the swarm made of them before queuing its children (hearth/run/history.py)."""
    from hearth.run.history import NoHistory, restore, source_of

    swarm = audit.run(plan.parent_run)
    if swarm is not None and swarm.get("kind") != "swarm":
        seed_delegated_child(audit, sink, plan, root, run_id)
        return
    if swarm is None:
        return  # its parent is not recorded: an empty workspace, as any fresh run
    try:
        point = source_of(swarm["id"], audit.checkpoints(swarm["id"]), settings.checkpoints_dir)
        count = restore(point, root)
    except (NoHistory, OSError) as exc:
        sink.record(
            RunFinished(run_id, "rejected", {"error": f"cannot seed the swarm's files: {exc}", "iterations": 0})
        )
        raise UsageError(f"cannot seed the swarm's files into {root}: {exc}") from None
    where = (
        f"checkpoint {point.commit[:12]} of swarm {swarm['id']}" if point else f"swarm {swarm['id']} (it had no files)"
    )
    seeded = {"iteration": 0, "detail": f"seeded {count} files from {where}", "ok": 1}
    sink.record(StepRecorded(run_id, "restore", seeded))


def seed_delegated_child(audit: AuditStore, sink: RunRecorder, plan: RunPlan, root: Path, run_id: str) -> None:
    """A delegated child starts empty, or with a copy of the directory its caller named, restored
    from the `seed` checkpoint the caller made of its files (hearth/run/delegate.py)."""
    from hearth.run.delegate import child_record
    from hearth.run.history import Point, restore

    record = child_record(audit, plan.parent_run, run_id)
    seed, directory = record.get("seed") or {}, str(record.get("directory") or "")
    if not directory:
        return
    point = Point(Path(seed.get("git_dir") or ""), str(seed.get("commit"))) if seed.get("commit") else None
    try:
        count = restore(point, root, directory)
    except OSError as exc:
        sink.record(RunFinished(run_id, "rejected", {"error": f"cannot copy {directory}: {exc}", "iterations": 0}))
        raise UsageError(f"cannot copy {directory} of run {plan.parent_run} into {root}: {exc}") from None
    detail = f"copied {count} files of {directory} from run {plan.parent_run}'s workspace"
    sink.record(StepRecorded(run_id, "restore", {"iteration": 0, "detail": detail, "ok": 1}))


def seed_eval_case(audit: AuditStore, sink: RunRecorder, run_id: str, root: Path, settings: Settings) -> None:
    """An eval case's run starts from its case's workspace (hearth/eval/seed.py), else is refused."""
    from hearth.eval.seed import seed_eval

    try:
        detail = seed_eval(audit, run_id, root, settings)
    except UsageError as exc:
        sink.record(RunFinished(run_id, "rejected", {"error": str(exc), "iterations": 0}))
        raise
    if detail:
        sink.record(StepRecorded(run_id, "restore", {"iteration": 0, "detail": detail, "ok": 1}))


def restore_follow_up(sink: RunRecorder, source: tuple[str, ...], root: Path, run_id: str) -> None:
    """A follow-up's fresh directory filled from the last checkpoint of the run it continues."""
    from hearth.run.history import Point, restore

    earlier, git_dir, commit = source
    point = Point(Path(git_dir), commit) if commit else None
    try:
        count = restore(point, root)
    except OSError as exc:
        sink.record(RunFinished(run_id, "rejected", {"error": str(exc), "iterations": 0}))
        raise UsageError(f"cannot restore run {earlier}'s workspace into {root}: {exc}") from None
    what = f"checkpoint {commit[:12]} ({count} files)" if point else "nothing (its workspace was empty)"
    detail = (
        f"restored run {earlier}'s workspace from {what} into {root}; run {earlier}'s own directory is left as it was"
    )
    restored = {"iteration": 0, "detail": detail, "arguments": {"run": earlier, "commit": commit, "git_dir": git_dir}}
    sink.record(StepRecorded(run_id, "restore", {**restored, "ok": 1}))


def take_attachments(sink: RunRecorder, settings: Settings, run_id: str, root: Path) -> None:
    """The files a chat sent with this run's goal, into its workspace's attachments/
    (hearth/channels/inbox.py); one that cannot be moved is recorded, and the run goes on without it."""
    from hearth.channels.inbox import take

    try:
        moved = take(settings.state_dir, run_id, root)
    except OSError as exc:
        detail = {"detail": f"could not take the chat's attachments into the workspace: {exc}", "ok": 0}
        sink.record(StepRecorded(run_id, "restore", {"iteration": 0, **detail}))
        return
    if moved:
        detail = {"detail": f"took {len(moved)} attachments into the workspace: {', '.join(moved)}", "ok": 1}
        sink.record(StepRecorded(run_id, "restore", {"iteration": 0, **detail}))
