"""`hearth users apply FILE` (hearth/users/declared.py, sync.py): a declaration of users made true in
a real audit, every change recorded as done by `config`, a second apply a no-op, users left out
disabled and never removed, the built-in users untouched, a bad declaration refused whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hearth.audit import operator
from hearth.audit.store import AuditStore
from hearth.doors.keys import digest as key_digest
from hearth.errors import ConfigError
from hearth.users import declared, roster, sync
from hearth.users.access import User, user_named, user_of_sender, user_with_token
from tests.conftest import run_cli

ADA_TOKEN = "ada-sign-in-token-0123456789"
ADA_KEY = "hk-ada-laptop-key-0123456789"


def _declaration(tmp: Path, text: str, name: str = "users.toml") -> Path:
    path = tmp / name
    path.write_text(text)
    return path


def _secrets(tmp: Path) -> Path:
    """A credentials directory as systemd's LoadCredential= makes it."""
    where = tmp / "credentials"
    where.mkdir(exist_ok=True)
    (where / "user-ada-token-1").write_text(ADA_TOKEN + "\n")
    (where / "user-ada-key-laptop").write_text(ADA_KEY + "\n")
    return where


ADA = """
[users.ada]
role = "operator"
default_profile = "builder"
memberships = { builder = ["launch", "approve"], "*" = ["approve"] }
token_files = ["user-ada-token-1"]
telegram = [123456789]
email = ["Ada@Example.org"]
[users.ada.keys.laptop]
file = "user-ada-key-laptop"
agents = ["builder"]
budget = 5000
[users.bea]
role = "owner"
"""


def _apply(audit: AuditStore, path: Path, credentials: Path | None = None) -> list[str]:
    changes = sync.plan(audit, declared.read(path, credentials), path)
    sync.apply(audit, changes, path)
    return [c.line for c in changes]


def _actions(audit: AuditStore) -> list[dict[str, Any]]:
    return operator.recent(audit, "users", 1000)


def test_an_apply_makes_the_declared_users_and_records_each_change_as_done_by_config(tmp_path: Path) -> None:
    path = _declaration(tmp_path, ADA)
    with AuditStore(tmp_path / "audit.db") as audit:
        lines = _apply(audit, path, _secrets(tmp_path))
        ada = user_named(audit, "ada")
        rights = frozenset({("builder", "launch"), ("builder", "approve"), ("*", "approve")})
        assert ada == User("ada", "operator", default_profile="builder", rights=rights)
        assert user_named(audit, "bea") == User("bea", "owner")
        assert user_with_token(audit, ADA_TOKEN) == ada
        assert user_of_sender(audit, "telegram", "123456789") == ada
        assert user_of_sender(audit, "email", "ada@example.org") == ada
        [key] = audit.rows("select * from api_keys where name = 'laptop'")
        assert (key["digest"], key["user"], key["budget_tokens"], key["created_by"]) == (
            key_digest(ADA_KEY),
            "ada",
            5000,
            "config",
        )
        recorded = _actions(audit)
        assert {r["by"] for r in recorded} == {"config"} and len(recorded) == len(lines) == 9
        assert all(str(path) in r["detail"] for r in recorded)
        assert ADA_TOKEN not in json.dumps(audit.rows("select * from user_tokens")) + json.dumps(recorded)


def test_a_second_apply_changes_nothing_and_records_nothing(tmp_path: Path) -> None:
    path = _declaration(tmp_path, ADA)
    credentials = _secrets(tmp_path)
    with AuditStore(tmp_path / "audit.db") as audit:
        _apply(audit, path, credentials)
        before = len(_actions(audit))
        assert _apply(audit, path, credentials) == []
        assert len(_actions(audit)) == before


def test_a_changed_declaration_changes_roles_memberships_identities_and_config_made_secrets(tmp_path: Path) -> None:
    credentials = _secrets(tmp_path)
    with AuditStore(tmp_path / "audit.db") as audit:
        _apply(audit, _declaration(tmp_path, ADA), credentials)
        by_hand = roster.new_token(audit, "ada", by="root")
        changed = ADA.replace(', "*" = ["approve"]', "").replace("token_files", "#").replace("123456789", "42")
        lines = _apply(
            audit,
            _declaration(tmp_path, changed.replace('role = "owner"', 'role = "viewer"\n[users.cy]\nrole = "owner"')),
            credentials,
        )
        assert "bea: role owner -> viewer" in lines and "ada: revoke approve in *" in lines
        assert user_with_token(audit, ADA_TOKEN) is None, "the token the declaration made and no longer names"
        assert user_with_token(audit, by_hand) is not None, "a token made by hand is left alone"
        assert user_of_sender(audit, "telegram", "123456789") is None
        assert user_of_sender(audit, "telegram", "42") == user_named(audit, "ada")


