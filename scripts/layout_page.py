"""Draws docs/layout.md's floor table from the layer table itself (FLOORS and FLOOR_ROLES in
tests/test_layout.py), so the page cannot disagree with what the tests enforce.

    python scripts/layout_page.py           rewrite the table between its two markers
    python scripts/layout_page.py --check   change nothing; exit 1 and print what differs when the
                                            page is not current (tests/test_layout_page.py checks it)

`make layout` runs the first. Each FLOORS name is drawn as its path: `agent/tools/` for a package,
`hearth/leash/alerts.py` for a module, `hearth/__init__.py` for a root (it covers only that).
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "layout.md"
BEGIN = "<!-- floors: drawn by `make layout` from FLOORS in tests/test_layout.py; edit those, not this -->"
END = "<!-- end of floors -->"


def path_of(name: str, root: Path = ROOT) -> str:
    """A FLOORS name as the path a reader finds it at."""
    where = root / name.replace(".", "/")
    if "." not in name:
        return f"{name}/__init__.py"
    return f"{name.replace('.', '/')}/" if where.is_dir() else f"{name.replace('.', '/')}.py"


def table(floors: dict[int, tuple[str, ...]], roles: dict[int, str], root: Path = ROOT) -> str:
    """The markers and the Markdown table between them: a row per floor, lowest first."""
    rows = [
        BEGIN,
        "| floor | what stands there | packages and modules |",
        "| ---: | --- | --- |",
        *(
            f"| {floor} | {roles.get(floor, '?')} | {', '.join(f'`{path_of(n, root)}`' for n in names)} |"
            for floor, names in sorted(floors.items())
        ),
        END,
    ]
    return "\n".join(rows)


def drawn(page: str, fresh: str) -> str:
    """`page` with the text between the markers (the markers included) replaced by `fresh`."""
    start, end = page.find(BEGIN), page.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{PAGE.name} has no floor table; put the lines {BEGIN!r} and {END!r} where it goes")
    return page[:start] + fresh + page[end + len(END) :]


def stale(page: str, fresh: str) -> list[str]:
    """What differs between the page's table and `fresh`, as a unified diff ([] when current)."""
    new = drawn(page, fresh).splitlines()
    return list(difflib.unified_diff(page.splitlines(), new, "docs/layout.md", "as drawn from FLOORS", lineterm=""))


def layer_table() -> tuple[dict[int, tuple[str, ...]], dict[int, str]]:
    sys.path.insert(0, str(ROOT))
    from tests.test_layout import FLOOR_ROLES, FLOORS

    return FLOORS, FLOOR_ROLES


def main(argv: list[str]) -> int:
    floors, roles = layer_table()
    page = PAGE.read_text()
    fresh = table(floors, roles)
    if argv[1:] == ["--check"]:
        diff = stale(page, fresh)
        print("\n".join(diff) or "docs/layout.md's floor table is current")
        return 1 if diff else 0
    PAGE.write_text(drawn(page, fresh))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
