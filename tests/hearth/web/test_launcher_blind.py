"""The command center never asks which launcher runs: it asks the launcher for its door
(hearth/dispatch/launchers/: `door_for`). A launcher's name compared, HEARTH_LAUNCHER read, the
Celery row named or a launcher row's module imported anywhere in hearth/web fails here, and a
launcher added as a row at test time gets the door mounted by what it is, not by its name."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from hearth.dispatch.launchers import AUTO, LAUNCHERS, door_for, register
from hearth.settings import Settings
from tests.web_support import Center

ROOT = Path(__file__).resolve().parents[3]
WEB = ROOT / "hearth" / "web"
ROW_MODULES = {
    "hearth.fleet.launcher",
    "hearth.dispatch.launchers.systemd",
    "hearth.dispatch.launchers.local",
    "hearth.dispatch.launchers.host",
}
SAID = re.compile(r"celery|HEARTH_LAUNCHER|\.launcher\b", re.IGNORECASE)


def _names_compared(tree: ast.AST) -> list[str]:
    """Every comparison with a launcher row's name (`x == "celery"`, `name in ("local", ...)`)."""
    names = {*LAUNCHERS, AUTO}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                for leaf in ast.walk(side):
                    if isinstance(leaf, ast.Constant) and leaf.value in names:
                        found.append(f"line {node.lineno}: {leaf.value!r}")
    return found


def _row_imports(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ROW_MODULES:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names if alias.name in ROW_MODULES)
    return found


def offences(root: Path) -> dict[str, list[str]]:
    """What under `root` names a launcher, by file: comparisons, imports of a row, the words."""
    found: dict[str, list[str]] = {}
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".html", ".js", ".css")):
        text = path.read_text()
        said = [f"says {m.group(0)!r}" for m in SAID.finditer(text)]
        if path.suffix == ".py":
            tree = ast.parse(text, str(path))
            said += _names_compared(tree) + [f"imports {m}" for m in _row_imports(tree)]
        if said:
            found[str(path.relative_to(root))] = said
    return found


def test_the_command_center_names_no_launcher() -> None:
    assert offences(WEB) == {}


def test_the_check_finds_a_launcher_name_where_one_comes_back(tmp_path: Path) -> None:
    (tmp_path / "page.py").write_text('def hub(settings):\n    return settings.kind == "celery"\n')
    (tmp_path / "other.py").write_text('def here(kind):\n    return kind in ("local", "systemd")\n')
    (tmp_path / "row.py").write_text("from hearth.dispatch.launchers.systemd import agent_unit\n")
    (tmp_path / "page.html").write_text("<p>HEARTH_LAUNCHER is not celery</p>\n")
    assert offences(tmp_path) == {
        "other.py": ["line 2: 'local'", "line 2: 'systemd'"],
        "page.html": ["says 'HEARTH_LAUNCHER'", "says 'celery'"],
        "page.py": ["says 'celery'", "line 2: 'celery'"],
        "row.py": ["imports hearth.dispatch.launchers.systemd"],
    }


class Elsewhere:
    """A row that runs requests on other machines (it says so by having a door), named nothing
    the command center could know."""

    def __init__(self, settings: Settings, concurrency: int | None = None) -> None:
        self.settings = settings

    def door(self) -> str:
        return "/fleet"


@pytest.fixture
def far_row(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    register("far-away", Elsewhere)  # type: ignore[arg-type]  # a door is all this test asks of it
    monkeypatch.setenv("HEARTH_LAUNCHER", "far-away")
    try:
        yield
    finally:
        LAUNCHERS.pop("far-away", None)


def test_a_launcher_with_a_door_gets_it_mounted_whatever_its_name(state_dir: Path, far_row: None) -> None:
    settings = Settings.from_env()
    settings.state_dir.mkdir(parents=True)
    assert door_for(settings) == "/fleet"
    with Center(settings) as center:
        answer = center.client().post("/fleet/claim", json={"run_id": "r1"})
    assert answer.status_code == 401 and "worker's token" in answer.json()["error"]  # the door answers


def test_a_box_whose_launcher_has_no_door_mounts_none(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEARTH_LAUNCHER", "local")
    settings = Settings.from_env()
    assert door_for(settings) is None
    with Center(settings) as center:
        assert center.client().post("/fleet/claim", json={"run_id": "r1"}).status_code != 401
