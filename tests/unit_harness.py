"""Test support: run `hearth agent ID` the way the rendered hearth-agent@ unit runs it, without systemd.

The unit is rendered from nix/units.nix by the tests' own machinery (tests/nixunits.py) and read
back as text; nothing below restates what the unit says:

- the command is its ExecStart=, the environment its Environment= lines (the state and config
  directories and Ollama's URL are the test's), and STATE_DIRECTORY is the run's own
  `agents/<id>`, made new and empty beforehand, as StateDirectory= makes it;
- the filesystem is a bwrap view built from its mount settings, applied shortest path first as
  systemd does: everything read-only (ProtectSystem=strict), a private /tmp, ReadWritePaths=
  and ReadOnlyPaths= bound so, TemporaryFileSystem= an empty tmpfs (read-only after BindPaths=
  put the run's own directory back in it), InaccessiblePaths= an empty tmpfs with no permissions.

Not reproduced, and said so: the unit's user, capabilities and system-call filter (the harness
runs as root), its network rules, and HEARTH_CGROUP_DELEGATED (no systemd delegates a cgroup
here, so hearth must not divide the one it runs in).

`FakeSystemd` puts a `systemctl` on PATH that, for `start hearth-agent@ID.service`, starts this
module for ID in the background (as systemd would start the unit) and answers anything else
like an idle systemd; `python -m tests.unit_harness ID` is what it runs. Each run's exit code
lands in `<state>/harness/ID.exit`, the marker tests wait on; each start of the unit leaves
`ID.start.N` (a unit started again, for a run that goes on, finds its directory as it left it).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BWRAP = shutil.which("bwrap")
UNIT_STATE_DIR = "/var/lib/hearth"  # the module's default stateDir, as the rendered unit names it
UNIT_CONFIG_DIR = "/etc/hearth"
NOT_REPRODUCED = ("HEARTH_CGROUP_DELEGATED",)
MOUNT_KEYS = ("ReadWritePaths", "ReadOnlyPaths", "TemporaryFileSystem", "BindPaths", "InaccessiblePaths")

needs_unit_view = pytest.mark.skipif(
    BWRAP is None or os.geteuid() != 0,
    reason="the unit's filesystem view needs bwrap (apt-get install bubblewrap) and root",
)


@dataclass(frozen=True)
class Host:
    """Where the test's hearth lives, in place of the unit's /var/lib/hearth and /etc/hearth."""

    state_dir: Path
    config_dir: Path
    ollama_url: str

    def path(self, text: str, run_id: str) -> str:
        return text.replace("%i", run_id).replace(UNIT_STATE_DIR, str(self.state_dir))


def unit_settings(unit_text: str) -> dict[str, list[str]]:
    """Each key of the unit's [Service] section with its values, in order (repeated keys add)."""
    settings: dict[str, list[str]] = {}
    section = ""
    for line in unit_text.splitlines():
        if line.startswith("["):
            section = line.strip("[]")
        elif section == "Service" and "=" in line:
            key, _, value = line.partition("=")
            settings.setdefault(key, []).append(value)
    return settings


def unit_environment(settings: dict[str, list[str]], host: Host, run_id: str) -> dict[str, str]:
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}  # systemd's default
    for quoted in settings.get("Environment", []):
        key, _, value = quoted.strip('"').partition("=")
        if key not in NOT_REPRODUCED:
            env[key] = value
    env |= {"HEARTH_STATE_DIR": str(host.state_dir), "HEARTH_CONFIG_DIR": str(host.config_dir)}
    env |= {"OLLAMA_HOST": host.ollama_url, "PYTHONPATH": str(ROOT), "LANG": "C.UTF-8"}
    env["STATE_DIRECTORY"] = str(host.state_dir / "agents" / run_id)
    return env


