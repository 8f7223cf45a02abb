"""Rendering for the CLI: plain tables for people, JSON for programs; untrusted text escaped in both
(agent/safety/display.py: control characters shown visibly, never sent to the terminal raw).

Times: the stores keep UTC ISO 8601 (`2026-01-31T09:00:00.000Z`) and `--json` prints them as kept;
a table shows them as a person reads them (`3 min ago`, `in 4 min`, else the local date and time),
and `duration_ms` as `850 ms`, `12.3 s`, `4 min 5 s`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

from agent.safety.display import json_safe, visible, visible_line

__all__ = [
    "JSON_HELP",
    "ago",
    "duration",
    "json_line",
    "local_time",
    "print_json",
    "table",
    "time_left",
    "visible",
    "visible_line",
]

# The one help line of every command's --json (cli.py fills it in where a command gives none).
JSON_HELP = "print JSON for programs instead of text (times as UTC ISO 8601, as the audit keeps them)"
JSON_EVENTS_HELP = "print events as JSON lines, one object per line, nothing else on stdout"


def print_json(data: Any, out: TextIO | None = None) -> None:
    """`out` defaults to sys.stdout as it is at the call (a caller may have redirected it)."""
    print(json_safe(json.dumps(data, indent=2, ensure_ascii=False, default=str)), file=out or sys.stdout)


def json_line(data: Any) -> str:
    """One JSON object on one line, safe for a terminal."""
    return json_safe(json.dumps(data, ensure_ascii=False, default=str))


def table(
    rows: Sequence[dict[str, Any]],
    columns: Sequence[str],
    out: TextIO = sys.stdout,
    widths: dict[str, int] | None = None,
) -> None:
    """A left-aligned text table; long cells are cut to the given widths, times shown as `human` does."""
    widths = widths or {}
    cells = [[_cell(row.get(c), widths.get(c, 40)) for c in columns] for row in human(rows)]
    sizes = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    print("  ".join(c.upper().ljust(sizes[i]) for i, c in enumerate(columns)).rstrip(), file=out)
    for row in cells:
        print("  ".join(v.ljust(sizes[i]) for i, v in enumerate(row)).rstrip(), file=out)


def _cell(value: Any, width: int) -> str:
    text = "" if value is None else visible_line(" ".join(str(value).split()))
    return text if len(text) <= width else text[: width - 1] + "…"


def human(rows: Sequence[dict[str, Any]], now: datetime | None = None) -> list[dict[str, Any]]:
    """Rows for a person: every `*_at` time relative (or local), every `*duration_ms` a duration."""
    now = now or datetime.now(UTC)
    return [{k: _human_value(k, v, now) for k, v in row.items()} for row in rows]


STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?")


def _human_value(key: str, value: Any, now: datetime) -> Any:
    # every time a table shows reads the same way, whatever its column is called (`at`, `next` ...)
    if key.startswith("expires") and isinstance(value, str) and parse_stamp(value):
        left = (parse_stamp(value) - now).total_seconds()  # type: ignore[operator]
        return f"{time_left(left)} left" if left > 0 else "expired"
    if isinstance(value, str) and (key.endswith("_at") or STAMP.fullmatch(value)):
        return ago(value, now)
    if key.endswith("duration_ms") and isinstance(value, int | float):
        return duration(value)
    return value


def parse_stamp(text: str | None) -> datetime | None:
    """A store's time stamp as an aware datetime; None when it is none or not a time."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def local_time(text: str | None) -> str:
    """`2026-01-31 10:00:00` in this machine's time zone (the text as given if it is no time)."""
    moment = parse_stamp(text)
    if moment is None:
        return text or "-"
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def ago(text: str | None, now: datetime | None = None) -> str:
    """`just now`, `42 s ago`, `3 min ago`, `5 h ago`, `in 4 min`; past a day, the local date and time."""
    moment = parse_stamp(text)
    if moment is None:
        return text or "-"
    seconds = ((now or datetime.now(UTC)) - moment).total_seconds()
    span = abs(seconds)
    if span >= 86_400:
        return moment.astimezone().strftime("%Y-%m-%d %H:%M")
    if span < 5:
        return "just now"
    amount = f"{int(span)} s" if span < 60 else f"{int(span // 60)} min" if span < 3600 else f"{int(span // 3600)} h"
    return f"{amount} ago" if seconds > 0 else f"in {amount}"


def time_left(seconds: float) -> str:
    """`2 d 3 h`, `11 h 59 min`, `14 min 30 s`, `40 s`: a time left before a deadline, one way
    everywhere (an alert, a page and its countdown in hearth.js, a table)."""
    whole = max(0, round(seconds))
    days, rest = divmod(whole, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"


def duration(ms: float | None) -> str:
    """`850 ms`, `12.3 s`, `4 min 5 s`, `2 h 3 min`; `-` for none."""
    if ms is None:
        return "-"
    if ms < 1000:
        return f"{int(ms)} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, seconds = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def fill_json_help(parser: argparse.ArgumentParser) -> None:
    """Give every --json of this parser and the ones under it the shared help line if it has none."""
    for action in parser._actions:
        if "--json" in action.option_strings and not action.help:
            action.help = JSON_HELP
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                fill_json_help(child)


class Tolerant:
    """A text stream a closed reader cannot break (`hearth-loop ... | head -1`): once a write finds
    the pipe closed, the rest is dropped (the audit still records everything) and the file
    descriptor is pointed at /dev/null, so the interpreter's last flush does not fail either."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.closed_by_reader = False

    def write(self, text: str) -> int:
        if not self.closed_by_reader:
            try:
                self.stream.write(text)
            except (BrokenPipeError, ValueError):  # ValueError: the stream itself was closed
                self._drop()
        return len(text)

    def flush(self) -> None:
        if not self.closed_by_reader:
            try:
                self.stream.flush()
            except (BrokenPipeError, ValueError):
                self._drop()

    def isatty(self) -> bool:
        return not self.closed_by_reader and _isatty(self.stream)

    def _drop(self) -> None:
        self.closed_by_reader = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass  # not a real file: nothing will flush it at exit


def tolerant(stream: TextIO) -> TextIO:
    """`stream` wrapped in Tolerant (once)."""
    return stream if isinstance(stream, Tolerant) else Tolerant(stream)  # type: ignore[return-value]


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def network_words(network: bool, egress: list[str]) -> str:
    """What a run's commands and its web tools may reach, in words: `network` is whether commands
    get any (through hearth's guarded proxy), `egress` the hosts the web tools (and, with network,
    the commands) may reach. "network no; egress any public host" read as a contradiction."""
    hosts = f"only {', '.join(egress)}" if egress else "any public host"
    if network:
        return f"commands and web tools may reach {hosts} (commands through hearth's guarded proxy)"
    return f"commands have no network; web tools may reach {hosts}"
