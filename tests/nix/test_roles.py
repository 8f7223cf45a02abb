"""services.hearth's roles: an agent's home, heartbeat, review interval and switch written as hearth
reads them, and a heartbeat's timer and service rendered and verified (nix-instantiate, no nixpkgs)."""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path

from hearth.run.profiles import load_profile
from hearth.settings import Settings
from tests.nixunits import evaluate, needs_nix, needs_systemd_analyze, verify, write_units

pytestmark = needs_nix

ROLE = {"home": True, "heartbeat": "hourly", "strategicReview": "12h", "enabled": False}


def test_a_roles_settings_are_written_as_hearth_reads_them(tmp_path: Path) -> None:
    result = evaluate({"enable": True, "agents": {"household": ROLE, "scout": {}}}, tmp_path)
    assert [a["message"] for a in result["config"]["assertions"] if not a["assertion"]] == []
    etc = result["config"]["environment"]["etc"]
    text = etc["hearth/agents/household/agent.toml"]["text"]
    assert tomllib.loads(text) == {
        "name": "household",
        "home": True,
        "heartbeat": "hourly",
        "heartbeat_timer": "systemd",
        "strategic_review": "12h",
        "enabled": False,
    }
    assert tomllib.loads(etc["hearth/agents/scout/agent.toml"]["text"]) == {"name": "scout"}
    config = tmp_path / "etc-hearth"
    (config / "agents" / "household").mkdir(parents=True)
    (config / "agents" / "household" / "agent.toml").write_text(text)
    profile = load_profile(replace(Settings.from_env({}), config_dir=config).config_dir, "household")
    assert (profile.home, profile.heartbeat, profile.heartbeat_timer, profile.enabled) == (
        True,
        "hourly",
        "systemd",
        False,
    )


def test_a_heartbeat_without_a_home_or_named_like_a_schedule_fails_the_build(tmp_path: Path) -> None:
    result = evaluate(
        {
            "enable": True,
            "agents": {"loose": {"heartbeat": "daily"}, "household": ROLE},
            "schedules": {"heartbeat-household": {"onCalendar": "daily", "goal": "g"}},
        },
        tmp_path,
    )
    failed = [a["message"] for a in result["config"]["assertions"] if not a["assertion"]]
    assert "services.hearth.agents.loose.heartbeat needs home = true (a role wakes in its home)" in failed
    assert any("schedules.heartbeat-household has the name of agent household's heartbeat" in m for m in failed)


@needs_systemd_analyze
def test_a_heartbeat_is_a_timer_firing_the_roles_mission_with_the_audit_in_reach(tmp_path: Path) -> None:
    files = write_units(evaluate({"enable": True, "agents": {"household": ROLE}}, tmp_path), tmp_path / "units")
    timer = files["hearth-schedule-heartbeat-household.timer"].read_text().splitlines()
    assert "OnCalendar=hourly" in timer
    service = files["hearth-schedule-heartbeat-household.service"].read_text().splitlines()
    assert "ReadWritePaths=/var/lib/hearth" in service
    assert "InaccessiblePaths=-/var/lib/hearth/agents" in service
    script = (tmp_path / "scripts" / "hearth-schedule-heartbeat-household").read_text()
    assert script.rstrip().endswith("missions fire heartbeat-household")
    done = verify(list(files.values()))
    assert done.returncode == 0 and done.stdout + done.stderr == ""
