"""docs/layout.md and the layer table agree: every package of agent/ and hearth/ is named in FLOORS
(tests/test_layout.py) and in the page's Layout tree, every FLOORS name still exists, and the page's
floor table is the one scripts/layout_page.py draws from FLOORS (`make layout`). Each failure says
the line to add and where, for whoever adds a package next."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

from tests.test_layout import FLOOR_ROLES, FLOORS, ROOT, floor_of, import_graph

DESCRIPTION_COLUMN = 20  # where the Layout tree's descriptions start


def layout_page() -> ModuleType:
    spec = importlib.util.spec_from_file_location("layout_page", ROOT / "scripts" / "layout_page.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def packages(root: Path = ROOT) -> list[str]:
    """Every directory under agent/ and hearth/ that holds Python (with an __init__.py or without), dotted."""
    found = {"agent", "hearth"}
    for top in ("agent", "hearth"):
        for path in (root / top).rglob("*.py"):
            if "__pycache__" not in path.parts:
                found.add(".".join(path.parent.relative_to(root).parts))
    return sorted(found)


def floor_hint(package: str, graph: dict[str, set[str]]) -> str:
    """Which floor a package not yet in FLOORS can stand on, from what it imports and what imports it."""
    inside = {m for m in graph if m == package or m.startswith(package + ".")}
    imports = {n for m in inside for n in graph[m]} - inside
    importers = {m for m in graph if m not in inside and graph[m] & inside}
    low = max((floor_of(n) or 0 for n in imports), default=floor_of(package.split(".")[0]) or 0)  # its root's lowest
    high = min((floor_of(m) or 0 for m in importers), default=None)
    above = f"; what imports it stands on floor {high} or higher" if high is not None else ""
    return f"FLOORS[{low}] (the highest floor it imports from{above})"


def unnamed_packages(names: list[str], graph: dict[str, set[str]]) -> list[str]:
    named = {n for ns in FLOORS.values() for n in ns}
    return [
        f"{p} ({p.replace('.', '/')}/) is a package FLOORS in tests/test_layout.py does not name: add "
        f'"{p}", to {floor_hint(p, graph)}, then run `make layout`'
        for p in names
        if p not in named
    ]


def tree_of(page: str) -> list[str]:
    """The lines of the Layout section's first ``` block."""
    section = page.split("\n## Layout", 1)[1]
    return section.split("```", 2)[1].splitlines()[1:]


def tree_entries(lines: list[str]) -> dict[str, tuple[int, str]]:
    """Each directory the tree draws, as `hearth/run/long/` -> (its indent, its description and
    the description's continuation lines)."""
    entries: dict[str, tuple[int, str]] = {}
    stack: list[tuple[int, str]] = []
    last = ""
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if not line.strip():
            continue
        if indent >= DESCRIPTION_COLUMN - 4 and last:  # a description going on
            entries[last] = (entries[last][0], entries[last][1] + " " + line.strip())
            continue
        name, _, description = line.strip().partition("  ")
        while stack and stack[-1][0] >= indent:
            stack.pop()
        last = ""
        if name.endswith("/") and " " not in name:
            last = (stack[-1][1] if stack else "") + name
            entries[last] = (indent, description.strip())
            stack.append((indent, last))
    return entries


def missing_from_tree(names: list[str], lines: list[str]) -> list[str]:
    """A line for each package the tree neither draws nor names in its parent's description."""
    entries = tree_entries(lines)
    problems = []
    for package in names:
        path = package.replace(".", "/") + "/"
        parent, leaf = path[: -len(path.rsplit("/", 2)[1]) - 1], path.rsplit("/", 2)[1] + "/"
        in_parent = parent in entries and re.search(rf"(?<![\w/]){re.escape(leaf)}", entries[parent][1])
        if path in entries or in_parent:
            continue
        indent = entries[parent][0] + 2 if parent in entries else 0
        line = (" " * indent + leaf).ljust(DESCRIPTION_COLUMN) + "<what it holds>"
        where = f"under `{parent}`" if parent else "at the top"
        problems.append(
            f"docs/layout.md's Layout tree does not name {path}: add the line `{line}` {where}"
            + (f", or name `{leaf}` in {parent}'s description" if parent in entries else "")
        )
    return problems


