"""The Users page under Operate and /api/users: everyone reads who may do what; an owner changes it
as `hearth users` does, a new token is shown once, and every change (or refusal) is recorded."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hearth.audit.store import AuditStore
from hearth.settings import Settings
from tests.browser_support import Browser
from tests.hearth.web.operate_support import OPERATOR, VIEWER, looked_at, signed_in
from tests.queue_support import rows
from tests.web_support import Center


@pytest.fixture
def guarded(state_dir: Path) -> Iterator[Center]:
    with Center(Settings.from_env(), tokens={"operator": OPERATOR, "viewer": VIEWER}) as served:
        yield served


def test_an_owner_adds_a_user_whose_token_is_shown_once_and_signs_them_in_as_themselves(
    guarded: Center, state_dir: Path
) -> None:
    owner = guarded.client(Authorization=f"Bearer {OPERATOR}")
    made = owner.post_json("/api/users", {"action": "add", "name": "ada", "role": "operator"})
    assert made.status_code == 200, made.text
    token = made.json()["token"]
    assert token and token not in owner.get("/api/users").text
    granted = owner.post_json("/api/users", {"action": "grant", "name": "ada", "profile": "builder", "right": "launch"})
    assert granted.status_code == 200 and granted.json()["token"] is None
    [ada] = [u for u in owner.get("/api/users").json()["users"] if u["name"] == "ada"]
    assert (ada["role"], ada["rights"], ada["tokens"], ada["created_by"]) == (
        "operator",
        ["launch in builder"],
        1,
        "operator",
    )
    seen = guarded.client(Authorization=f"Bearer {token}").get("/api/session").json()
    assert (seen["user"], seen["account"], seen["account_role"]) == ("ada", "ada", "operator")
    done = rows(state_dir, "select by, area, action, subject, ok, detail from operator_actions order by id")
    assert [(d["by"], d["area"], d["action"], d["subject"], d["ok"]) for d in done] == [
        ("web:token:operator", "users", "add", "ada", 1),
        ("web:token:operator", "users", "grant", "ada", 1),
    ]
    assert done[1]["detail"] == "profile=builder right=launch" and token not in str(done)


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"action": "rm", "name": "operator"}, 400, "operator"),
        ({"action": "add", "name": "bob", "role": "admin"}, 400, "admin"),
        ({"action": "grant", "name": "nobody", "profile": "x", "right": "launch"}, 400, "nobody"),
        ({"action": "sudo", "name": "ada"}, 400, "is not a change of users"),
    ],
)
def test_a_change_hearth_users_would_refuse_is_refused_with_why_and_recorded(
    guarded: Center, state_dir: Path, body: dict[str, str], status: int, words: str
) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    AuditStore(state_dir / "audit.db").close()  # the built-in users are the audit's from its making
    before = guarded.client(Authorization=f"Bearer {VIEWER}").get("/api/users").json()
    answer = guarded.client(Authorization=f"Bearer {OPERATOR}").post_json("/api/users", body)
    assert answer.status_code == status and words in answer.text, answer.text
    assert guarded.client(Authorization=f"Bearer {VIEWER}").get("/api/users").json() == before
    if body["action"] != "sudo":
        [row] = rows(state_dir, "select ok, detail from operator_actions")
        assert row["ok"] == 0 and words in row["detail"]


def test_before_the_audit_exists_the_page_says_there_are_no_users_yet(guarded: Center) -> None:
    page = guarded.client(Authorization=f"Bearer {VIEWER}").get("/operate/users")
    assert page.status_code == 200 and 'id="no-users"' in page.text and 'id="users-table"' not in page.text


def test_a_viewer_and_an_operator_read_the_users_but_cannot_change_them(guarded: Center) -> None:
    owner = guarded.client(Authorization=f"Bearer {OPERATOR}")
    token = owner.post_json("/api/users", {"action": "add", "name": "ada", "role": "operator"}).json()["token"]
    for reader in (VIEWER, token):
        client = guarded.client(Authorization=f"Bearer {reader}")
        assert {u["name"] for u in client.get("/api/users").json()["users"]} >= {"ada", "operator", "viewer"}
        refused = client.post_json("/api/users", {"action": "add", "name": "eve", "role": "owner"})
        assert refused.status_code == 403, refused.text
        page = client.get("/operate/users")
        assert page.status_code == 200 and 'id="add-user"' not in page.text and "read-only" in page.text
    assert "eve" not in owner.get("/api/users").text


def test_the_users_page_adds_a_user_from_its_form_and_shows_the_token_once(guarded: Center, browser: Browser) -> None:
    page = signed_in(guarded, browser, OPERATOR)
    page.goto(guarded.url + "/operate/users")
    page.fill("#add-user input[name=name]", "ada")
    page.select_option("#add-user select[name=role]", "operator")
    page.click("#add")
    token = page.wait_for_selector("#new-token").inner_text()
    assert "shown this once" in token
    page.select_option("#grant select[name=name]", "ada")
    page.fill("#grant input[name=profile]", "builder")
    page.click("#grant button[value=grant]")
    page.wait_for_selector("#users-done")
    assert page.locator("#new-token").count() == 0
    assert "launch in builder" in page.inner_text("#users-table")
    page.fill("#add-user input[name=name]", "ada")
    page.click("#add")
    assert "exists" in page.wait_for_selector("#users-error").inner_text()
    looked_at(browser, page, guarded.url + "/operate/users", "users")
    viewer = signed_in(guarded, browser, VIEWER)
    viewer.goto(guarded.url + "/operate/users")
    assert viewer.locator("#add-user").count() == 0 and "read-only" in viewer.inner_text("main")


def test_an_owner_links_an_email_address_from_the_page_kept_in_lower_case(guarded: Center) -> None:
    owner = guarded.client(Authorization=f"Bearer {OPERATOR}")
    assert owner.post_json("/api/users", {"action": "add", "name": "ada", "role": "operator"}).status_code == 200
    page = owner.get("/operate/users").text
    assert "<option>email</option>" in page.split('id="link"')[1].split("</form>")[0]
    linked = owner.post_json(
        "/api/users", {"action": "link", "name": "ada", "channel": "email", "address": "Ada@Example.ORG"}
    )
    assert linked.status_code == 200, linked.text
    [ada] = [u for u in owner.get("/api/users").json()["users"] if u["name"] == "ada"]
    assert ada["identities"] == ["email:ada@example.org"]
    wrong = owner.post_json(
        "/api/users", {"action": "link", "name": "ada", "channel": "email", "address": "not an address"}
    )
    assert wrong.status_code == 400
