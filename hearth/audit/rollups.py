"""A period of the audit as the report counts it, read from m200's rollups and one day's runs.

The rollups (hearth/audit/migrations/rollups.py, m200) keep per day what the runs and their tool calls add
up to, maintained by triggers as the rows are written. A period starts at `since` (a time stamp,
or nothing for everything): the whole days after since's own day are their rollup rows, and the
part of that first day (its edge) is read from the runs themselves, once, through the started_at
index. So a period is exact at its edge and costs its days' rows plus one day of runs at most,
however many runs the audit holds. (Hours instead of days would make the edge smaller and a busy
audit's rollups up to 24 times larger: measured with bench/web.py, days cost less.)
"""

from __future__ import annotations

from datetime import date, timedelta

# the runs of since's own day from `since` on (none when the period is everything); `{r}` is an alias
EDGE = ":since != '' and {r}started_at >= :since and {r}started_at < :until"


def period(since: str | None) -> dict[str, str]:
    """The parameters of a period from `since` (a stamp as the stores write it, or None: everything):
    rollup days from `from_day` on, and the edge's runs from `since` until `until`."""
    if not since:
        return {"since": "", "from_day": "", "until": ""}
    try:
        after = (date.fromisoformat(since[:10]) + timedelta(days=1)).isoformat()
    except ValueError:  # not a stamp: no whole day is known, so every run from since on is the edge
        return {"since": since, "from_day": "\uffff", "until": "\uffff"}
    return {"since": since, "from_day": after, "until": after}
