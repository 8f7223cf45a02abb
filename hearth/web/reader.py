"""The audit as the command center reads it: hearth/audit/reader.py's read-only connection, each
read one of the owner modules' (hearth/audit/). Writes go through the appliance's own functions
(decisions.decide, dispatch.stop).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hearth.audit import approvals, requests, runs, steps, walls
from hearth.audit.reader import AuditReader
from hearth.audit.runs import COUNT_CAP, FILTERS, PAGE_SIZE, RunFilter

__all__ = ["COUNT_CAP", "PAGE_SIZE", "Reader", "RunFilter"]

# Runs linking to each other (follow-ups, swarms): a name for each direction on the run page.
LINK_COLUMNS: dict[str, str] = {"parent": "parent_run"}
CHOICES_TTL_S = 10.0


class Reader(AuditReader):
    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._choices: tuple[float, dict[str, list[str]]] | None = None

    # -- runs ------------------------------------------------------------------------------------
    def runs_page(self, where: RunFilter, page: int = 1) -> tuple[list[dict[str, Any]], int]:
        """One page of runs, newest first, and how many match in all."""
        return runs.page(self, where, page)

    def recent(self, limit: int = 10) -> list[dict[str, Any]]:
        return runs.recent(self, limit)

    def run(self, run_id: str) -> dict[str, Any] | None:
        return runs.row(self, run_id)

    def steps(self, run_id: str, cap: int | None = None) -> list[dict[str, Any]]:
        """A run's steps; with `cap`, each long text cut to that many characters, beside its length."""
        return steps.capped(self, run_id, cap)

    def step(self, run_id: str, seq: int) -> dict[str, Any] | None:
        return steps.step(self, run_id, seq)

    def checkpoints(self, run_id: str) -> list[dict[str, Any]]:
        return walls.checkpoints_of(self, run_id)

    def request_body(self, run_id: str) -> str | None:
        row = requests.request_row(self, run_id)
        return row["body"] if row else None

    def links(self, run: dict[str, Any]) -> dict[str, list[str]]:
        """Runs this one is linked to: its parent, and the runs made from it."""
        found: dict[str, list[str]] = {}
        for name, column in LINK_COLUMNS.items():
            found[name] = [run[column]] if run.get(column) else []
            found[f"{name} of"] = runs.made_from(self, run["id"])
        return found

    def choices(self) -> dict[str, list[str]]:
        """The values each filter can take, for the runs page's selects; looked up at most every
        CHOICES_TTL_S (four scans of the runs table are most of a page's time on a big audit)."""
        now = time.monotonic()
        if self._choices is None or now - self._choices[0] > CHOICES_TTL_S:
            self._choices = (now, {name: runs.choices(self, name) for name in FILTERS})
        return self._choices[1]

    def today(self, now: datetime | None = None) -> dict[str, int]:
        """Runs started today (UTC) and their tokens."""
        return runs.started_since(self, (now or datetime.now(UTC)).strftime("%Y-%m-%dT00:00:00"))

    # -- approvals -------------------------------------------------------------------------------
    def pending_approvals(self, now: str) -> list[dict[str, Any]]:
        return approvals.pending_with_goal(self, now)

    def recent_decisions(self, limit: int = 30) -> list[dict[str, Any]]:
        return approvals.recent_decisions(self, limit)

    def approvals_of(self, run_id: str) -> list[dict[str, Any]]:
        return approvals.of_run(self, run_id)
