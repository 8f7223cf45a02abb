"""What the booted tests do to the machine: enqueue as a submitter, read runs as hearth, wait on a status."""

from __future__ import annotations

import json
import re
import time
from typing import Any

from tests.system.container import Container, wait_for

STATE = "/var/lib/hearth"

# the command center's /api/runs with a bearer token (argv[1]): prints the HTTP status
FETCH = (
    "import sys, urllib.request as u\n"
    "r = u.Request('http://127.0.0.1:8770/api/runs', headers={'Authorization': 'Bearer ' + sys.argv[1]})\n"
    "try: print(u.urlopen(r, timeout=10).status)\n"
    "except u.HTTPError as e: print(e.code)\n"
)


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
    _start(machine, "fake-model", "fake_model.py", 11434)


def start_fake_bot(machine: Container) -> None:
    """tests/system/fake_bot.py, the Telegram Bot API hearth-channels.service talks to, likewise."""
    _start(machine, "fake-bot", "fake_bot.py", 8081)


def _start(machine: Container, unit: str, script: str, port: int) -> None:
    machine.run(["systemd-run", f"--unit={unit}", "--setenv=PYTHONPATH=/opt/hearth-test",
                 "python3", f"/opt/hearth-test/{script}"])  # fmt: skip
    probe = f"import socket; socket.create_connection(('127.0.0.1', {port}), 1)"
    up = lambda: machine.run(["python3", "-c", probe], check=False).returncode == 0  # noqa: E731
    try:  # a loaded host starts a Python in the container slowly: the bound is generous
        wait_for(f"{unit} on 127.0.0.1:{port}", up, timeout=180)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{machine.systemctl('status', unit, check=False)}") from None


def channel_state(machine: Container) -> str:
    """The first channel's state as `hearth channels status` shows it ('' before it ever ran)."""
    found = json.loads(as_hearth(machine, "channels", "status", "--json"))
    return str(found[0]["state"]) if found else ""


def telegram_sent(machine: Container, chat: int) -> list[str]:
    """The texts hearth sent to a chat of the fake Bot API (tests/system/fake_bot.py records them)."""
    lines = machine.run(["cat", "/run/hearth-test/telegram-calls.jsonl"], check=False).stdout.splitlines()
    calls = [json.loads(line) for line in lines]
    return [
        str(c["params"].get("text"))
        for c in calls
        if c["method"] == "sendMessage" and str(c["params"].get("chat_id")) == str(chat)
    ]
