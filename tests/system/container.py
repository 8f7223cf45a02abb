"""A Debian root booted with systemd-nspawn, driven from outside with nsenter: the booted tests' machine.

This host has no systemd as PID 1, so nspawn runs with `--register=no --keep-unit` (no machined, no
system bus to ask) and the container's init is found as nspawn's child. `--private-network` gives
the container a network namespace of its own with only loopback: the fake model server and the
command center listen there and nowhere else. Every wait is a bounded poll on a condition.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path


class ContainerError(Exception):
    """The container did not boot, or a command in it failed; str() has what it said."""


def wait_for(what: str, check: Callable[[], bool], timeout: float = 60.0, every: float = 0.25) -> None:
    """Poll `check` until it is true; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


class Container:
    def __init__(self, root: Path, log: Path) -> None:
        self.root = root
        self.log = log
        self.nspawn: subprocess.Popen[bytes] | None = None
        self.pid = 0

    def boot(self, timeout: float = 120.0) -> None:
        with self.log.open("ab") as out:
            self.nspawn = subprocess.Popen(
                ["systemd-nspawn", "-b", "--register=no", "--keep-unit", "--private-network",
                 "--console=passive", "-D", str(self.root)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        # scripts/test-system.sh's trap powers off whatever this names if the tests cannot
        (self.log.parent / "nspawn.pid").write_text(f"{self.nspawn.pid}\n")
        wait_for("systemd-nspawn to start the container's init", self._found_init, timeout=30)
        # multi-user.target, not is-system-running: while hearth is paused with a request waiting,
        # hearth-spawn.service (a oneshot waiting for the resume) keeps the manager "starting"
        wait_for("multi-user.target", lambda: self.active("multi-user.target"), timeout=timeout, every=0.5)
        failed = self.run(["systemctl", "--failed", "--no-legend", "--plain"], check=False).stdout.strip()
        if failed:
            raise ContainerError(f"the container booted with failed units:\n{failed}")

    def active(self, unit: str) -> bool:
        return self.run(["systemctl", "is-active", unit], check=False).stdout.strip() == "active"

    def state(self) -> str:
        return self.run(["systemctl", "is-system-running"], check=False).stdout.strip()

    def _found_init(self) -> bool:
        assert self.nspawn is not None
        if self.nspawn.poll() is not None:
            raise ContainerError(f"systemd-nspawn exited {self.nspawn.returncode}; see {self.log}: {self.tail()}")
        children = Path(f"/proc/{self.nspawn.pid}/task/{self.nspawn.pid}/children").read_text().split()
        for child in children:
            if Path(f"/proc/{child}/comm").read_text().strip() == "systemd":
                self.pid = int(child)
                return True
        return False

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-1500:] if self.log.exists() else ""

    def run(
        self, command: list[str], *, check: bool = True, timeout: float = 120.0, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """`command` as root inside the container (all its namespaces, its root and cgroup)."""
        done = subprocess.run(
            ["nsenter", "-t", str(self.pid), "-a", "--", *command],
            capture_output=True, text=True, timeout=timeout, input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            env={"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"},
        )  # fmt: skip
        if check and done.returncode != 0:
            raise ContainerError(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}{done.stderr}")
        return done

    def sh(self, script: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
        return self.run(["sh", "-c", script], **kwargs)  # type: ignore[arg-type]

    def systemctl(self, *args: str, check: bool = True) -> str:
        return self.run(["systemctl", "--no-pager", *args], check=check).stdout

    def reboot(self, timeout: float = 120.0) -> None:
        """`systemctl reboot` inside; nspawn ends with it (nothing restarts it here), so boot again."""
        assert self.nspawn is not None
        self.run(["systemctl", "reboot"], check=False)
        try:
            self.nspawn.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise ContainerError(f"the container did not go down within {timeout:.0f} s of systemctl reboot") from None
        self.boot(timeout)

    def stop(self, timeout: float = 60.0) -> None:
        """Power the container off (SIGTERM to nspawn is a clean shutdown), SIGKILL if it hangs."""
        if self.nspawn is None or self.nspawn.poll() is not None:
            return
        self.nspawn.send_signal(signal.SIGTERM)
        try:
            self.nspawn.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.nspawn.pid, signal.SIGKILL)
            self.nspawn.wait(timeout=30)


def copy_root(source: Path, target: Path) -> None:
    """A throwaway copy of the cached root (reflinks where the file system has them)."""
    if target.exists():
        shutil.rmtree(target)
    subprocess.run(["cp", "-a", "--reflink=auto", str(source), str(target)], check=True, timeout=600)
