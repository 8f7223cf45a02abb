"""Missions' schedules: the common subset of systemd's OnCalendar (systemd.time(7)), in local time.

A NixOS timer reads the same text itself; `hearth watch` (hosts without systemd) and `hearth
missions` (the next run) use this parser, so what is not understood here is refused with a
reason rather than guessed:

    minutely hourly daily weekly monthly quarterly semiannually yearly annually
    [WEEKDAYS] [[YEAR-]MONTH-DAY] [HOUR:MINUTE[:SECOND]]
        each part: *  N  N,M  A..B  X/STEP  (*/STEP)   weekdays: Mon,Wed  Mon..Fri
    e.g.  *-*-* 06:00:00   Mon..Fri 09:30   *-*-1,15 12:00   *:0/15   Sat,Sun 10:00

Refused: time zones (`... UTC`), the last days of a month (`~`), fractions of seconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from hearth.errors import HearthError

SHORTHANDS = {
    "minutely": "*-*-* *:*:00",
    "hourly": "*-*-* *:00:00",
    "daily": "*-*-* 00:00:00",
    "weekly": "Mon *-*-* 00:00:00",
    "monthly": "*-*-01 00:00:00",
    "quarterly": "*-01,04,07,10-01 00:00:00",
    "semiannually": "*-01,07-01 00:00:00",
    "yearly": "*-01-01 00:00:00",
    "annually": "*-01-01 00:00:00",
}
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
FULL_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
SEARCH_DAYS = 366 * 8  # far enough for any expression that can elapse (Feb 29 on a weekday)


class CalendarError(HearthError, ValueError):
    """An expression this parser does not read; str() is the one-line reason."""


@dataclass(frozen=True)
class Calendar:
    text: str
    weekdays: frozenset[int]
    years: frozenset[int] | None  # None: every year
    months: frozenset[int]
    days: frozenset[int]
    hours: tuple[int, ...]
    minutes: tuple[int, ...]
    seconds: tuple[int, ...]

    def next_after(self, moment: datetime) -> datetime | None:
        """The first elapse strictly after `moment` (naive: local time; aware: in its zone)."""
        start = moment.replace(microsecond=0) + timedelta(seconds=1)
        day = start.date()
        for _ in range(SEARCH_DAYS):
            if self._day_matches(day):
                at = self._first_time(day, start if day == start.date() else None)
                if at is not None:
                    return at.replace(tzinfo=moment.tzinfo)
            day += timedelta(days=1)
        return None

    def _day_matches(self, day: date) -> bool:
        return (
            day.weekday() in self.weekdays
            and day.month in self.months
            and day.day in self.days
            and (self.years is None or day.year in self.years)
        )

    def _first_time(self, day: date, start: datetime | None) -> datetime | None:
        floor = (start.hour, start.minute, start.second) if start else (0, 0, 0)
        for h in self.hours:
            if h < floor[0]:
                continue
            for m in self.minutes:
                if (h, m) < floor[:2]:
                    continue
                for s in self.seconds:
                    if (h, m, s) >= floor:
                        return datetime(day.year, day.month, day.day, h, m, s)
        return None


def parse_calendar(text: str) -> Calendar:
    """The expression as a Calendar; CalendarError says what is not understood."""
    raw = " ".join(text.split())
    expanded = SHORTHANDS.get(raw.lower(), raw)
    if not expanded:
        raise CalendarError("the schedule is empty; use e.g. daily or *-*-* 06:00:00")
    if "~" in expanded:
        raise CalendarError(f"{text!r}: the last days of a month (~) are not supported here")
    parts = expanded.split(" ")
    weekdays = frozenset(range(7))
    if parts and re.match(r"[A-Za-z]", parts[0]):
        weekdays = _weekdays(parts.pop(0), text)
    date_part = parts.pop(0) if parts and "-" in parts[0] and ":" not in parts[0] else "*-*-*"
    time_part = parts.pop(0) if parts and ":" in parts[0] else "00:00:00"
    if parts:
        raise CalendarError(f"{text!r}: {parts[0]!r} is not understood here (time zones are not supported)")
    years, months, days = _date(date_part, text)
    hours, minutes, seconds = _time(time_part, text)
    return Calendar(raw, weekdays, years, months, days, hours, minutes, seconds)


def _weekdays(token: str, text: str) -> frozenset[int]:
    found: set[int] = set()
    for item in token.split(","):
        ends = item.split("..")
        if len(ends) > 2:
            raise CalendarError(f"{text!r}: {item!r} is not a weekday or a range of them")
        first, last = (_day(e, text) for e in (ends[0], ends[-1]))
        found |= set(range(first, last + 1)) if first <= last else set(range(first, 7)) | set(range(last + 1))
    return frozenset(found)


def _day(name: str, text: str) -> int:
    low = name.lower()
    if low in DAYS:
        return DAYS.index(low)
    if low in FULL_DAYS:
        return FULL_DAYS.index(low)
    raise CalendarError(f"{text!r}: {name!r} is not a weekday (Mon, Tue, ... Sun)")


def _date(part: str, text: str) -> tuple[frozenset[int] | None, frozenset[int], frozenset[int]]:
    pieces = part.split("-")
    if len(pieces) == 2:
        pieces = ["*", *pieces]
    if len(pieces) != 3:
        raise CalendarError(f"{text!r}: the date {part!r} is not YEAR-MONTH-DAY or MONTH-DAY")
    years = None if pieces[0] == "*" else frozenset(_values(pieces[0], 1970, 2199, "year", text))
    return years, frozenset(_values(pieces[1], 1, 12, "month", text)), frozenset(_values(pieces[2], 1, 31, "day", text))


def _time(part: str, text: str) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    pieces = part.split(":")
    if len(pieces) == 2:
        pieces.append("00")
    if len(pieces) != 3:
        raise CalendarError(f"{text!r}: the time {part!r} is not HOUR:MINUTE or HOUR:MINUTE:SECOND")
    if "." in pieces[2]:
        raise CalendarError(f"{text!r}: fractions of a second are not supported here")
    h, m, s = (
        _values(p, 0, top, what, text) for p, top, what in zip(pieces, (23, 59, 59), ("hour", "minute", "second"))
    )
    return h, m, s


def _values(spec: str, low: int, high: int, what: str, text: str) -> tuple[int, ...]:
    """`*`, `N`, `A..B`, `X/STEP`, `*/STEP`, comma lists of those -> the sorted values."""
    found: set[int] = set()
    for item in spec.split(","):
        base, _, step_text = item.partition("/")
        step = _number(step_text, what, text) if step_text else 1
        if step < 1:
            raise CalendarError(f"{text!r}: the {what} step must be at least 1")
        if base == "*":
            first, last = low, high
        elif ".." in base:
            a, b = base.split("..", 1)
            first, last = _number(a, what, text), _number(b, what, text)
        else:
            first = _number(base, what, text)
            last = high if step_text else first
        if not (low <= first <= high and low <= last <= high and first <= last):
            raise CalendarError(f"{text!r}: {item!r} is not a {what} from {low} to {high}")
        found |= set(range(first, last + 1, step))
    return tuple(sorted(found))


def _number(token: str, what: str, text: str) -> int:
    if not token.isdigit():
        raise CalendarError(f"{text!r}: {token!r} is not a {what} this parser reads")
    return int(token)
