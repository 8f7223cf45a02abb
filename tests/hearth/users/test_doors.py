"""Memberships hold at every door: the CLI, the command center's API, `/v1`, the MCP server and an
alert's signed link each get the same table of people, acts and profiles (tests/users_support.py)
and must allow exactly what it says; a refusal leaves the approval pending and the queue as it was.
The chat channels are asked the same table in tests/hearth/channels/."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from hearth.audit.store import AuditStore
from hearth.cli.main import main
from hearth.doors.keys import Key, add
from hearth.leash import actions, decisions
from hearth.leash.actions import ActionRefused
from hearth.settings import Settings
from tests.users_support import ACTS, PEOPLE, PROFILES, Box, expected, make_box
from tests.web_support import Center

TOKENS = {"operator": "operator-token-0123456789", "viewer": "viewer-token-0123456789"}
Door = Callable[[str, str, str], bool]  # (user, act, profile) -> done; a refusal must change nothing


def table(door: Door, acts: tuple[str, ...] = ACTS) -> dict[tuple[str, str, str], bool]:
    return {(user, act, profile): door(user, act, profile) for user in PEOPLE for act in acts for profile in PROFILES}


def wanted(acts: tuple[str, ...] = ACTS) -> dict[tuple[str, str, str], bool]:
    return {(u, a, p): expected(u, a, p) for u in PEOPLE for a in acts for p in PROFILES}


@pytest.fixture
def box(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Box:
    monkeypatch.setenv("HEARTH_LAUNCHER", "local")
    return make_box(state_dir)


def _effect(box: Box, act: str, profile: str, attempt: Callable[[str], bool]) -> bool:
    """Make what the act needs, attempt it, and say whether it took effect; a refusal that took
    effect anyway, or an allowed act that did not, fails here."""
    if act == "approve":
        ident = box.run_waiting(profile)
        said = attempt(ident)
        assert said == (box.status_of(ident) == "approved"), (act, profile, said)
        return said
    if act == "stop":
        run_id = box.queued(profile)
        said = attempt(run_id)
        assert said == (not box.still_queued(run_id)), (act, profile, said)
        return said
    before = len(list(box.settings.queue_dir.glob("*.json")))
    said = attempt(profile)
    assert said == (len(list(box.settings.queue_dir.glob("*.json"))) == before + 1), (act, profile, said)
    return said


def test_the_cli_allows_each_user_what_their_memberships_say(
    box: Box, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def door(user: str, act: str, profile: str) -> bool:
        monkeypatch.setenv("HEARTH_USER", user)
        argv = {"launch": ["enqueue", "--agent-name", "{}", "g"], "approve": ["approve", "{}"], "stop": ["stop", "{}"]}

        def attempt(subject: str) -> bool:
            code = main([part.format(subject) for part in argv[act]])
            said = capsys.readouterr()
            assert code == 0 or "refused" in said.err, said.err
            return code == 0

        return _effect(box, act, profile, attempt)

    assert table(door) == wanted()


def test_a_research_question_at_the_cli_is_a_launch_its_memberships_allow(
    box: Box, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def door(user: str, act: str, profile: str) -> bool:
        monkeypatch.setenv("HEARTH_USER", user)

        def attempt(subject: str) -> bool:
            code = main(["research", "--agent-name", subject, "what changed in the garbage collector?"])
            said = capsys.readouterr()
            assert code == 0 or "refused" in said.err, said.err
            return code == 0

        return _effect(box, act, profile, attempt)

    assert table(door, ("launch",)) == wanted(("launch",))


def test_the_command_centers_api_allows_each_users_token_what_their_memberships_say(box: Box) -> None:
    with Center(box.settings, tokens=TOKENS) as center:

        def door(user: str, act: str, profile: str) -> bool:
            web = center.client(Authorization=f"Bearer {box.tokens[user]}")

            def attempt(subject: str) -> bool:
                if act == "launch":
                    answer = web.post_json("/api/enqueue", {"goal": "g", "agent_name": subject})
                elif act == "approve":
                    answer = web.post_json(f"/api/approvals/{subject}", {"decision": "approve"})
                else:
                    answer = web.post_json(f"/api/runs/{subject}/stop", {})
                assert answer.status_code in (200, 201, 403), answer.text
                return answer.status_code != 403

            return _effect(box, act, profile, attempt)

        assert table(door) == wanted()


def test_a_v1_key_launches_only_where_its_user_may(box: Box) -> None:
    with AuditStore(box.settings.audit_path) as audit:
        keys = {user: add(audit, Key(f"key-{user}", (), 0, 0, user=user)) for user in PEOPLE}
    with Center(box.settings, tokens=TOKENS) as center:

        def door(user: str, act: str, profile: str) -> bool:
            def attempt(subject: str) -> bool:
                body = {"model": subject, "messages": [{"role": "user", "content": "g"}], "stream": True}
                headers = {"Authorization": f"Bearer {keys[user]}"}
                with httpx.stream("POST", f"{center.url}/v1/chat/completions", json=body, headers=headers) as answer:
                    assert answer.status_code in (200, 403), answer.read()
                    return answer.status_code == 200  # leaving: the call stops following its run

            return _effect(box, act, profile, attempt)

        assert table(door, ("launch",)) == wanted(("launch",))


def test_the_mcp_server_allows_each_users_token_what_their_memberships_say(box: Box) -> None:
    with Center(box.settings, tokens=TOKENS) as center:

        def door(user: str, act: str, profile: str) -> bool:
            async def call(subject: str) -> bool:
                http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {box.tokens[user]}"})
                async with Client(streamable_http_client(f"{center.url}/mcp", http_client=http)) as client:
                    name, args = {
                        "launch": ("launch_run", {"goal": "g", "profile": subject}),
                        "approve": ("decide_approval", {"approval_id": subject, "decision": "approve"}),
                        "stop": ("stop_run", {"run_id": subject}),
                    }[act]
                    result: Any = await client.call_tool(name, args)
                said = " ".join(getattr(block, "text", "") for block in result.content)
                assert not result.is_error or "refused" in said, said
                return not result.is_error

            return _effect(box, act, profile, lambda subject: anyio.run(call, subject))

        assert table(door) == wanted()


def test_an_alert_link_decides_only_as_a_user_who_may_approve(box: Box) -> None:
    """alerts.toml names whose rights each destination's links carry (`user`; the built-in operator
    when it names none)."""
    lines = [
        f'[[destination]]\nname = "{u}-phone"\nurl = "json://127.0.0.1:9/"\nlocal = true\nuser = "{u}"\n'
        for u in PEOPLE
    ]
    (box.settings.config_dir / "alerts.toml").write_text("\n".join(lines))
    settings = Settings.from_env()

    def door(user: str, act: str, profile: str) -> bool:
        def attempt(ident: str) -> bool:
            with AuditStore(settings.audit_path) as audit:
                from hearth.audit import approvals

                found = approvals.find(audit, ident)
                assert found is not None
                token = actions.for_approval(settings.state_dir, found, f"{user}-phone")["approve"]
            try:
                decisions.by_link(settings, token)
            except ActionRefused as exc:
                assert exc.status == 403, exc.reason
                return False
            return True

        return _effect(box, act, profile, attempt)

    assert table(door, ("approve",)) == wanted(("approve",))


def test_a_user_signs_in_with_their_own_token_is_recorded_as_themselves_and_is_out_once_disabled(box: Box) -> None:
    with Center(box.settings, tokens=TOKENS) as center:
        web = center.client()
        form = {"name": "someone else", "token": box.tokens["ada"], "next": "/"}
        assert web.post_form("/signin", form).status_code == 303
        web.csrf = ""
        assert web.session()["user"] == "ada"  # their own token is the user, whatever the form says
        ident = box.run_waiting("builder")
        assert web.post_json(f"/api/approvals/{ident}", {"decision": "approve"}).json()["decided_by"] == "web:ada"
        with AuditStore(box.settings.audit_path) as audit:
            from hearth.users import roster

            roster.set_disabled(audit, "ada", True)
        refused = web.post_json(f"/api/approvals/{box.run_waiting('builder')}", {"decision": "approve"})
        assert refused.status_code == 401  # the session's user is read afresh: disabled is out at once
