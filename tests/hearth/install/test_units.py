"""One source for the units: the NixOS module and `hearth install --systemd` render the same directives.

Both render nix/units.toml; the module through nix/units.nix (evaluated here with nix-instantiate,
as tests/nix/test_units.py does), the installer through hearth/install/units.py. For the same host
values every unit must come out with the same sections, keys and values; only the installer adds an
[Install] section (NixOS links wantedBy itself).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from hearth.install.units import InstallConfig, Renderer
from tests.nixunits import VENV, evaluate, needs_nix, write_units

pytestmark = needs_nix

Directives = dict[str, Counter[tuple[str, str]]]


def directives(text: str) -> Directives:
    """section -> the multiset of (key, value) lines; order is the renderers' own business."""
    found: Directives = {}
    section = ""
    for line in text.splitlines():
        if line.startswith("["):
            section = line.strip("[]")
            found[section] = Counter()
        elif "=" in line:
            key, value = line.split("=", 1)
            found[section][(key, value)] += 1
    return found


def nixos(hearth: dict[str, Any], tmp: Path) -> dict[str, Directives]:
    files = write_units(evaluate(hearth, tmp), tmp / "units")
    return {name: directives(path.read_text()) for name, path in files.items()}


def installed(config: InstallConfig) -> dict[str, Directives]:
    found = {}
    for unit in Renderer(config).units():
        sections = directives(unit.text())
        sections.pop("Install", None)
        found[unit.name] = sections
    return found


def config_for(tmp: Path, **values: Any) -> InstallConfig:
    """The installer's values for the same host: the test venv's programs, the test's script dir."""
    return InstallConfig(
        hearth=f"{VENV}/bin/hearth", hearth_loop=f"{VENV}/bin/hearth-loop", script_dir=str(tmp / "scripts"), **values
    )


def assert_same(nix: dict[str, Directives], ours: dict[str, Directives]) -> None:
    assert set(nix) == set(ours), f"units only in NixOS: {set(nix) - set(ours)}; only installed: {set(ours) - set(nix)}"
    for name in nix:
        for section in set(nix[name]) | set(ours[name]):
            theirs, mine = nix[name].get(section, Counter()), ours[name].get(section, Counter())
            assert theirs == mine, (
                f"{name} [{section}] differs: only NixOS {dict(theirs - mine)}; only installed {dict(mine - theirs)}"
            )


def test_a_bare_enable_and_a_bare_install_render_the_same_units(tmp_path: Path) -> None:
    assert_same(nixos({"enable": True}, tmp_path), installed(config_for(tmp_path)))


def test_web_schedules_credentials_and_bwrap_render_the_same_in_both(tmp_path: Path) -> None:
    hearth = {
        "enable": True,
        "sandbox": "bwrap",
        "ollama": {"url": "http://10.0.0.5:11434"},
        "defaultModel": "llama3.1",
        "agentAddressAllow": ["192.0.2.7"],
        "credentials": {"github": {"file": "/etc/hearth/secrets/github", "hosts": ["api.github.com"]}},
        "schedules": {"daily-notes": {"goal": "Summarise", "onCalendar": "*-*-* 06:00:00"}},
        "selfTest": {"onCalendar": None},
        "web": {"enable": True, "port": 8771, "operatorTokenFile": "/etc/hearth/web/operator-token"},
        "limits": {"memoryMax": "4G", "tasksMax": 300, "runtimeMaxSec": 600},
    }
    ours = config_for(
        tmp_path,
        sandbox="bwrap",
        ollama_url="http://10.0.0.5:11434",
        model="llama3.1",
        agent_address_allow=("192.0.2.7",),
        credentials={"github": "/etc/hearth/secrets/github"},
        schedules={"daily-notes": "*-*-* 06:00:00"},
        self_test_calendar=None,
        web=True,
        web_port=8771,
        operator_token_file="/etc/hearth/web/operator-token",
        memory_max="4G",
        tasks_max=300,
        runtime_max_sec=600,
    )
    assert_same(nixos(hearth, tmp_path), installed(ours))


def test_the_schedule_script_is_the_modules(tmp_path: Path) -> None:
    result = evaluate({"enable": True, "schedules": {"hourly": {"goal": "g", "onCalendar": "hourly"}}}, tmp_path)
    assert Renderer(config_for(tmp_path)).schedule_script("hourly") == result["scripts"]["hearth-schedule-hourly"]


def test_every_installed_unit_names_a_source_directive_only_once_per_key_kind() -> None:
    # a key units.toml gives a list is written as repeated lines, a scalar exactly once
    for unit in Renderer(InstallConfig(web=True, schedules={"x": "hourly"})).units():
        lines = [line.split("=", 1)[0] for line in unit.text().splitlines() if "=" in line]
        # (PathExistsGlob is a list: the path unit watches requests and wake-ups)
        scalars = {"Type", "User", "ExecStart", "ProtectSystem", "UMask", "OnCalendar", "Unit", "OnBootSec"}
        for key in scalars & set(lines):
            assert lines.count(key) == 1, f"{unit.name}: {key} written {lines.count(key)} times"


@pytest.mark.parametrize(
    ("url", "allow"), [("http://127.0.0.1:11434", ["localhost"]), ("http://[::1]:1", ["localhost"])]
)
def test_the_model_servers_loopback_address_is_allowed_as_localhost(url: str, allow: list[str]) -> None:
    agent = Renderer(InstallConfig(ollama_url=url)).agent()
    assert agent.body["IPAddressAllow"] == allow


def test_declared_users_and_the_telegram_channel_render_the_same_in_both(tmp_path: Path) -> None:
    hearth = {
        "enable": True,
        "users": {
            "ada": {
                "role": "operator",
                "tokenFiles": ["/etc/hearth/credentials/ada-token"],
                "keys": {"laptop": {"file": "/etc/hearth/credentials/ada-laptop"}},
            }
        },
        "channels": {"telegram": {"enable": True, "tokenFile": "/etc/hearth/credentials/telegram-token"}},
    }
    users = {
        "ada": {
            "role": "operator",
            "token_files": ["/etc/hearth/credentials/ada-token"],
            "keys": {"laptop": {"file": "/etc/hearth/credentials/ada-laptop"}},
        }
    }
    ours = config_for(
        tmp_path,
        channels=True,
        channel_credentials={"telegram-token": "/etc/hearth/credentials/telegram-token"},
        users=users,
    )
    nix = nixos(hearth, tmp_path)
    # the declaration is a file in the store there, /etc/hearth/users.json here
    start = ("ExecStart", f"{VENV}/bin/hearth users apply {tmp_path}/scripts/hearth-users.json")
    assert nix["hearth-users.service"]["Service"].pop(start) == 1
    nix["hearth-users.service"]["Service"][("ExecStart", f"{VENV}/bin/hearth users apply /etc/hearth/users.json")] = 1
    assert_same(nix, installed(ours))
