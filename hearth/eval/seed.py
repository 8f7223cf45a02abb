"""An eval case's start: its fresh workspace filled before the run begins (admission calls `seed_eval`).

A case starts from a directory (copied in, links kept as links, never followed) or from a recorded
run's `before` checkpoint, restored from hearth's own history as a follow-up's is
(hearth/run/history.py). What was restored is the run's `restore` step; a start that cannot be
made refuses the run, with the reason, as a follow-up that cannot be restored is refused.

A directory is checked again here, whatever the suite said when it was read (hearth/eval/fixture.py):
it is under the evals directory once resolved, no link in it leads out of it, and it holds nothing
of hearth's state or credentials (a run's commands could read what is copied in).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from hearth.audit.evals import item_of
from hearth.audit.store import AuditStore
from hearth.errors import UsageError
from hearth.eval.fixture import fixture_problem
from hearth.run.history import NoHistory, Point, restore, source_of
from hearth.settings import Settings


def seed_eval(audit: AuditStore, run_id: str, root: Path, settings: Settings) -> str | None:
    """Fill `root` with the start of the eval case run `run_id` runs; what was done, or None when
    the run is no eval's (or its case starts empty). UsageError when the start cannot be made."""
    found = item_of(audit, run_id)
    if found is None:
        return None
    start = json.loads(found["start"] or "{}")
    try:
        if start.get("run"):
            return _from_run(audit, start["run"], root, settings.checkpoints_dir)
        if start.get("directory"):
            return _from_directory(Path(start["directory"]), root, settings)
    except (NoHistory, OSError) as exc:
        raise UsageError(f"cannot make the start of eval case {found['case_name']}: {exc}") from None
    return None


def _from_run(audit: AuditStore, earlier: str, root: Path, histories: Path) -> str:
    """The earlier run's `before` checkpoint: the workspace as that run found it."""
    rows = [r for r in audit.checkpoints(earlier) if r.get("phase") in ("before", "seed")]
    if not rows:
        raise NoHistory(f"run {earlier} has no before checkpoint (is it a run of this box?)")
    if rows[-1].get("status") == "skipped":
        raise NoHistory(f"run {earlier} made no before checkpoint: {rows[-1].get('detail') or 'skipped'}")
    # a fresh workspace is empty before its run: no commit then, and nothing to restore
    point: Point | None = source_of(earlier, rows, histories) if any(r.get("commit_sha") for r in rows) else None
    if point is None:
        return f"run {earlier}'s workspace was empty before it ran: the case starts empty"
    count = restore(point, root)
    return f"restored run {earlier}'s before checkpoint {point.commit[:12]} ({count} files) into {root}"


def _from_directory(source: Path, root: Path, settings: Settings) -> str:
    if not source.is_dir():
        raise OSError(f"the case's workspace {source} is not a directory")
    problem = fixture_problem(source, settings.config_dir / "evals", settings)
    if problem:
        raise OSError(problem)
    shutil.copytree(source, root, symlinks=True, dirs_exist_ok=True)
    count = sum(1 for p in root.rglob("*") if p.is_file())
    return f"copied {source} ({count} files) into {root}"