def test_a_user_left_out_is_disabled_never_removed_and_the_built_in_users_are_left_alone(tmp_path: Path) -> None:
    credentials = _secrets(tmp_path)
    with AuditStore(tmp_path / "audit.db") as audit:
        _apply(audit, _declaration(tmp_path, ADA), credentials)
        roster.add(audit, "dan", "viewer", by="root")
        lines = _apply(audit, _declaration(tmp_path, '[users.bea]\nrole = "owner"\n'), credentials)
        assert sorted(lines) == ["ada: disable not declared", "ada: drop_key laptop", "dan: disable not declared"]
        ada = user_named(audit, "ada")
        assert ada is not None and ada.disabled and ("builder", "launch") in ada.rights
        assert not audit.rows("select * from api_keys where name = 'laptop'"), "a key the declaration made goes"
        assert user_named(audit, "operator") == User("operator", "owner", built_in=True)
        assert user_named(audit, "viewer") == User("viewer", "viewer", built_in=True)


def test_a_declared_built_in_user_may_get_identities_but_keeps_its_role(tmp_path: Path) -> None:
    with AuditStore(tmp_path / "audit.db") as audit:
        _apply(audit, _declaration(tmp_path, '[users.operator]\nrole = "owner"\ntelegram = ["7"]\n'))
        assert user_of_sender(audit, "telegram", "7") == User("operator", "owner", built_in=True)
        with pytest.raises(ConfigError, match=r"\[users.viewer\] is built in and keeps its role \(viewer\)"):
            _apply(audit, _declaration(tmp_path, '[users.viewer]\nrole = "operator"\n'))


BAD = [
    ('[users.ada]\nrole = "admin"\n', r"\[users.ada\] role: 'admin' is not a role"),
    ('[users.ada]\nrole = "viewer"\ncolour = "red"\n', r"\[users.ada\]: unknown key 'colour'"),
    (
        '[users.ada]\nrole = "viewer"\nmemberships = { x = ["launch"] }\n',
        r"\[users.ada\] memberships: .*a viewer has none",
    ),
    (
        '[users.ada]\nrole = "operator"\nmemberships = { x = ["fly"] }\n',
        r"\[users.ada\] memberships.x: 'fly' is not a right",
    ),
    (
        '[users.ada]\nrole = "viewer"\ntoken_files = ["/nowhere/token"]\n',
        r"\[users.ada\] token_files: cannot read /nowhere/token",
    ),
    (
        '[users.ada]\nrole = "viewer"\ntoken_files = ["user-ada"]\n',
        r"\[users.ada\] token_files: cannot read .*/credentials/user-ada",
    ),
    ('[users.ada]\nrole = "viewer"\ntelegram = ["@ada"]\n', r"\[users.ada\] telegram: .*not a Telegram user id"),
    (
        '[users.ada]\nrole = "viewer"\ntelegram = ["5"]\n[users.bo]\nrole = "viewer"\ntelegram = ["5"]\n',
        r"both have identity telegram:5",
    ),
    ('[users.ada]\nrole = "viewer"\n[users.ada.keys.k]\nagents = []\n', r"\[users.ada\] keys.k.file: .* is required"),
    ('[users.Ada]\nrole = "viewer"\n', r"\[users.Ada\]: the name must be"),
    (
        '[users.ada]\nrole = "viewer"\n[users.operator]\nrole = "owner"\ndisabled = true\n',
        r"no enabled owner would be left",
    ),
    ("[users.ada\n", r"is not valid TOML"),
]


@pytest.mark.parametrize(("text", "said"), BAD, ids=[f"bad-{i}" for i in range(len(BAD))])
def test_a_bad_declaration_is_one_error_naming_the_file_user_and_key_and_nothing_is_applied(
    tmp_path: Path, text: str, said: str
) -> None:
    path = _declaration(tmp_path, ADA + "\n" + text if "[users.ada]" not in text else text)
    with AuditStore(tmp_path / "audit.db") as audit:
        before = audit.rows("select name, role, disabled from users"), len(_actions(audit))
        with pytest.raises(ConfigError, match=said) as refused:
            _apply(audit, path, _secrets(tmp_path))
        assert str(refused.value).startswith(str(path)) and "\n" not in str(refused.value)
        assert (audit.rows("select name, role, disabled from users"), len(_actions(audit))) == before


def test_the_cli_applies_a_json_declaration_with_credentials_by_name_and_refuses_a_bad_one_in_one_line(
    state_dir: Path, tmp_path: Path
) -> None:
    spec = {"users": {"ada": {"role": "operator", "token_files": ["user-ada-token-1"], "telegram": ["9"]}}}
    path = _declaration(tmp_path, json.dumps(spec), "users.json")
    env = {"CREDENTIALS_DIRECTORY": str(_secrets(tmp_path))}
    done = run_cli("hearth", "users", "apply", str(path), "--json", env=env)
    assert done.returncode == 0, done.stderr
    added, token, linked = json.loads(done.stdout)["changes"]
    assert (added, linked) == ("ada: add operator", "ada: link telegram:9") and token.startswith("ada: token tok-")
    again = run_cli("hearth", "users", "apply", str(path), env=env)
    assert again.returncode == 0 and again.stdout.strip() == f"users match {path}: nothing to change"
    spec["users"]["ada"]["role"] = "boss"
    path.write_text(json.dumps(spec))
    bad = run_cli("hearth", "users", "apply", str(path), env=env)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert f"{path}: [users.ada] role: 'boss' is not a role" in bad.stderr
