"""Where an eval case's fixture may come from: a directory under the evals directory, once links
are resolved, with no link in it leading out, holding nothing of hearth's state or credentials.

The suite checks it when it is read (hearth/eval/suite.py), and the run's start again, with the
settings, when it copies the fixture in (hearth/eval/seed.py): a run's commands read what is copied.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hearth.settings import Settings


def fixture_problem(source: Path, evals: Path, settings: Settings | None = None) -> str | None:
    """Why a case may not start from `source` (None: it may): outside the evals directory once
    resolved, a link in it leading out, or (with the settings) overlapping hearth's state or
    credentials: the state directory inside it, or it inside the state directory while the evals
    directory is not (an evals directory an operator keeps in the state directory is theirs)."""
    real, home = Path(os.path.realpath(source)), Path(os.path.realpath(evals))
    if not real.is_relative_to(home):
        return f"the case's workspace {source} is not under the evals directory {evals} (links resolved)"
    if real.is_dir():
        out = _link_out(real)
        if out is not None:
            return f"the case's workspace {source} holds a link leading out of it ({out}); copy the files in instead"
    if settings is None:
        return None
    state = Path(os.path.realpath(settings.state_dir))
    secrets = [Path(os.path.realpath(d)) for d in (settings.credentials_dir,) if d is not None]
    inside_state = real.is_relative_to(state) and not home.is_relative_to(state)
    if state.is_relative_to(real) or inside_state or any(_overlap(real, d) for d in secrets):
        return f"the case's workspace {source} overlaps hearth's state or credentials; nothing of them is copied into a run"
    return None


def _link_out(real: Path) -> Path | None:
    """The first link under `real` whose target resolves outside it."""
    for folder, dirs, files in os.walk(real):
        for name in dirs + files:
            path = Path(folder) / name
            if path.is_symlink() and not Path(os.path.realpath(path)).is_relative_to(real):
                return path.relative_to(real)
    return None


def _overlap(one: Path, other: Path) -> bool:
    return one.is_relative_to(other) or other.is_relative_to(one)