def test_every_package_is_named_in_the_layer_table() -> None:
    assert unnamed_packages(packages(), import_graph()) == []


def test_every_name_of_the_layer_table_is_a_module_or_a_package_of_today() -> None:
    gone = [
        f"FLOORS[{floor}] names {name}, which is neither a module nor a package: rename it where it moved, "
        "or remove it, then run `make layout`"
        for floor, names in FLOORS.items()
        for name in names
        if not ((ROOT / name.replace(".", "/")).is_dir() or (ROOT / f"{name.replace('.', '/')}.py").is_file())
    ]
    assert gone == []


def test_every_floor_says_what_stands_there() -> None:
    wordless = [f'add {floor}: "<what stands there>", to FLOOR_ROLES in tests/test_layout.py' for floor in FLOORS]
    assert [line for line, floor in zip(wordless, FLOORS, strict=True) if floor not in FLOOR_ROLES] == []
    assert sorted(set(FLOOR_ROLES) - set(FLOORS)) == []  # words for a floor that is gone: remove them


def test_the_floor_table_of_the_layout_page_is_the_one_drawn_from_the_layer_table() -> None:
    page = layout_page()
    diff = page.stale((ROOT / "docs" / "layout.md").read_text(), page.table(FLOORS, FLOOR_ROLES))
    assert diff == [], "docs/layout.md's floor table is not FLOORS': run `make layout`\n" + "\n".join(diff)


def test_every_package_is_in_the_layout_page_s_tree() -> None:
    lines = tree_of((ROOT / "docs" / "layout.md").read_text())
    assert missing_from_tree(packages(), lines) == []


def test_a_package_the_tree_does_not_name_is_reported_with_the_line_to_add() -> None:
    lines = [
        "hearth/             the appliance",
        "  run/              one run end to end",
        "    long/           long work",
        "  cli/              the edges: main.py, commands/ (a module per",
        "                    command), completion",
    ]
    names = ["hearth", "hearth.run", "hearth.run.long", "hearth.cli", "hearth.cli.commands", "hearth.skills"]
    assert missing_from_tree(names, lines) == [
        "docs/layout.md's Layout tree does not name hearth/skills/: add the line "
        "`  skills/           <what it holds>` under `hearth/`, or name `skills/` in hearth/'s description"
    ]
    assert missing_from_tree(["hearth.run.long.legs"], lines)[0].endswith(
        "`      legs/         <what it holds>` under `hearth/run/long/`, or name `legs/` in hearth/run/long/'s description"
    )


def test_a_package_the_layer_table_does_not_name_is_reported_with_a_floor_it_can_stand_on() -> None:
    graph = {
        "hearth.larder": set(),
        "hearth.larder.load": {"hearth.settings", "hearth.run.goal"},
        "hearth.cli.main": {"hearth.larder.load"},
    }
    assert unnamed_packages(["hearth.larder", "hearth.run"], graph) == [
        'hearth.larder (hearth/larder/) is a package FLOORS in tests/test_layout.py does not name: add "hearth.larder", '
        "to FLOORS[14] (the highest floor it imports from; what imports it stands on floor 22 or higher), "
        "then run `make layout`"
    ]
    alone = {"hearth.pantry": set(), "hearth.pantry.table": set()}
    assert "to FLOORS[10] (the highest floor it imports from)" in unnamed_packages(["hearth.pantry"], alone)[0]


def test_a_floor_table_that_is_not_the_drawn_one_is_told_apart(tmp_path: Path) -> None:
    page = layout_page()
    (tmp_path / "agent" / "tools").mkdir(parents=True)
    (tmp_path / "agent" / "loop.py").write_text("")
    fresh = page.table(
        {0: ("agent",), 5: ("agent.tools",), 6: ("agent.loop",)}, {0: "leaves", 5: "tools", 6: "loop"}, tmp_path
    )
    assert "| 5 | tools | `agent/tools/` |" in fresh and "| 6 | loop | `agent/loop.py` |" in fresh
    current = f"# Layout\n\n{fresh}\n\nmore text\n"
    assert page.stale(current, fresh) == []
    older = current.replace("`agent/loop.py`", "`agent/loop.py`, `agent/wire.py`")
    assert "-| 6 | loop | `agent/loop.py`, `agent/wire.py` |" in page.stale(older, fresh)
