"""The NixOS module as nixpkgs users expect it (evaluated without nixpkgs, tests/nixunits.py): extra
packages on the units' PATH, settings and environment for the HEARTH_* knobs, a package option,
the Ollama URL of services.ollama, a default model the host pulls, submitters who can read the
audit, and a package that installs completions and man pages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.nixunits import ROOT, VENV, evaluate, needs_nix, nix_eval

pytestmark = needs_nix


def units(result: dict[str, object]) -> dict[str, dict[str, object]]:
    return result["config"]["systemd"]["services"]  # type: ignore[index]


def test_every_unit_has_python3_and_the_extra_packages_on_its_path(tmp_path: Path) -> None:
    result = evaluate({"enable": True, "extraPackages": ["/stub/ripgrep"]}, tmp_path)
    for name, unit in units(result).items():
        assert "/stub/python3" in unit["path"] and "/stub/ripgrep" in unit["path"], name  # type: ignore[operator]


def test_settings_become_hearth_variables_and_environment_wins_over_them(tmp_path: Path) -> None:
    hearth = {
        "enable": True,
        "settings": {"approvalTimeoutSec": 900, "autoApprovedCommands": ["git", "ls"], "recallChars": 0},
        "environment": {"HEARTH_RECALL_CHARS": "4000", "HEARTH_LOG_LEVEL": "INFO"},
    }
    env = units(evaluate(hearth, tmp_path))["hearth-agent@"]["environment"]
    assert env["HEARTH_APPROVAL_TIMEOUT_S"] == "900" and env["HEARTH_AUTO_COMMANDS"] == "git,ls"  # type: ignore[index]
    assert env["HEARTH_RECALL_CHARS"] == "4000" and env["HEARTH_LOG_LEVEL"] == "INFO"  # type: ignore[index]
    plain = units(evaluate({"enable": True}, tmp_path))["hearth-spawn"]["environment"]
    assert not any(k in plain for k in ("HEARTH_APPROVAL_TIMEOUT_S", "HEARTH_AUTO_COMMANDS"))  # type: ignore[operator]


def test_the_ollama_url_is_the_one_services_ollama_serves_when_it_is_enabled(tmp_path: Path) -> None:
    assert evaluate({"enable": True}, tmp_path)["services"]["hearth"]["ollama"]["url"] == "http://127.0.0.1:11434"  # type: ignore[index]
    result = with_ollama(tmp_path / "served", {"enable": True, "host": "10.0.0.5", "port": 11500})
    assert result["services"]["hearth"]["ollama"]["url"] == "http://10.0.0.5:11500"
    assert units(result)["hearth-agent@"]["environment"]["OLLAMA_HOST"] == "http://10.0.0.5:11500"  # type: ignore[index]


def with_ollama(tmp: Path, ollama: dict[str, object]) -> dict[str, Any]:
    """The module's result next to an operator's own services.ollama."""
    tmp.mkdir()
    user = tmp / "user-config.json"
    user.write_text(json.dumps({"services": {"hearth": {"enable": True}, "ollama": ollama}}))
    return nix_eval(  # type: ignore[no-any-return]
        f"import {ROOT}/tests/nix/eval-module.nix {{ userConfig = builtins.fromJSON (builtins.readFile {user}); "
        f'hearthPkg = "{VENV}"; scriptDir = "{tmp}/scripts"; }}'
    )


def test_the_default_model_is_the_first_model_the_host_pulls(tmp_path: Path) -> None:
    pulled = evaluate({"enable": True, "ollama": {"enable": True, "models": ["qwen2.5-coder:7b"]}}, tmp_path)
    assert pulled["services"]["hearth"]["defaultModel"] == "qwen2.5-coder:7b"  # type: ignore[index]
    assert units(pulled)["hearth-agent@"]["environment"]["HEARTH_MODEL"] == "qwen2.5-coder:7b"  # type: ignore[index]
    assert evaluate({"enable": True}, tmp_path)["services"]["hearth"]["defaultModel"] == "qwen2.5-coder"  # type: ignore[index]
    example = (ROOT / "nix" / "example.nix").read_text()
    assert '"qwen2.5-coder:7b"' in example and "defaultModel" not in example  # the example relies on it


def test_submitters_can_read_the_audit_and_nothing_else_of_the_state(tmp_path: Path) -> None:
    config = evaluate({"enable": True, "submitters": ["alice"]}, tmp_path)["config"]
    rules = config["systemd"]["tmpfiles"]["rules"]  # type: ignore[index]
    assert "d /var/lib/hearth 2711 hearth hearth-submit - -" in rules
    assert "f /var/lib/hearth/audit.db 0640 hearth hearth-submit - -" in rules
    assert "d /var/lib/hearth/state 0750 hearth hearth - -" in rules  # live state stays hearth's
    assert config["environment"]["variables"]["HEARTH_STATE_DIR"] == "/var/lib/hearth"  # type: ignore[index]


def test_the_package_option_and_the_maintainers_are_declared_as_nixpkgs_does(tmp_path: Path) -> None:
    result = evaluate({"enable": False}, tmp_path)
    [package] = [o for o in result["options"] if o["path"] == "services.hearth.package"]  # type: ignore[union-attr]
    assert package["type"] == "package"
    assert "maintainers" in result["meta"]  # type: ignore[operator]
    module = (ROOT / "nix" / "module.nix").read_text()
    assert 'lib.mkPackageOption pkgs "hearth"' in module


def test_the_package_installs_completions_and_man_pages_generated_by_hearth() -> None:
    package = (ROOT / "nix" / "package.nix").read_text()
    for shell in ("bash", "zsh", "fish"):
        assert f"--{shell} <($out/bin/hearth completion {shell})" in package
    assert "installManPage hearth.1 hearth-loop.1" in package
    assert "maintainers = [ ]" in package and "commit ? null" in package
