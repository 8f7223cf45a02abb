"""Each package's errors are one tree, drawn in its errors module's docstring: every public exception
of agent/ is an AgentError and of hearth/ a HearthError (or control flow: a StopRun, or not an
Exception at all), each is drawn under its real parent, a private one is named as private, and
the errors modules import nothing of the packages (so any module may import them)."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from agent.errors import AgentError
from agent.loop import StopRun
from hearth.errors import HearthError

ROOT = Path(__file__).resolve().parent.parent
BRANCH = re.compile(r"^(?P<rails>(?:[│ ]   )*)[├└]── (?P<name>\w+)(?P<rest>.*)$")
ROOT_LINE = re.compile(r"^(?P<name>[A-Z]\w*)(?P<rest>(?:\s{2,}.*)?)$")


@dataclass(frozen=True)
class Drawn:
    name: str
    parent: str | None
    top: str
    line: str
    said: str  # what the line says of it: when it is raised


def drawing(docstring: str) -> dict[str, Drawn]:
    """The trees of a docstring: each class drawn, with the parent and the root it is drawn under."""
    lines = docstring.splitlines()
    drawn: dict[str, Drawn] = {}
    path: list[str] = []
    for i, line in enumerate(lines):
        branch = BRANCH.match(line)
        root = ROOT_LINE.match(line)
        if branch and path:
            depth = len(branch["rails"]) // 4 + 1
            del path[depth:]
            drawn[branch["name"]] = Drawn(branch["name"], path[-1], path[0], line, branch["rest"].strip())
            path.append(branch["name"])
        elif root and i + 1 < len(lines) and BRANCH.match(lines[i + 1]):
            path = [root["name"]]
            drawn[root["name"]] = Drawn(root["name"], None, root["name"], line, root["rest"].strip())
        else:
            path = []
    return drawn


def modules(package: str) -> list[ModuleType]:
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found.append(importlib.import_module(".".join(parts)))
    return found


def exceptions(package: str) -> dict[str, type[BaseException]]:
    """Every exception class defined at the top of a module of the package, by name."""
    return {
        name: value
        for module in modules(package)
        for name, value in vars(module).items()
        if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == module.__name__
    }


PACKAGES = {"agent": AgentError, "hearth": HearthError}


def errors_doc(package: str) -> str:
    return importlib.import_module(f"{package}.errors").__doc__ or ""


def control_flow(cls: type[BaseException]) -> bool:
    """A run's ending or an interruption: deliberately outside the error tree."""
    return issubclass(cls, StopRun) or not issubclass(cls, Exception)


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_exception_is_under_the_root_or_is_control_flow(package: str) -> None:
    root = PACKAGES[package]
    public = {n: c for n, c in exceptions(package).items() if not n.startswith("_")}
    assert len(public) > 8  # the walk found the classes, not an empty folder
    assert sorted(n for n, c in public.items() if not (issubclass(c, root) or control_flow(c))) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_exception_is_drawn_under_its_own_parent(package: str) -> None:
    drawn = drawing(errors_doc(package))
    public = {n: c for n, c in exceptions(package).items() if not n.startswith("_")}
    assert sorted(set(public) - set(drawn)) == []
    wrong = {
        name: (drawn[name].parent, [b.__name__ for b in cls.__bases__])
        for name, cls in public.items()
        if drawn[name].parent is not None and drawn[name].parent not in [b.__name__ for b in cls.__bases__]
    }
    assert wrong == {}
    under_root = {n for n, d in drawn.items() if d.top == PACKAGES[package].__name__}
    assert sorted(n for n in public if issubclass(public[n], PACKAGES[package])) == sorted(under_root)


@pytest.mark.parametrize("package", PACKAGES)
def test_every_drawn_class_exists_and_says_when_it_is_raised(package: str) -> None:
    drawn = drawing(errors_doc(package))
    known = exceptions(package)
    children = [d for d in drawn.values() if d.parent is not None]
    assert sorted(d.name for d in children if d.name not in known) == []
    assert [d.line for d in children if len(d.said) < 10] == []


@pytest.mark.parametrize("package", PACKAGES)
def test_every_private_exception_is_named_as_private(package: str) -> None:
    doc = errors_doc(package)
    private = [n for n in exceptions(package) if n.startswith("_")]
    assert [n for n in private if f"`{n}`" not in doc] == []


def test_the_exit_codes_drawn_are_the_ones_the_cli_exits_with() -> None:
    drawn = drawing(errors_doc("hearth"))
    errors = {n: c for n, c in exceptions("hearth").items() if issubclass(c, HearthError)}
    said = {n: re.search(r"\(exit (\d+)\)$", d.said) for n, d in drawn.items() if n in errors}
    codes = {n: int(found[1]) for n, found in said.items() if found}
    assert len(codes) >= 8
    assert {n: errors[n].exit_code for n in codes} == codes


@pytest.mark.parametrize("package", PACKAGES)
def test_an_errors_module_is_a_leaf(package: str) -> None:
    tree = ast.parse((ROOT / package / "errors.py").read_text())
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert [n for n in names if n.split(".")[0] in PACKAGES] == []


def test_a_class_drawn_under_the_wrong_parent_is_seen() -> None:
    """The drawing is read as a tree: depth by the rails, so a misplaced line names the wrong parent."""
    drawn = drawing("Root          r\n├── A         a\n│   └── B     b\n└── C         c\n")
    assert [(d.name, d.parent, d.top) for d in drawn.values()] == [
        ("Root", None, "Root"),
        ("A", "Root", "Root"),
        ("B", "A", "Root"),
        ("C", "Root", "Root"),
    ]
