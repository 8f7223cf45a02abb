"""The stores' clock: UTC time stamps with milliseconds and a Z, text that sorts as time does.

One home for the format, so the audit, the knowledge base, approvals, the queue and live state
agree, and no module imports a store just for a time stamp.
"""

from __future__ import annotations

from datetime import UTC, datetime


def stamp(moment: datetime) -> str:
    """`moment` in the stores' format (UTC, milliseconds, a Z)."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def utc_now() -> str:
    return stamp(datetime.now(UTC))
