"""An eval's matrix as the CLI and the command center read it: its finished runs scored first."""

from __future__ import annotations

from hearth.audit.evals import eval_row, eval_rows, results_of
from hearth.audit.store import AuditStore
from hearth.errors import NotFound
from hearth.eval.results import Matrix, matrix
from hearth.eval.watch import score
from hearth.settings import Settings


def find_eval(settings: Settings, eval_id: str = "", suite: str = "") -> str:
    """The eval named, else the latest (of `suite`); NotFound when there is none."""
    settings.writable_state_dir()
    if eval_id:
        return eval_id
    with AuditStore(settings.audit_path) as audit:
        latest = eval_rows(audit, suite or None, limit=1)
    if not latest:
        where = f" of suite {suite}" if suite else ""
        raise NotFound(f"no eval{where} yet; `hearth eval run SUITE --model M` starts one")
    return str(latest[0]["id"])


def load_matrix(settings: Settings, eval_id: str = "", suite: str = "", *, scoring: bool = True) -> Matrix:
    """The matrix of the eval (scoring what finished since it was last read, unless `scoring` is off)."""
    found = find_eval(settings, eval_id, suite)
    with AuditStore(settings.audit_path) as audit:
        eval_row(audit, found)  # NotFound before any scoring
    if scoring:
        score(settings, found)
    with AuditStore(settings.audit_path) as audit:
        return matrix(eval_row(audit, found), results_of(audit, found))
