"""The tree's rules, checked on the code itself: every module imports first, the engine never
imports the appliance, and a tool kind leans only on the registry and the shared helpers."""

from __future__ import annotations

import ast
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KIND_ALLOWED = {"agent.tools.registry", "agent.tools.args"}


def modules(package: str) -> list[str]:
    names = []
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join(parts))
    return names


def imported(path: Path) -> set[str]:
    """Every module named by an import statement in a file, wherever it stands (lazy ones too)."""
    tree = ast.parse(path.read_text(), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def import_alone(module: str) -> tuple[str, int, str]:
    done = subprocess.run(
        [sys.executable, "-c", f"import {module}"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    return module, done.returncode, done.stderr.strip().splitlines()[-1:] and done.stderr.strip().splitlines()[-1]


def test_every_module_imports_first_in_a_fresh_interpreter() -> None:
    every = modules("agent") + modules("hearth")
    with ThreadPoolExecutor(max_workers=4) as pool:
        failed = [(m, err) for m, code, err in pool.map(import_alone, every) if code != 0]
    assert failed == []
    assert len(every) > 60  # the walk found the tree, not an empty folder


def test_the_engine_never_imports_the_appliance() -> None:
    offenders = {
        str(p.relative_to(ROOT)): sorted(n for n in imported(p) if n.split(".")[0] == "hearth")
        for p in (ROOT / "agent").rglob("*.py")
    }
    assert {path: names for path, names in offenders.items() if names} == {}


@pytest.mark.parametrize(
    "kind", ["files", "search", "edit", "command", "knowledge", "web", "websearch", "system", "config_repo"]
)
def test_a_tool_kind_imports_no_other_kind(kind: str) -> None:
    names = imported(ROOT / "agent" / "tools" / f"{kind}.py")
    of_tools = {n for n in names if n.startswith("agent.tools.") and n.count(".") == 2}
    assert of_tools <= KIND_ALLOWED


def test_builtin_gathers_every_kind_in_its_folder() -> None:
    from agent.tools import builtin

    kinds = {p.stem for p in (ROOT / "agent" / "tools").glob("*.py")} - {
        "__init__",
        "registry",
        "args",
        "builtin",
        "gate",
        "spill",
    }
    assert {k.__name__.rsplit(".", 1)[1] for k in builtin.KINDS} == kinds


def test_the_command_table_names_the_module_of_every_subcommand() -> None:
    import argparse

    from hearth.commands import COMMANDS, MODULES, modules_for

    registered: dict[str, str] = {}
    for module in modules_for(None):
        sub = argparse.ArgumentParser().add_subparsers()
        module.register(sub)
        registered.update(dict.fromkeys(sub.choices, module.__name__.rsplit(".", 1)[1]))
    assert registered == COMMANDS and set(COMMANDS.values()) == set(MODULES)
