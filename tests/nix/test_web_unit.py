"""services.hearth.web: its own hardened unit, tokens by LoadCredential, refused beyond loopback without one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.nixunits import NixError, evaluate, exposure, needs_nix, needs_systemd_analyze, verify, write_units

pytestmark = [needs_nix, needs_systemd_analyze]

WEB = {
    "enable": True,
    "listenAddress": "0.0.0.0",
    "port": 8080,
    "allowedHosts": ["hearth.lan"],
    "operatorTokenFile": "/run/secrets/hearth-operator",
    "viewerTokenFile": "/run/secrets/hearth-viewer",
    "openFirewall": True,
}


def _evaluate(tmp: Path, **web: Any) -> dict[str, Any]:
    return evaluate({"enable": True, "web": web}, tmp)


def test_the_web_unit_verifies_silently_and_is_as_tight_as_the_agent_units(tmp_path: Path) -> None:
    files = write_units(_evaluate(tmp_path, **WEB), tmp_path / "units")
    done = verify(list(files.values()))
    assert done.returncode == 0 and done.stdout + done.stderr == "", done.stdout + done.stderr
    assert exposure(files["hearth-web.service"]) <= 1.5  # the agent units' bound


def test_the_web_unit_gets_its_tokens_as_credentials_and_its_flags(tmp_path: Path) -> None:
    files = write_units(_evaluate(tmp_path, **WEB), tmp_path / "units")
    lines = files["hearth-web.service"].read_text().splitlines()
    [start] = [line for line in lines if line.startswith("ExecStart=")]
    assert start.endswith("bin/hearth serve --host 0.0.0.0 --port 8080 --allowed-host hearth.lan")
    assert "LoadCredential=operator-token:/run/secrets/hearth-operator" in lines
    assert "LoadCredential=viewer-token:/run/secrets/hearth-viewer" in lines
    assert "ReadOnlyPaths=-/var/lib/hearth/state" in lines and "InaccessiblePaths=-/var/lib/hearth/credentials" in lines
    assert "User=hearth" in lines and "NoNewPrivileges=true" in lines and "CapabilityBoundingSet=" in lines


def test_the_firewall_opens_only_when_asked_and_stop_is_allowed_for_agent_units_only(tmp_path: Path) -> None:
    config = _evaluate(tmp_path, **WEB)["config"]
    assert config["networking"]["firewall"]["allowedTCPPorts"] == [8080]
    rules = config["security"]["polkit"]["extraConfig"]
    assert '"stop"' in rules and "hearth-agent@" in rules
    (tmp_path / "closed").mkdir()
    closed = _evaluate(tmp_path / "closed", enable=True)["config"]
    assert closed["networking"]["firewall"]["allowedTCPPorts"] == []


def test_no_web_unit_unless_enabled(tmp_path: Path) -> None:
    files = write_units(evaluate({"enable": True}, tmp_path), tmp_path / "units")
    assert "hearth-web.service" not in files


def test_a_public_listen_address_without_a_token_fails_the_build(tmp_path: Path) -> None:
    config = _evaluate(tmp_path, enable=True, listenAddress="0.0.0.0")["config"]
    failing = [a["message"] for a in config.get("assertions", []) if not a["assertion"]]
    if not failing:
        pytest.fail("no assertion failed for a public address without a token")
    assert any("needs operatorTokenFile or viewerTokenFile" in m for m in failing)


def test_a_wrong_port_type_names_the_option(tmp_path: Path) -> None:
    with pytest.raises(NixError, match="services.hearth.web.port"):
        _evaluate(tmp_path, enable=True, port="8080")
