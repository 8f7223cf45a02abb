"""The one check (hearth/users/access.py) and the users' rows (hearth/users/roster.py), on a real
audit: roles, memberships, disabling, the built-in users the command center's tokens became, and
the refusals' words."""

from __future__ import annotations

from pathlib import Path

import pytest

from hearth.audit.store import AuditStore
from hearth.errors import NotFound, UsageError
from hearth.users import roster
from hearth.users.access import Forbidden, User, cli_user, digest, require, user_named, user_with_token
from tests.users_support import ACTS, PEOPLE, PROFILES, expected, make_box


def test_each_user_may_do_what_their_role_and_memberships_say_and_nothing_more(state_dir: Path) -> None:
    box = make_box(state_dir)
    with AuditStore(box.settings.audit_path) as audit:
        found = {
            (name, act, profile): user_named(audit, name).may(act, profile)  # type: ignore[union-attr]
            for name in PEOPLE
            for act in ACTS
            for profile in PROFILES
        }
    assert found == {case: expected(*case) for case in found}


def test_the_command_centers_two_tokens_are_two_built_in_users_after_the_migration(tmp_path: Path) -> None:
    with AuditStore(tmp_path / "audit.db") as audit:
        operator, viewer = user_named(audit, "operator"), user_named(audit, "viewer")
        assert operator == User("operator", "owner", built_in=True)
        assert viewer == User("viewer", "viewer", built_in=True)
        with pytest.raises(UsageError, match="built in"):
            roster.remove(audit, "operator")
        with pytest.raises(UsageError, match="last enabled owner"):
            roster.set_disabled(audit, "operator", True)


def test_a_token_is_kept_as_its_hash_and_finds_its_user_until_the_user_is_removed(tmp_path: Path) -> None:
    with AuditStore(tmp_path / "audit.db") as audit:
        token = roster.add(audit, "ada", "operator", by="root")
        assert token.startswith("hu-") and token not in str(audit.rows("select * from user_tokens"))
        assert audit.rows("select digest from user_tokens")[0]["digest"] == digest(token)
        assert user_with_token(audit, token) == User("ada", "operator")
        assert user_with_token(audit, token + "x") is None
        roster.remove(audit, "ada")
        assert user_with_token(audit, token) is None


def test_a_refusal_names_the_user_the_act_the_profile_and_how_to_grant_it() -> None:
    ada = User("ada", "operator", rights=frozenset({("builder", "approve")}))
    with pytest.raises(
        Forbidden, match=r"'ada' may not launch in profile 'secret'.*hearth users grant ada secret launch"
    ):
        require(ada, "launch", "secret")
    with pytest.raises(Forbidden, match="needs an owner"):
        require(ada, "manage")
    with pytest.raises(Forbidden, match="disabled"):
        require(User("own", "owner", disabled=True), "read")


def test_memberships_are_an_operators_and_bad_names_are_refused(tmp_path: Path) -> None:
    with AuditStore(tmp_path / "audit.db") as audit:
        roster.add(audit, "vic", "viewer", by="root")
        with pytest.raises(UsageError, match="a viewer only reads"):
            roster.grant(audit, "vic", "builder", "launch", by="root")
        for bad in ("Ada", "../x", "a" * 40, ""):
            with pytest.raises(UsageError, match="is not valid"):
                roster.add(audit, bad, "viewer", by="root")
        with pytest.raises(UsageError, match="is not a role"):
            roster.add(audit, "zed", "admin", by="root")
        with pytest.raises(UsageError, match="exists"):
            roster.add(audit, "vic", "viewer", by="root")
        with pytest.raises(NotFound):
            roster.grant(audit, "nobody", "builder", "launch", by="root")


def test_a_chat_identity_is_one_users_and_an_email_address_is_kept_in_lower_case(tmp_path: Path) -> None:
    with AuditStore(tmp_path / "audit.db") as audit:
        roster.add(audit, "ada", "operator", by="root")
        roster.add(audit, "bob", "operator", by="root")
        assert roster.link(audit, "ada", "email", " Ada@Example.ORG ", by="root") == "ada@example.org"
        roster.link(audit, "ada", "telegram", "4242", by="root")
        with pytest.raises(UsageError, match="ada's already"):
            roster.link(audit, "bob", "telegram", "4242", by="root")
        with pytest.raises(UsageError, match="not a Telegram user id"):
            roster.link(audit, "bob", "telegram", "@bob", by="root")


def test_the_cli_acts_as_hearth_user_else_the_login_else_the_owner_at_the_shell(tmp_path: Path) -> None:
    with AuditStore(tmp_path / "audit.db") as audit:
        roster.add(audit, "ada", "operator", by="root")
        assert cli_user(audit, "root", {}) == User("root", "owner")
        assert cli_user(audit, "ada", {}).role == "operator"
        assert cli_user(audit, "root", {"HEARTH_USER": "viewer"}).role == "viewer"
        with pytest.raises(UsageError, match="names no user"):
            cli_user(audit, "root", {"HEARTH_USER": "nobody"})
