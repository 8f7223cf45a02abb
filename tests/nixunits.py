"""Test support: evaluate nix/module.nix without nixpkgs and render its units as NixOS would.

`evaluate()` runs the real module through tests/nix/eval-module.nix (a stub `lib` that still
type-checks every option) with plain `nix-instantiate`. `write_units()` turns the resulting
systemd.services/paths/timers into unit files the way NixOS renders them (lists become repeated
keys, booleans true/false, `environment` becomes Environment= lines) and writes each schedule's
script, so `systemd-analyze` can check exactly what the module asks for.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
NIX_INSTANTIATE = shutil.which("nix-instantiate")
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
VENV = Path(sys.executable).parent.parent  # the test interpreter's venv: bin/hearth, bin/hearth-loop

needs_nix = pytest.mark.skipif(
    NIX_INSTANTIATE is None, reason="nix-instantiate is not installed (apt-get install nix-bin)"
)
needs_systemd_analyze = pytest.mark.skipif(
    SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed (apt-get install systemd)"
)


class NixError(Exception):
    """nix-instantiate refused the expression; str() is its error text."""


def nix_eval(expr: str, *, cwd: Path = ROOT) -> Any:
    done = subprocess.run(
        [NIX_INSTANTIATE, "--eval", "--strict", "--json", "-E", expr],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise NixError(done.stderr.strip())
    return json.loads(done.stdout)


def evaluate(hearth: dict[str, Any], tmp: Path, *, package: Path = VENV) -> dict[str, Any]:
    """The module's result for `services.hearth = hearth` (enable is the caller's to set)."""
    user = tmp / "user-config.json"
    user.write_text(json.dumps({"services": {"hearth": hearth}}))
    scripts = tmp / "scripts"
    expr = (
        f"import {ROOT}/tests/nix/eval-module.nix {{ userConfig = builtins.fromJSON "
        f"(builtins.readFile {user}); hearthPkg = {json.dumps(str(package))}; "
        f"scriptDir = {json.dumps(str(scripts))}; }}"
    )
    return nix_eval(expr)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _section(name: str, settings: dict[str, Any]) -> list[str]:
    lines = [f"[{name}]"]
    for key, value in settings.items():
        for item in value if isinstance(value, list) else [value]:
            lines.append(f"{key}={_value(item)}")
    return lines


def _unit_section(unit: dict[str, Any]) -> dict[str, Any]:
    head: dict[str, Any] = {"Description": unit["description"]}
    for option, key in (("after", "After"), ("wants", "Wants"), ("requires", "Requires")):
        if unit.get(option):
            head[key] = " ".join(unit[option])
    return {**head, **unit.get("unitConfig", {})}


def render(kind: str, unit: dict[str, Any]) -> str:
    """The text of one unit: kind is service, path or timer."""
    lines = _section("Unit", _unit_section(unit))
    body = dict(unit.get(f"{kind}Config", {}))
    if kind == "service":
        env = [f'"{k}={v}"' for k, v in sorted(unit.get("environment", {}).items())]
        body = {"Environment": env, **body}
    return "\n".join(lines + [""] + _section(kind.capitalize(), body)) + "\n"


def write_units(result: dict[str, Any], directory: Path) -> dict[str, Path]:
    """Every hearth unit the module defines, as files in `directory`; plus the schedule scripts."""
    directory.mkdir(parents=True, exist_ok=True)
    scripts = directory.parent / "scripts"
    scripts.mkdir(exist_ok=True)
    for name, text in result["scripts"].items():
        path = scripts / name
        path.write_text("#!/bin/sh\nset -e\n" + text)
        path.chmod(0o755)
    files = {}
    systemd = result["config"]["systemd"]
    for kind, section in (("service", "services"), ("path", "paths"), ("timer", "timers")):
        for name, unit in systemd.get(section, {}).items():
            path = directory / f"{name}.{kind}"
            path.write_text(render(kind, unit))
            files[path.name] = path
    return files


def verify(files: list[Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SYSTEMD_ANALYZE, "verify", *map(str, files)], capture_output=True, text=True, timeout=60, cwd=files[0].parent
    )


def exposure(unit: Path) -> float:
    """systemd-analyze's offline exposure score of one service (0 best, 10 worst)."""
    done = subprocess.run(
        [SYSTEMD_ANALYZE, "security", "--offline=yes", f"./{unit.name}"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=unit.parent,
    )
    found = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", done.stdout)
    if not found:
        raise AssertionError(f"no exposure score for {unit.name}: {done.stdout[-500:]} {done.stderr}")
    return float(found.group(1))
