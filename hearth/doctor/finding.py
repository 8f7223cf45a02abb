"""A finding of `hearth doctor`: which check, ok/info/warn/error, one line saying what and what to do.

Its own room because every group of checks (files.py, config.py, host.py) returns these and the
command counts and prints them: the record they all share is a leaf that imports nothing of theirs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

STATUSES = ("ok", "info", "warn", "error")


@dataclass(frozen=True)
class Finding:
    check: str
    status: str  # ok | info | warn | error
    message: str
    path: str | None = None

    def as_dict(self) -> dict[str, str | None]:
        return asdict(self)


def summary_counts(findings: Iterable[Finding]) -> dict[str, int]:
    counts = dict.fromkeys(STATUSES, 0)
    for finding in findings:
        counts[finding.status] += 1
    return counts
