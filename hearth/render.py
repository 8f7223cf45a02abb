"""Rendering for the CLI: plain tables for people, JSON for programs; untrusted text escaped in both
(agent/safety/display.py: control characters shown visibly, never sent to the terminal raw)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from agent.safety.display import json_safe, visible, visible_line

__all__ = ["json_line", "print_json", "table", "visible", "visible_line"]


def print_json(data: Any, out: TextIO = sys.stdout) -> None:
    print(json_safe(json.dumps(data, indent=2, ensure_ascii=False, default=str)), file=out)


def json_line(data: Any) -> str:
    """One JSON object on one line, safe for a terminal."""
    return json_safe(json.dumps(data, ensure_ascii=False, default=str))


def table(
    rows: Sequence[dict[str, Any]],
    columns: Sequence[str],
    out: TextIO = sys.stdout,
    widths: dict[str, int] | None = None,
) -> None:
    """A left-aligned text table; long cells are cut to the given widths."""
    widths = widths or {}
    cells = [[_cell(row.get(c), widths.get(c, 40)) for c in columns] for row in rows]
    sizes = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    print("  ".join(c.upper().ljust(sizes[i]) for i, c in enumerate(columns)).rstrip(), file=out)
    for row in cells:
        print("  ".join(v.ljust(sizes[i]) for i, v in enumerate(row)).rstrip(), file=out)


def _cell(value: Any, width: int) -> str:
    text = "" if value is None else visible_line(" ".join(str(value).split()))
    return text if len(text) <= width else text[: width - 1] + "…"
