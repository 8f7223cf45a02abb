"""The units nix/module.nix renders: systemd-analyze verify (any output fails) and security scores."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hearth.queue.request import Request
from tests.conftest import run_cli
from tests.nixunits import ROOT, evaluate, exposure, needs_nix, needs_systemd_analyze, verify, write_units

pytestmark = [needs_nix, needs_systemd_analyze]

AGENT_MAX_EXPOSURE = 1.5
BWRAP_MAX_EXPOSURE = 2.0  # the agent unit with what bubblewrap needs (tests/system checks it live too)
SPAWN_MAX_EXPOSURE = 2.5
OTHER_MAX_EXPOSURE = 2.5  # self-test and schedule services run hearth code too

FULL = {
    "enable": True,
    "ollama": {"url": "http://127.0.0.1:11434", "enable": True, "models": ["qwen2.5-coder:7b"]},
    "agents": {"notes": {"mode": "auto", "allowedTools": ["read_file", "write_file"], "prompt": "Keep notes."}},
    "schedules": {
        "daily-notes": {"goal": "Summarise yesterday's runs", "agent": "notes", "onCalendar": "*-*-* 06:00:00"},
        "hourly": {"goal": "check disk", "onCalendar": "hourly", "mode": "plan", "model": "llama3.1"},
    },
    "credentials": {"github": {"file": "/run/secrets/github", "hosts": ["api.github.com"]}},
    "submitters": ["alice"],
    "selfTest": {"onCalendar": "daily"},
    "configRepo": "/etc/nixos",
}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("units")
    return write_units(evaluate(FULL, tmp), tmp / "units")


def test_every_rendered_unit_passes_systemd_analyze_verify_silently(rendered: dict[str, Path]) -> None:
    done = verify(list(rendered.values()))
    assert done.returncode == 0 and done.stdout == "" and done.stderr == "", done.stdout + done.stderr


def test_the_module_renders_the_queue_path_unit_spawn_agent_template_and_timers(rendered: dict[str, Path]) -> None:
    assert set(rendered) == {
        "hearth-agent@.service",
        "hearth-spawn.service",
        "hearth-spawn.path",
        "hearth-spawn.timer",
        "hearth-self-test.service",
        "hearth-self-test.timer",
        "hearth-schedule-daily-notes.service",
        "hearth-schedule-daily-notes.timer",
        "hearth-schedule-hourly.service",
        "hearth-schedule-hourly.timer",
    }
    path_unit = rendered["hearth-spawn.path"].read_text()
    assert "PathExistsGlob=/var/lib/hearth/queue/*.json" in path_unit and "Unit=hearth-spawn.service" in path_unit
    assert "OnCalendar=*-*-* 06:00:00" in rendered["hearth-schedule-daily-notes.timer"].read_text()
    assert "OnCalendar=daily" in rendered["hearth-self-test.timer"].read_text()
    assert "Type=oneshot" in rendered["hearth-spawn.service"].read_text()
    assert "bin/hearth spawn" in rendered["hearth-spawn.service"].read_text()
    assert "bin/hearth-loop --self-test" in rendered["hearth-self-test.service"].read_text()


def test_agent_unit_exposure_is_at_most_1_5(rendered: dict[str, Path]) -> None:
    assert exposure(rendered["hearth-agent@.service"]) <= AGENT_MAX_EXPOSURE


def test_spawn_unit_exposure_is_at_most_2_5(rendered: dict[str, Path]) -> None:
    assert exposure(rendered["hearth-spawn.service"]) <= SPAWN_MAX_EXPOSURE


@pytest.mark.parametrize("unit", ["hearth-self-test.service", "hearth-schedule-hourly.service"])
def test_other_services_are_hardened_too(rendered: dict[str, Path], unit: str) -> None:
    assert exposure(rendered[unit]) <= OTHER_MAX_EXPOSURE


def _service(rendered: dict[str, Path], name: str) -> list[str]:
    return rendered[name].read_text().splitlines()


def test_agent_unit_sees_only_its_own_workspace_and_never_the_credential_store(rendered: dict[str, Path]) -> None:
    lines = _service(rendered, "hearth-agent@.service")
    assert "TemporaryFileSystem=/var/lib/hearth/agents:ro" in lines
    assert "BindPaths=/var/lib/hearth/agents/%i" in lines
    assert "StateDirectory=hearth/agents/%i" in lines
    assert "InaccessiblePaths=-/var/lib/hearth/credentials" in lines
    assert "ProtectSystem=strict" in lines and "PrivateTmp=true" in lines and "CapabilityBoundingSet=" in lines
    # the only writable places: the state dir (audit, live state, histories, the queue where a
    # claimed entry is settled and a swarm queues its children) and the config repo's git dir;
    # what the spawner refused stays as it was
    assert [line for line in lines if line.startswith("ReadWritePaths=")] == [
        "ReadWritePaths=/var/lib/hearth",
        "ReadWritePaths=/etc/nixos/.git",
    ]
    assert [line for line in lines if line.startswith("ReadOnlyPaths=")] == [
        "ReadOnlyPaths=-/var/lib/hearth/queue/rejected"
    ]


def test_credentials_reach_only_the_agent_units(rendered: dict[str, Path]) -> None:
    holders = [name for name, path in rendered.items() if "LoadCredential=" in path.read_text()]
    assert holders == ["hearth-agent@.service"]
    assert "LoadCredential=github:/run/secrets/github" in _service(rendered, "hearth-agent@.service")


def test_units_that_need_no_network_have_none(rendered: dict[str, Path]) -> None:
    for name in ("hearth-spawn.service", "hearth-self-test.service", "hearth-schedule-hourly.service"):
        lines = _service(rendered, name)
        assert "PrivateNetwork=true" in lines and "IPAddressDeny=any" in lines, name


def test_the_agent_unit_starts_after_a_local_ollama(rendered: dict[str, Path]) -> None:
    lines = _service(rendered, "hearth-agent@.service")
    assert "After=network.target ollama.service" in lines and "Wants=ollama.service" in lines


def _render(tmp: Path, **hearth: Any) -> dict[str, Path]:
    return write_units(evaluate({"enable": True, **hearth}, tmp), tmp / "units")


def test_bwrap_sandbox_relaxes_only_what_bubblewrap_needs_and_still_verifies(tmp_path: Path) -> None:
    files = _render(tmp_path, sandbox="bwrap")
    done = verify(list(files.values()))
    assert done.returncode == 0 and done.stdout + done.stderr == ""
    lines = _service(files, "hearth-agent@.service")
    assert "RestrictNamespaces=user mnt pid net ipc uts" in lines
    assert "NoNewPrivileges=true" in lines and "CapabilityBoundingSet=" in lines and "PrivateUsers=true" in lines
    # the unit's own /proc keeps every protection; the bare one bwrap needs is out of reach, the
    # workspace binds of the unit's own lists are still there beside it
    assert {"ProtectKernelTunables=true", "ProtectKernelLogs=true", "ProtectProc=invisible"} <= set(lines)
    assert {
        "TemporaryFileSystem=/var/lib/hearth/agents:ro",
        "TemporaryFileSystem=/run/hearth-proc:ro,mode=0000",
    } <= set(lines)
    assert "BindPaths=/proc:/run/hearth-proc/proc:norbind" in lines and "BindPaths=/var/lib/hearth/agents/%i" in lines
    assert not [line for line in lines if "AF_NETLINK" in line]
    assert exposure(files["hearth-agent@.service"]) <= BWRAP_MAX_EXPOSURE


def test_minimal_config_has_no_schedule_units_and_self_test_can_be_turned_off(tmp_path: Path) -> None:
    files = _render(tmp_path, selfTest={"onCalendar": None})
    assert set(files) == {"hearth-agent@.service", "hearth-spawn.service", "hearth-spawn.path", "hearth-spawn.timer"}
    lines = _service(files, "hearth-agent@.service")
    assert not [line for line in lines if line.startswith(("LoadCredential=", "Wants="))]
    assert [line for line in lines if line.startswith("ReadWritePaths=")] == ["ReadWritePaths=/var/lib/hearth"]


def _enqueue_available() -> bool:
    done = run_cli("hearth", "enqueue", "--help")
    return done.returncode == 0


def test_a_schedules_timer_service_enqueues_a_valid_request(rendered: dict[str, Path], tmp_path: Path) -> None:
    if not _enqueue_available():
        pytest.skip("`hearth enqueue` (the queue issue) is not in this tree yet")
    service = rendered["hearth-schedule-hourly.service"].read_text().splitlines()
    [exec_start] = [line.split("=", 1)[1] for line in service if line.startswith("ExecStart=")]
    env = dict(line.split("=", 1)[1].strip('"').split("=", 1) for line in service if line.startswith("Environment="))
    state = tmp_path / "state"
    (state / "queue").mkdir(parents=True)
    for name, entry in evaluate(FULL, tmp_path)["config"]["environment"]["etc"].items():  # /etc/hearth
        if name.startswith("hearth/") and "text" in entry:
            (tmp_path / "etc" / name.removeprefix("hearth/")).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / "etc" / name.removeprefix("hearth/")).write_text(entry["text"])
    env = {
        **os.environ,
        **env,
        "HEARTH_STATE_DIR": str(state),
        "HEARTH_CONFIG_DIR": str(tmp_path / "etc"),
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run([exec_start], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    [queued] = list((state / "queue").glob("*.json"))
    request = json.loads(queued.read_text())
    assert request["goal"] == "check disk" and "timer" in request.values()
    assert "plan" in request.values() and "llama3.1" in request.values()
    Request.model_validate(request)  # what the timer queued is a request the queue's own model reads
    assert request["requested_by"] == "mission:hourly"
    # paused, the same timer records a skip and enqueues nothing
    paused = run_cli("hearth", "missions", "pause", "hourly", env=env)
    assert paused.returncode == 0, paused.stderr
    for path in (state / "queue").glob("*.json"):
        path.unlink()
    skipped = subprocess.run([exec_start], env=env, capture_output=True, text=True, timeout=60)
    assert skipped.stdout.strip() == "mission hourly is paused: skipped"
    assert list((state / "queue").glob("*.json")) == []
    assert json.loads((state / "missions" / "hourly.json").read_text())["skipped"] == 1


def test_the_agent_unit_reaches_only_ollama_unless_the_operator_adds_more(
    rendered: dict[str, Path], tmp_path: Path
) -> None:
    lines = _service(rendered, "hearth-agent@.service")
    assert "IPAddressDeny=any" in lines and [x for x in lines if x.startswith("IPAddressAllow=")] == [
        "IPAddressAllow=localhost"
    ]
    remote = _service(
        _render(tmp_path, ollama={"url": "http://10.0.0.7:11434"}, agentAddressAllow=["0.0.0.0/0"]),
        "hearth-agent@.service",
    )
    assert [x for x in remote if x.startswith("IPAddressAllow=")] == [
        "IPAddressAllow=10.0.0.7",
        "IPAddressAllow=0.0.0.0/0",
    ]


def test_with_alerts_the_agent_unit_reaches_loopback_for_the_alert_senders_proxy(tmp_path: Path) -> None:
    alerts = {"destinations": {"phone": {"url": "ntfys://ntfy.example.org/hearth", "events": ["failed"]}}}
    remote = _service(
        _render(tmp_path, ollama={"url": "http://10.0.0.7:11434"}, alerts=alerts), "hearth-agent@.service"
    )
    assert [x for x in remote if x.startswith("IPAddressAllow=")] == [
        "IPAddressAllow=10.0.0.7",
        "IPAddressAllow=localhost",
    ]


def test_the_agent_unit_delegates_its_cgroup_for_the_commands_caps(rendered: dict[str, Path]) -> None:
    lines = _service(rendered, "hearth-agent@.service")
    assert "Delegate=pids memory cpu" in lines and "ProtectControlGroups=false" in lines
    assert 'Environment="HEARTH_CGROUP_DELEGATED=1"' in lines
    assert (
        'Environment="HEARTH_COMMAND_MAX_PROCS=256"' in lines and 'Environment="HEARTH_COMMAND_MEMORY_MB=1024"' in lines
    )
    assert 'Environment="HEARTH_TRIPWIRES=home"' in lines and 'Environment="HEARTH_TRIPWIRE_ACTION=stop"' in lines
    spawn = _service(rendered, "hearth-spawn.service")
    assert "ProtectControlGroups=true" in spawn and not [x for x in spawn if x.startswith("Delegate=")]


def test_command_caps_must_leave_hearth_room_in_the_unit(tmp_path: Path) -> None:
    result = evaluate({"enable": True, "limits": {"tasksMax": 100, "commandTasksMax": 100}}, tmp_path)
    failed = [a["message"] for a in result["config"]["assertions"] if not a["assertion"]]
    assert failed == [
        "services.hearth.limits.commandTasksMax must be below limits.tasksMax: hearth itself runs in the same unit"
    ]


@needs_systemd_analyze
def test_the_spawner_gets_the_network_only_for_alerts_on_refused_requests(tmp_path: Path) -> None:
    alerting = {
        **FULL,
        "credentials": {"ntfy": {"file": "/run/secrets/ntfy", "hosts": ["ntfy.example.org"]}},
        "alerts": {"destinations": {"phone": {"url": "ntfy://{cred:ntfy}@ntfy.example.org/h", "events": ["rejected"]}}},
    }
    units = write_units(evaluate(alerting, tmp_path), tmp_path / "units")
    spawn = units["hearth-spawn.service"].read_text()
    assert "PrivateNetwork" not in spawn and "RestrictAddressFamilies=AF_INET" in spawn.replace("AF_UNIX ", "")
    assert "LoadCredential=ntfy:/run/secrets/ntfy" in spawn
    assert exposure(units["hearth-spawn.service"]) <= SPAWN_MAX_EXPOSURE


def test_the_spawner_checks_request_owners_against_the_submitters_group_when_there_are_submitters(
    rendered: dict[str, Path], tmp_path: Path
) -> None:
    spawn = _service(rendered, "hearth-spawn.service")  # FULL has submitters
    assert 'Environment="HEARTH_SUBMITTERS_GROUP=hearth-submit"' in spawn
    assert "PrivateUsers=false" in spawn  # the real owner of each file, not nobody
    assert not any("HEARTH_SUBMITTERS_GROUP" in line for line in _service(rendered, "hearth-agent@.service"))
    alone = _service(_render(tmp_path), "hearth-spawn.service")
    assert not any("HEARTH_SUBMITTERS_GROUP" in line for line in alone) and "PrivateUsers=true" in alone
