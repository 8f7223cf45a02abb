"""`hearth install --systemd` and `hearth uninstall`: the appliance on Debian, Ubuntu or any systemd Linux."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from hearth.errors import UsageError

if TYPE_CHECKING:  # a usage (`hearth --help`) loads none of the installer: each handler imports it
    from hearth.install.plan import Step
    from hearth.settings import Settings

INSTALL_EPILOG = (
    "Writes the units the NixOS module renders (from the same units.toml), the hearth user and the "
    "hearth-submit group, /var/lib/hearth with its modes, /etc/hearth (install.toml: the settings; "
    "credentials/: the secret files; missions/: the timers; channels.toml: the chat channels' unit), the "
    "polkit rule that lets hearth start its runs; then reloads systemd, starts the path unit, the timers "
    "and the services, and applies install.toml's [users]. Running it again "
    "changes only what differs. docs/debian.md has the whole set-up. "
    "exit codes: 0 installed (or nothing to do), 1 a step failed, 2 bad usage"
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "install", help="install hearth's systemd units, user and state directory", epilog=INSTALL_EPILOG
    )
    p.add_argument("--systemd", action="store_true", help="install for systemd (the only kind there is)")
    _common(p)
    p.set_defaults(handler=install)
    u = sub.add_parser(
        "uninstall",
        help="stop and remove hearth's units and rules (the state, /etc/hearth and the user stay)",
        epilog="exit codes: 0 removed (or nothing to remove), 1 a step failed",
    )
    _common(u)
    u.set_defaults(handler=uninstall)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dry-run", action="store_true", help="print what would be written, change nothing")
    p.add_argument("--root", type=Path, default=Path("/"), help="install into this root file system (default /)")
    p.add_argument("--json", action="store_true", help="print {root, dry_run, changes, started} as JSON")


def _programs() -> tuple[str, str]:
    from hearth.install.plan import InstallError

    """The hearth and hearth-loop the units run: this interpreter's own (its venv's bin), else on PATH."""
    found = []
    for name in ("hearth", "hearth-loop"):
        beside = Path(sys.executable).parent / name
        path = str(beside) if beside.exists() else shutil.which(name)
        if path is None:
            raise InstallError(f"cannot find {name} beside {sys.executable} or on PATH; install hearth first")
        found.append(str(Path(path).absolute()))
    return found[0], found[1]


def install(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.install.plan import TMPFILES, File, enabled, read_config, steps
    from hearth.install.system import Root, describe, systemd_running
    from hearth.install.units import Renderer
    from hearth.render import print_json

    if not args.systemd:
        raise UsageError("say which kind: hearth install --systemd")
    root = Root(args.root)
    config = read_config(args.root, *_programs())
    todo = [step for step in steps(config) if root.pending(step)]
    for step in todo:
        if not args.json:
            print(("would make " if args.dry_run else "made ") + describe(step))
        if args.dry_run and not args.json and isinstance(step, File) and not step.secret and step.text:
            print("".join(f"    {line}\n" for line in step.text.splitlines()), end="")
        if not args.dry_run:
            root.apply(step)
    units = enabled(Renderer(config).units())
    started = systemd_running(root) and not args.dry_run
    if started:
        _systemctl("daemon-reload")
        _run(["systemd-tmpfiles", "--create", TMPFILES])
        again = _again(units, todo)
        _systemctl("start", *[u for u in units if u not in again])
        if again:
            _systemctl("restart", *again)
    if args.json:
        changes = [describe(step) for step in todo]
        print_json(
            {"root": str(args.root), "dry_run": args.dry_run, "changes": changes, "started": units if started else []}
        )
    elif not todo:
        print(f"hearth is installed in {args.root}: nothing to change")
    if not started and not args.dry_run and not args.json:
        print(f"start them when this root boots (they are enabled): {' '.join(units)}")
    return 0


def _again(units: list[str], todo: list[Step]) -> list[str]:
    """The units `start` would leave as they are but that must act on what changed: the users'
    apply (its declaration may have changed; applying is idempotent) and the channels when their
    unit changed (a running `hearth channels` would go on with the old one)."""
    from hearth.install.plan import File

    changed = {Path(step.path).name for step in todo if isinstance(step, File)}
    return [u for u in units if u == "hearth-users.service" or (u == "hearth-channels.service" and u in changed)]


def uninstall(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.install.system import Root, ours, systemd_running
    from hearth.render import print_json

    root = Root(args.root)
    found = list(ours(root))
    live = systemd_running(root) and not args.dry_run
    if live:
        # a template (hearth-agent@.service) is no unit to stop: its instances are, by the pattern
        units = {".path", ".timer", ".service"}
        names = [p.name for p in found if p.parent.name == "system" and p.suffix in units and not p.stem.endswith("@")]
        _systemctl("stop", "hearth-agent@*.service", *names)
    for path in found:
        if not args.json:
            print(("would remove " if args.dry_run else "removed ") + str(path))
        if not args.dry_run:
            path.unlink()
    if live:
        _systemctl("daemon-reload")
    if args.json:
        print_json({"root": str(args.root), "dry_run": args.dry_run, "removed": [str(p) for p in found]})
        return 0
    if not found:
        print(f"no hearth units in {args.root}: nothing to remove")
    print(f"kept: the state ({root.at('/var/lib/hearth')}), /etc/hearth, the hearth user and groups")
    return 0


def _systemctl(*args: str) -> None:
    _run(["systemctl", *args])


def _run(command: list[str]) -> None:
    from hearth.install.plan import InstallError

    done = subprocess.run(command, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise InstallError(f"{' '.join(command)} failed: {said[-1] if said else f'exit {done.returncode}'}")
