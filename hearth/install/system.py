"""Carrying an install plan out on a root directory: `/` on a real host, any directory for tests and images.

On `/` accounts are made with groupadd/useradd (the distribution's own tools, which keep their
locks and caches right) and a running systemd is told (daemon-reload, tmpfiles, start); on any other
root the account files are edited directly and nothing is started, so a test or an image build needs
no privileges over the host. Every step is checked first, so running it twice changes nothing.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

from hearth.atomic import write_atomic
from hearth.install.plan import HEADER, POLKIT, TMPFILES, UNIT_DIR, Account, Directory, File, InstallError, Link, Step

NOLOGIN = "/usr/sbin/nologin"
SYSTEM_IDS = range(999, 99, -1)  # useradd --system counts down from SYS_UID_MAX


class Root:
    """One root file system and its account files."""

    def __init__(self, path: Path, run: Callable[[list[str]], None] | None = None) -> None:
        self.path = path
        self.live = path.resolve() == Path("/")
        self._run = run or _run

    def at(self, path: str) -> Path:
        return self.path / path.lstrip("/")

    def _table(self, name: str) -> list[list[str]]:
        file = self.at(f"/etc/{name}")
        return [line.split(":") for line in file.read_text().splitlines() if line] if file.exists() else []

    def ids(self, name: str, table: str) -> int | None:
        return next((int(row[2]) for row in self._table(table) if row[0] == name), None)

    def members(self, group: str) -> list[str]:
        row = next((r for r in self._table("group") if r[0] == group), None)
        return [m for m in row[3].split(",") if m] if row and len(row) > 3 else []

    def pending(self, step: Step) -> bool:
        if isinstance(step, Account):
            if step.kind == "group":
                return self.ids(step.name, "group") is None
            return self.ids(step.name, "passwd") is None or any(
                step.name not in self.members(g) for g in step.groups[1:]
            )
        target = self.at(step.path)
        if isinstance(step, Link):
            return not target.is_symlink() or os.readlink(target) != step.target
        if not target.exists():
            return True
        info = target.stat()
        if (info.st_mode & 0o7777) != step.mode or (
            os.geteuid() == 0 and self._owner(target) != (step.user, step.group)
        ):
            return True
        return isinstance(step, File) and not step.keep and target.read_text() != step.text

    def _owner(self, path: Path) -> tuple[str, str]:
        info = path.stat()
        user = next((r[0] for r in self._table("passwd") if int(r[2]) == info.st_uid), str(info.st_uid))
        group = next((r[0] for r in self._table("group") if int(r[2]) == info.st_gid), str(info.st_gid))
        return user, group

    def apply(self, step: Step) -> None:
        if isinstance(step, Account):
            self._account(step)
        elif isinstance(step, Link):
            target = self.at(step.path)
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_symlink() or target.exists():
                target.unlink()
            target.symlink_to(step.target)
        else:
            self._file(step)

    def _file(self, step: Directory | File) -> None:
        target = self.at(step.path)
        if isinstance(step, Directory):
            target.mkdir(parents=True, exist_ok=True)
        elif not (step.keep and target.exists()):
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(target, step.text.encode())
        if os.geteuid() == 0:
            uid, gid = self.ids(step.user, "passwd"), self.ids(step.group, "group")
            if uid is None or gid is None:
                raise InstallError(f"{step.path}: no user {step.user} or group {step.group} in {self.at('/etc')}")
            os.chown(target, uid, gid)
        target.chmod(step.mode)  # after chown, which clears the setgid bit

    def _account(self, step: Account) -> None:
        if self.live:
            self._run(_account_command(step, exists=self.ids(step.name, "passwd") is not None))
            return
        if step.kind == "group":
            self._append("group", f"{step.name}:x:{self._free_id('group')}:")
            self._append("gshadow", f"{step.name}:!::", only_if_exists=True)
            return
        if self.ids(step.name, "passwd") is None:
            gid = self.ids(step.groups[0], "group")
            self._append(
                "passwd", f"{step.name}:x:{self._free_id('passwd')}:{gid}:hearth agent appliance:{step.home}:{NOLOGIN}"
            )
            self._append("shadow", f"{step.name}:!*:::::::", only_if_exists=True)
        for group in step.groups[1:]:
            if step.name not in self.members(group):
                self._add_member(group, step.name)

    def _free_id(self, table: str) -> int:
        taken = {int(row[2]) for row in self._table(table)}
        return next(i for i in SYSTEM_IDS if i not in taken)

    def _append(self, name: str, line: str, *, only_if_exists: bool = False) -> None:
        file = self.at(f"/etc/{name}")
        if only_if_exists and not file.exists():
            return
        text = file.read_text() if file.exists() else ""
        _rewrite(file, text + ("" if text.endswith("\n") or not text else "\n") + line + "\n")

    def _add_member(self, group: str, user: str) -> None:
        for name in ("group", "gshadow"):
            file = self.at(f"/etc/{name}")
            if not file.exists():
                continue
            rows = [line.split(":") for line in file.read_text().splitlines() if line]
            for row in rows:
                if row[0] == group:
                    row[-1] = ",".join([m for m in row[-1].split(",") if m] + [user])
            _rewrite(file, "".join(":".join(row) + "\n" for row in rows))


def _rewrite(file: Path, text: str) -> None:
    """An account file replaced whole, keeping its mode (0644 passwd, 0640 shadow)."""
    mode = file.stat().st_mode & 0o7777 if file.exists() else 0o644
    write_atomic(file, text.encode())
    file.chmod(mode)


def _account_command(step: Account, *, exists: bool) -> list[str]:
    if step.kind == "group":
        return ["groupadd", "--system", step.name]
    if exists:
        return ["usermod", "--append", "--groups", ",".join(step.groups[1:]), step.name]
    return [
        "useradd", "--system", "--gid", step.groups[0], "--groups", ",".join(step.groups[1:]),
        "--home-dir", step.home, "--no-create-home", "--shell", NOLOGIN, "--comment", "hearth agent appliance", step.name,
    ]  # fmt: skip


def _run(command: list[str]) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise InstallError(f"{command[0]} is not installed; it is needed to {' '.join(command)}") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise InstallError(f"{' '.join(command)} failed: {said[-1] if said else f'exit {done.returncode}'}")


def describe(step: Step) -> str:
    if isinstance(step, Account):
        return f"{step.kind} {step.name}" + (
            f" (groups {', '.join(step.groups)}; home {step.home})" if step.home else ""
        )
    if isinstance(step, Link):
        return f"link {step.path} -> {step.target}"
    kind = "directory" if isinstance(step, Directory) else "file"
    return f"{kind} {step.path} ({step.mode:04o} {step.user}:{step.group})"


def systemd_running(root: Root) -> bool:
    return root.live and Path("/run/systemd/system").is_dir()


def ours(root: Root) -> Iterator[Path]:
    """The files an install wrote and an uninstall removes: units with our header, the links to them, the rules."""
    units = root.at(UNIT_DIR)
    for path in sorted(units.glob("hearth*")):
        if path.is_file() and path.read_text().startswith(HEADER):
            yield path
    for path in sorted(units.glob("*.wants/hearth*")):
        if path.is_symlink():
            yield path
    for name in (TMPFILES, POLKIT):
        if root.at(name).exists():
            yield root.at(name)
    yield from sorted(root.at("/usr/local/lib/hearth").glob("hearth-schedule-*"))
