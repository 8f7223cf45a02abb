"""Runs that go on, as the hearth-agent@ unit runs them: the spawner's fake `systemctl` starts each
`hearth agent ID` in the unit's environment and filesystem view (tests/unit_harness.py), killed
and started again, or suspended and woken, against tests/fake_ollama.py."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from hearth.locks import lock_holder, lock_is_held
from hearth.queue.directory import Queue
from hearth.queue.request import Request
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.hearth.dispatch.test_suspend_resume import Blocked, kinds, prefix_identical, run_of
from tests.nixunits import evaluate, needs_nix, write_units
from tests.queue_support import listing, wait_for
from tests.unit_harness import FakeSystemd, Host, needs_unit_view

pytestmark = [needs_nix, needs_unit_view]


@pytest.fixture(scope="module")
def agent_unit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("rendered")
    return write_units(evaluate({"enable": True}, tmp), tmp / "units")["hearth-agent@.service"]


def spawn(systemd: FakeSystemd, **extra: str) -> str:
    spawned = run_cli("hearth", "spawn", env={**systemd.env(), **extra})
    assert spawned.returncode == 0, spawned.stderr
    return spawned.stdout


def test_a_unit_killed_while_its_model_answers_goes_on_in_a_new_unit_once(
    state_dir: Path, tmp_path: Path, agent_unit: Path
) -> None:
    Queue(state_dir / "queue").ensure().enqueue(Request(id="unitkill", goal="list the files", mode="auto"))
    blocked = Blocked()
    with FakeOllama([tool_call("list_files", {}), blocked, final_answer("listed in a unit")]) as fake:
        systemd = FakeSystemd(tmp_path, agent_unit, Host(state_dir, tmp_path / "config", fake.url))
        spawn(systemd)
        assert blocked.reached.wait(120)
        pid = wait_for(lambda: lock_holder(state_dir / "queue" / "locks" / "unitkill.lock"), what="the run's pid")
        os.killpg(os.getpgid(pid), signal.SIGKILL)  # the unit's whole process tree, as systemctl kill does
        lock = state_dir / "queue" / "locks" / "unitkill.lock"
        wait_for(lambda: not lock_is_held(lock), what="the unit to end")
        out = spawn(systemd)  # what hearth-spawn.timer does at boot
        assert "resumed unitkill" in out, out
        wait_for(lambda: run_of(state_dir, "unitkill").get("status") == "done", timeout=120, what="the run to end")
    assert fake.requests[-1]["messages"] == blocked.bodies[0]["messages"]
    assert kinds(state_dir, "unitkill").count("model") == 2 and kinds(state_dir, "unitkill").count("tool") == 1
    assert sorted(p.name for p in (state_dir / "harness").glob("unitkill.start.*")) == [
        "unitkill.start.1",
        "unitkill.start.2",
    ]


def test_a_unit_whose_run_waits_for_approval_ends_and_a_new_one_goes_on_when_approved(
    state_dir: Path, tmp_path: Path, agent_unit: Path
) -> None:
    queue = Queue(state_dir / "queue").ensure()
    queue.enqueue(Request(id="unitask", goal="say hello", mode="auto"))
    echo = tool_call("run_command", {"command": "echo from-the-unit"})
    with FakeOllama([echo, final_answer("said it")]) as fake:
        systemd = FakeSystemd(tmp_path, agent_unit, Host(state_dir, tmp_path / "config", fake.url))
        spawn(systemd, HEARTH_SUSPEND_AFTER_S="0")
        marker = state_dir / "harness" / "unitask.exit"
        wait_for(marker.exists, timeout=120, what="the unit to end while its run waits")
        assert marker.read_text() == "0" and run_of(state_dir, "unitask")["status"] == "waiting"
        [pending] = json.loads(run_cli("hearth", "approvals", "--json").stdout)
        assert run_cli("hearth", "approve", pending["id"]).returncode == 0
        assert "unitask.resume" in listing(queue.root)
        assert "resumed unitask" in spawn(systemd)  # the path unit's job: a wake-up is waiting
        wait_for(lambda: run_of(state_dir, "unitask").get("status") == "done", timeout=120, what="the run to end")
    assert len(fake.requests) == 2 and prefix_identical(fake.requests[0], fake.requests[1])


def test_a_unit_killed_between_steps_goes_on_with_its_kept_result(
    state_dir: Path, tmp_path: Path, agent_unit: Path
) -> None:
    Queue(state_dir / "queue").ensure().enqueue(Request(id="unitstep", goal="list twice", mode="auto"))
    blocked = Blocked()
    script = [tool_call("list_files", {}), tool_call("list_files", {"path": "."}), blocked, final_answer("two")]
    with FakeOllama(script) as fake:
        systemd = FakeSystemd(tmp_path, agent_unit, Host(state_dir, tmp_path / "config", fake.url))
        spawn(systemd)
        assert blocked.reached.wait(120)  # both results kept, the next reply awaited
        lock = state_dir / "queue" / "locks" / "unitstep.lock"
        pid = wait_for(lambda: lock_holder(lock), what="the run's pid")
        os.killpg(os.getpgid(pid), signal.SIGKILL)
        wait_for(lambda: not lock_is_held(lock), what="the unit to end")
        assert "resumed unitstep" in spawn(systemd)
        wait_for(lambda: run_of(state_dir, "unitstep").get("status") == "done", timeout=120, what="the run to end")
    assert fake.requests[-1]["messages"] == blocked.bodies[0]["messages"]
    assert kinds(state_dir, "unitstep").count("tool") == 2


def test_a_unit_killed_while_its_command_runs_goes_on_without_running_it_again(
    state_dir: Path, tmp_path: Path, agent_unit: Path
) -> None:
    Queue(state_dir / "queue").ensure().enqueue(Request(id="unitcmd", goal="run it", mode="bypass"))
    command = tool_call("run_command", {"command": "echo once >> runs.log; sleep 60"})
    with FakeOllama([command, final_answer("looked at runs.log")]) as fake:
        systemd = FakeSystemd(tmp_path, agent_unit, Host(state_dir, tmp_path / "config", fake.url))
        spawn(systemd)
        log = state_dir / "agents" / "unitcmd" / "runs.log"
        wait_for(log.exists, timeout=120, what="the command to start")
        lock = state_dir / "queue" / "locks" / "unitcmd.lock"
        pid = wait_for(lambda: lock_holder(lock), what="the run's pid")
        os.killpg(os.getpgid(pid), signal.SIGKILL)
        wait_for(lambda: not lock_is_held(lock), what="the unit to end")
        assert "resumed unitcmd" in spawn(systemd)
        wait_for(lambda: run_of(state_dir, "unitcmd").get("status") == "done", timeout=120, what="the run to end")
    assert log.read_text() == "once\n"
    told = fake.requests[-1]["messages"][-1]
    assert told["role"] == "tool" and "outcome of this call is unknown" in told["content"]
