"""System tools: the NixOS generations hearth runs on, and the health of the box.

current_generation / list_generations read the NixOS system profile (on a host that is not NixOS
they are not shown, and say so plainly if called); system_health reports load, memory, disk,
Ollama and failed hearth units. All are safe (read-only).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent.safety.workspace import Workspace
from agent.services import RunServices
from agent.tools.registry import Tool

_LINK = re.compile(r"^system-(\d+)-link$")


# --- NixOS generations -----------------------------------------------------------------------


def _root(ws: Workspace) -> Path:
    return ws.services.host_root


def _on_host(root: Path, target: str) -> Path:
    """A symlink target of the host, seen under ``root`` (itself '/' outside tests)."""
    return root / target.lstrip("/")


NIXOS_ONLY = ("current_generation", "list_generations")  # tools with nothing to say elsewhere


def is_nixos(root: Path = Path("/")) -> bool:
    return (root / "etc/NIXOS").exists() or (root / "run/current-system").is_symlink()


def _not_nixos(root: Path) -> str | None:
    if is_nixos(root):
        return None
    return "this host is not NixOS (no /etc/NIXOS and no /run/current-system): it has no system generations"


def _version(root: Path, target: str) -> str:
    try:
        return _on_host(root, target).joinpath("nixos-version").read_text().strip()
    except OSError:
        return "?"


def _generations(root: Path) -> list[dict[str, Any]]:
    profiles = root / "nix/var/nix/profiles"
    current = os.readlink(root / "run/current-system") if (root / "run/current-system").is_symlink() else ""
    found = []
    for entry in sorted(profiles.iterdir() if profiles.is_dir() else [], key=lambda p: p.name):
        match = _LINK.match(entry.name)
        if match and entry.is_symlink():
            target = os.readlink(entry)
            built = datetime.fromtimestamp(entry.lstat().st_mtime, UTC).strftime("%Y-%m-%d %H:%M")
            found.append(
                {
                    "number": int(match.group(1)),
                    "target": target,
                    "built": built,
                    "version": _version(root, target),
                    "current": target == current,
                }
            )
    return sorted(found, key=lambda g: g["number"])


def current_generation(args: dict[str, Any], ws: Workspace) -> str:
    root = _root(ws)
    if problem := _not_nixos(root):
        return problem
    target = os.readlink(root / "run/current-system")
    numbered = next((g for g in _generations(root) if g["target"] == target), None)
    number = f"generation {numbered['number']}, built {numbered['built']}" if numbered else "generation unknown"
    return f"running {target}\nNixOS {_version(root, target)}, {number}"


def list_generations(args: dict[str, Any], ws: Workspace) -> str:
    root = _root(ws)
    if problem := _not_nixos(root):
        return problem
    rows = _generations(root)
    if not rows:
        return "no system generations found in /nix/var/nix/profiles"
    return "\n".join(
        f"{g['number']:>4}  {g['built']}  NixOS {g['version']}  {g['target']}{'  (current)' if g['current'] else ''}"
        for g in rows
    )


# --- health ----------------------------------------------------------------------------------


def _meminfo() -> str:
    fields = {}
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            name, _, value = line.partition(":")
            fields[name] = int(value.split()[0]) // 1024
    except (OSError, ValueError, IndexError):
        return "memory: unknown (/proc/meminfo unreadable)"
    return f"memory: {fields.get('MemAvailable', 0)} MiB available of {fields.get('MemTotal', 0)} MiB"


def _disk(path: Path) -> str:
    usage = shutil.disk_usage(path)
    return f"disk {path}: {usage.free // 2**30} GiB free of {usage.total // 2**30} GiB ({usage.used * 100 // usage.total}% used)"


def _model_server(host: str) -> str:
    from agent.model.backends import probe  # httpx: only when the health is asked for

    if not host:
        return "model server: none configured for this run"
    models = probe(host)
    if models is None:
        return f"model server: not reachable at {host}"
    return f"model server: reachable at {host}; models: {', '.join(models) or 'none'}"


def _failed_units(root: Path) -> str:
    if not (root / "run/systemd/system").is_dir():
        return "hearth units: systemd is not running on this host, so there is no unit status"
    try:
        done = subprocess.run(
            ["systemctl", "list-units", "--failed", "--plain", "--no-legend", "--no-pager", "hearth*"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"hearth units: could not ask systemd ({exc})"
    failed = [line.split()[0] for line in done.stdout.splitlines() if line.strip()]
    if done.returncode != 0:
        return f"hearth units: systemctl failed: {done.stderr.strip()[:200]}"
    return f"hearth units: failed: {', '.join(failed)}" if failed else "hearth units: none failed"


def system_health(args: dict[str, Any], ws: Workspace) -> str:
    root = _root(ws)
    load = os.getloadavg()
    lines = [
        _not_nixos(root) or current_generation(args, ws).replace("\n", "; "),
        f"load: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs",
        _meminfo(),
        _disk(ws.root),
        _model_server(ws.services.model_host),
        _failed_units(root),
    ]
    return "\n".join(lines)


_NONE: dict[str, dict[str, Any]] = {}


def _on_nixos(services: RunServices) -> bool:
    return _not_nixos(services.host_root) is None


TOOLS = [
    Tool(
        "current_generation",
        "Show the running NixOS generation.",
        _NONE,
        current_generation,
        risk="safe",
        available=_on_nixos,
    ),
    Tool(
        "list_generations",
        "List the NixOS generations.",
        _NONE,
        list_generations,
        risk="safe",
        available=_on_nixos,
    ),
    Tool(
        "system_health",
        "Report load, memory, disk, Ollama and failed units.",
        _NONE,
        system_health,
        risk="safe",
    ),
]
