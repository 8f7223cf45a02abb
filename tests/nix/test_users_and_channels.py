"""services.hearth.users and services.hearth.channels: the declaration hearth-users.service applies
(tokens and keys as credentials, never in it), the channels' unit hardened as the web's with its
secret as a credential, channels.toml from the settings; each checked by systemd-analyze and by
hearth itself reading what the module wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hearth.audit.store import AuditStore
from hearth.channels.config import load_channels
from hearth.users.access import user_named, user_of_sender, user_with_token
from tests.conftest import run_cli
from tests.nixunits import NixError, evaluate, exposure, needs_nix, needs_systemd_analyze, verify, write_units

pytestmark = [needs_nix, needs_systemd_analyze]

ADA_TOKEN = "ada-token-from-a-secret-file-0001"
USERS = {
    "ada": {
        "role": "operator",
        "defaultProfile": "builder",
        "memberships": {"builder": ["launch", "approve"]},
        "tokenFiles": ["/run/secrets/hearth-ada"],
        "telegram": ["123456789"],
        "keys": {"laptop": {"file": "/run/secrets/hearth-ada-laptop", "agents": ["builder"], "budget": 9000}},
    },
    "bea": {"role": "owner", "email": ["bea@example.org"]},
}
TELEGRAM = {
    "enable": True,
    "tokenFile": "/run/secrets/hearth-telegram",
    "settings": {"api_url": "http://127.0.0.1:8081", "poll_s": 5},
}


def _evaluate(tmp: Path, **hearth: Any) -> dict[str, Any]:
    return evaluate({"enable": True, **hearth}, tmp)


def test_the_users_and_channels_units_verify_silently_and_the_channels_unit_is_as_tight_as_the_web_units(
    tmp_path: Path,
) -> None:
    result = _evaluate(tmp_path, users=USERS, channels={"telegram": TELEGRAM}, web={"enable": True})
    files = write_units(result, tmp_path / "units")
    done = verify(list(files.values()))
    assert done.returncode == 0 and done.stdout + done.stderr == "", done.stdout + done.stderr
    assert exposure(files["hearth-channels.service"]) <= exposure(files["hearth-web.service"])
    assert exposure(files["hearth-users.service"]) <= 1.5  # the agent units' bound


def test_secrets_reach_the_units_only_as_credentials_and_never_the_declaration(tmp_path: Path) -> None:
    result = _evaluate(tmp_path, users=USERS, channels={"telegram": TELEGRAM})
    files = write_units(result, tmp_path / "units")
    users = files["hearth-users.service"].read_text().splitlines()
    assert "LoadCredential=user-ada-token-1:/run/secrets/hearth-ada" in users
    assert "LoadCredential=user-ada-key-laptop:/run/secrets/hearth-ada-laptop" in users
    assert any(
        line.startswith("ExecStart=") and line.endswith("users apply " + str(tmp_path / "scripts/hearth-users.json"))
        for line in users
    )
    channels = files["hearth-channels.service"].read_text().splitlines()
    assert "LoadCredential=telegram-token:/run/secrets/hearth-telegram" in channels
    assert any(line.startswith("ExecStart=") and line.endswith("bin/hearth channels") for line in channels)
    assert "/run/secrets" not in result["declaration"] and "/run/secrets" not in json.dumps(
        result["config"]["environment"]
    )
    agent = files["hearth-agent@.service"].read_text()
    assert "hearth-ada" not in agent and "telegram" not in agent
    assert result["config"]["systemd"]["services"]["hearth-users"]["restartIfChanged"] is True


def test_the_declaration_the_module_writes_is_what_hearth_users_apply_makes_true(tmp_path: Path) -> None:
    """The module's JSON, applied as hearth-users.service would (its credentials in a directory)."""
    result = _evaluate(tmp_path, users=USERS)
    declaration = tmp_path / "hearth-users.json"
    declaration.write_text(result["declaration"])
    credentials = tmp_path / "credentials"
    credentials.mkdir()
    (credentials / "user-ada-token-1").write_text(ADA_TOKEN)
    (credentials / "user-ada-key-laptop").write_text("hk-ada-laptop-from-a-secret-file")
    env = {"HEARTH_STATE_DIR": str(tmp_path / "state"), "CREDENTIALS_DIRECTORY": str(credentials)}
    done = run_cli("hearth", "users", "apply", str(declaration), env=env)
    assert done.returncode == 0, done.stderr
    with AuditStore(tmp_path / "state/audit.db") as audit:
        ada = user_named(audit, "ada")
        assert ada is not None and ada.default_profile == "builder" and ("builder", "approve") in ada.rights
        assert user_with_token(audit, ADA_TOKEN) == ada and user_of_sender(audit, "telegram", "123456789") == ada
        assert user_of_sender(audit, "email", "bea@example.org") == user_named(audit, "bea")
        assert audit.rows("select budget_tokens from api_keys where name = 'laptop'")[0]["budget_tokens"] == 9000
    again = run_cli("hearth", "users", "apply", str(declaration), env=env)
    assert again.stdout.strip().endswith("nothing to change")


def test_channels_toml_from_the_settings_is_what_hearth_channels_reads(tmp_path: Path) -> None:
    result = _evaluate(tmp_path, channels={"telegram": TELEGRAM})
    config = tmp_path / "etc"
    config.mkdir()
    (config / "channels.toml").write_text(result["config"]["environment"]["etc"]["hearth/channels.toml"]["text"])
    credentials = tmp_path / "credentials"
    credentials.mkdir()
    (credentials / "telegram-token").write_text("123:bot-token")
    [telegram] = load_channels(config, credentials)
    assert (telegram.name, telegram.secret, telegram.get("api_url"), telegram.get("poll_s")) == (
        "telegram",
        "123:bot-token",
        "http://127.0.0.1:8081",
        5,
    )
    assert '"stop"' in result["config"]["security"]["polkit"]["extraConfig"], "/stop in a chat stops a run's unit"


def test_no_users_or_channels_unit_unless_declared(tmp_path: Path) -> None:
    result = _evaluate(tmp_path)
    files = write_units(result, tmp_path / "units")
    assert "hearth-users.service" not in files and "hearth-channels.service" not in files
    assert "hearth/channels.toml" not in result["config"]["environment"]["etc"]


def test_a_channel_without_its_secret_file_fails_the_build(tmp_path: Path) -> None:
    config = _evaluate(tmp_path, channels={"telegram": {"enable": True}})["config"]
    failing = [a["message"] for a in config.get("assertions", []) if not a["assertion"]]
    assert any("services.hearth.channels.telegram needs tokenFile" in m for m in failing), failing


@pytest.mark.parametrize(
    ("user", "option"),
    [
        ({"role": "admin"}, "services.hearth.users.ada.role"),
        ({"role": "operator", "memberships": {"x": ["fly"]}}, "services.hearth.users.ada.memberships.x"),
        ({"role": "viewer", "telegram": ["@ada"]}, "services.hearth.users.ada.telegram"),
        ({"defaultProfile": "builder"}, "services.hearth.users.ada.role"),
    ],
)
def test_a_bad_user_names_the_option(tmp_path: Path, user: dict[str, Any], option: str) -> None:
    with pytest.raises(NixError, match=option.replace(".", r"\.")):
        _evaluate(tmp_path, users={"ada": user})