def view_args(settings: dict[str, list[str]], host: Host, run_id: str) -> list[str]:
    """bwrap's arguments for the unit's filesystem: the mounts it names, shortest path first."""
    mounts: list[tuple[str, str]] = []
    for key in MOUNT_KEYS:
        for value in settings.get(key, []):
            path = host.path(value.removeprefix("-").partition(":")[0], run_id)
            mounts.append((path, key + (":ro" if value.endswith(":ro") else "")))
    mounts.sort(key=lambda m: len(Path(m[0]).parts))
    args = ["--die-with-parent", "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc"]
    args += ["--tmpfs", "/tmp", "--ro-bind", str(ROOT), str(ROOT)]  # PrivateTmp=; the code, wherever cloned
    if host.config_dir.is_dir():  # /etc/hearth, which the unit sees read-only
        args += ["--ro-bind", str(host.config_dir), str(host.config_dir)]
    late: list[str] = []
    for path, kind in mounts:
        if not os.path.lexists(path):
            continue  # "-" paths may be missing; systemd would refuse the others before the run
        if kind in ("ReadWritePaths", "BindPaths"):
            args += ["--bind", path, path]
        elif kind == "ReadOnlyPaths":
            args += ["--ro-bind", path, path]
        elif kind.startswith("TemporaryFileSystem"):
            args += ["--tmpfs", path]
            late += ["--remount-ro", path] if kind.endswith(":ro") else []
        else:  # InaccessiblePaths
            args += ["--perms", "0000", "--tmpfs", path, "--remount-ro", path]
    return args + late


def command(settings: dict[str, list[str]], run_id: str) -> list[str]:
    [exec_start] = settings["ExecStart"]
    return [part.replace("%i", run_id) for part in exec_start.split()]


def run_unit(unit_file: Path, host: Host, run_id: str) -> int:
    """What systemd does for `systemctl start hearth-agent@ID`: make the state directory, run, wait."""
    settings = unit_settings(unit_file.read_text())
    own = host.state_dir / "agents" / run_id
    own.mkdir(parents=True, exist_ok=True, mode=0o700)
    logs = host.state_dir / "harness"
    logs.mkdir(exist_ok=True)
    marker = logs / f"{run_id}.exit"
    starts = len(list(logs.glob(f"{run_id}.start.*")))
    (logs / f"{run_id}.start.{starts + 1}").touch()  # the unit started again keeps its StateDirectory=
    if starts == 0:
        assert not any(own.iterdir()), f"{own} is not empty before its unit starts"
    marker.unlink(missing_ok=True)
    argv = [str(BWRAP), *view_args(settings, host, run_id), "--chdir", "/", "--", *command(settings, run_id)]
    with open(logs / f"{run_id}.log", "ab") as log:
        code = subprocess.run(argv, env=unit_environment(settings, host, run_id), stdout=log, stderr=log).returncode
    (logs / f".{run_id}.exit").write_text(str(code))
    (logs / f".{run_id}.exit").rename(marker)  # the marker appears whole
    return code


FAKE_SYSTEMCTL = """#!/bin/sh
# a systemd that starts hearth-agent@ units through tests/unit_harness.py and is idle otherwise
case "$1 $2 $3" in
  "start --no-block hearth-agent@"*)
    id=${3#hearth-agent@}; id=${id%.service}
    setsid "$HARNESS_PYTHON" -m tests.unit_harness "$id" </dev/null >>"$HARNESS_LOG" 2>&1 &
    exit 0 ;;
  "is-failed "*) echo active; echo inactive; exit 1 ;;
esac
exit 0
"""


class FakeSystemd:
    """A fake `systemctl` on PATH for the spawner; what the spawner's environment needs."""

    def __init__(self, tmp: Path, unit_file: Path, host: Host) -> None:
        self.bin = tmp / "fake-systemd"
        self.bin.mkdir()
        script = self.bin / "systemctl"
        script.write_text(FAKE_SYSTEMCTL)
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
        self.config = {"unit": str(unit_file), "state": str(host.state_dir), "config": str(host.config_dir)}
        self.config["ollama"] = host.ollama_url
        self.log = tmp / "harness.log"

    def env(self) -> dict[str, str]:
        return {
            "PATH": f"{self.bin}:{os.environ['PATH']}",
            "HEARTH_LAUNCHER": "systemd",
            "HARNESS_PYTHON": sys.executable,
            "HARNESS_CONFIG": json.dumps(self.config),
            "HARNESS_LOG": str(self.log),
            "PYTHONPATH": str(ROOT),
        }


def main(argv: list[str]) -> int:
    [run_id] = argv
    config = json.loads(os.environ["HARNESS_CONFIG"])
    host = Host(Path(config["state"]), Path(config["config"]), config["ollama"])
    return run_unit(Path(config["unit"]), host, run_id)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
