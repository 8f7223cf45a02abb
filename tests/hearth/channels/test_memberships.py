"""Memberships hold in the chat as at every other door: the same table of people, acts and profiles
as tests/hearth/users/test_doors.py, asked through Telegram (a goal under the profile, a pressed
Approve button, /stop RUN_ID), must allow exactly what it says; a refusal changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from hearth.audit.store import AuditStore
from hearth.channels.service import ChannelService
from hearth.users import roster
from tests.channels_support import IDS, scenario, with_telegram
from tests.fake_telegram import FakeTelegram
from tests.users_support import ACTS, PEOPLE, PROFILES, Box, expected

PRIVATE = {"message_id": 5, "date": 0}


@pytest.fixture(autouse=True)
def _local(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEARTH_LAUNCHER", "local")


async def _attempt(box: Box, fake: FakeTelegram, service: ChannelService, user: str, act: str, profile: str) -> bool:
    """Ask through the chat; whether it took effect (and that a refusal took none)."""
    ident = IDS[user]
    if act == "approve":
        approval = box.run_waiting(profile)
        fake.press(ident, f"a:{approval}", {**PRIVATE, "chat": {"id": ident, "type": "private"}})
        await service.receive_once(0)
        return box.status_of(approval) == "approved"
    if act == "stop":
        run_id = box.queued(profile)
        fake.text(ident, f"/stop {run_id}")
        await service.receive_once(0)
        return not box.still_queued(run_id)
    with AuditStore(box.settings.audit_path) as audit:
        roster.set_default_profile(audit, user, profile)
    before = len(list(box.settings.queue_dir.glob("*.json")))
    fake.text(ident, "/new")
    fake.text(ident, f"a goal in {profile}")
    await service.receive_once(0)
    return len(list(box.settings.queue_dir.glob("*.json"))) == before + 1


def test_the_chat_allows_each_user_what_their_memberships_say(state_dir: Path) -> None:
    found: dict[tuple[str, str, str], bool] = {}
    with FakeTelegram() as fake:
        box, service = with_telegram(state_dir, fake, flood_per_minute=1000)

        async def work() -> None:
            for user in PEOPLE:
                for act in ACTS:
                    for profile in PROFILES:
                        found[(user, act, profile)] = await _attempt(box, fake, service, user, act, profile)

        scenario(work)
    assert found == {(u, a, p): expected(u, a, p) for u in PEOPLE for a in ACTS for p in PROFILES}
