"""What the booted tests do to the machine: enqueue as a submitter, read runs as hearth, wait on a status."""

from __future__ import annotations

import json
import re
import time
from typing import Any

from tests.system.container import Container, wait_for

STATE = "/var/lib/hearth"


def enqueue(machine: Container, run_id: str, goal: str, *, mode: str = "auto") -> None:
    """A request from alice, who is in hearth-submit (docs/debian.md: how people submit)."""
    machine.run(["runuser", "-u", "alice", "--", "hearth", "enqueue", "--id", run_id, "--goal", goal, "--mode", mode])


def as_hearth(machine: Container, *args: str, check: bool = True) -> str:
    """An operator's hearth command, as the hearth user (it writes the audit, which is hearth's)."""
    return machine.run(["runuser", "-u", "hearth", "--", "hearth", *args], check=check).stdout


def show(machine: Container, run_id: str) -> dict[str, Any] | None:
    done = machine.run(["runuser", "-u", "hearth", "--", "hearth", "show", run_id, "--json"], check=False)
    if done.returncode != 0:
        return None
    found: dict[str, Any] = json.loads(done.stdout)
    return found.get("run", found)


def status(machine: Container, run_id: str) -> str | None:
    run = show(machine, run_id)
    return None if run is None else str(run.get("status"))


def explain(machine: Container, run_id: str) -> str:
    """What to read when a run did not get where a test waited for it to."""
    parts = [
        f"status: {status(machine, run_id)}",
        "queue: " + machine.run(["ls", "-R", f"{STATE}/queue"], check=False).stdout,
        machine.run(["journalctl", "--no-pager", "-n", "25", "-u", f"hearth-agent@{run_id}"], check=False).stdout,
        machine.run(["journalctl", "--no-pager", "-n", "25", "-u", "hearth-spawn.service"], check=False).stdout,
        machine.systemctl("status", "hearth-spawn.path", check=False),
    ]
    return "\n".join(parts)


def wait_status(machine: Container, run_id: str, wanted: set[str], timeout: float = 180.0) -> str:
    """Bounded poll until the run's recorded status is one of `wanted`; fail with the journals."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = status(machine, run_id)
        if found in wanted:
            return found
        time.sleep(0.5)
    raise AssertionError(f"run {run_id} never reached {sorted(wanted)} in {timeout:.0f} s\n{explain(machine, run_id)}")


def unit_state(machine: Container, unit: str) -> str:
    return machine.systemctl("is-active", unit, check=False).strip()


def wait_active(machine: Container, run_id: str, timeout: float = 120.0) -> int:
    """The run's unit is up and its model call is waiting: its MainPID (in the container's pid space)."""
    unit = f"hearth-agent@{run_id}.service"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if unit_state(machine, unit) == "active" and status(machine, run_id) == "running":
            return int(machine.systemctl("show", "-p", "MainPID", "--value", unit).strip())
        time.sleep(0.5)
    raise AssertionError(f"{unit} never became active with a running run\n{explain(machine, run_id)}")


def release(machine: Container, name: str) -> None:
    machine.run(["touch", f"/run/hearth-test/release-{name}"])


def proc_status(machine: Container, pid: int) -> dict[str, str]:
    text = machine.run(["cat", f"/proc/{pid}/status"]).stdout
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


def exposure(text: str) -> float:
    found = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", text)
    if not found:
        raise AssertionError(f"no exposure score in: {text[-500:]}")
    return float(found.group(1))


def start_fake_model(machine: Container) -> None:
    """tests/system/fake_model.py as a transient unit (gone at a reboot: start it again after one)."""
    machine.run(["systemd-run", "--unit=fake-model", "--setenv=PYTHONPATH=/opt/hearth-test",
                 "python3", "/opt/hearth-test/fake_model.py"])  # fmt: skip
    probe = "import socket; socket.create_connection(('127.0.0.1', 11434), 1)"
    up = lambda: machine.run(["python3", "-c", probe], check=False).returncode == 0  # noqa: E731
    wait_for("the fake model on 127.0.0.1:11434", up)
