"""A hearth with users, their Telegram ids and a Telegram channel pointed at tests/fake_telegram.py:
what the channel tests stand on. Each scenario runs in one event loop (the client library's HTTP
client belongs to the loop that made it)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from hearth.audit.store import AuditStore
from hearth.channels.config import load_channels
from hearth.channels.service import ChannelService
from hearth.users import roster
from tests.fake_telegram import FakeTelegram
from tests.queue_support import rows
from tests.users_support import PEOPLE, Box, make_box

# each person's Telegram user id; a stranger's is 666
IDS = {name: 1000 + i for i, name in enumerate(PEOPLE)}
STRANGER = 666


def with_telegram(state_dir: Path, fake: FakeTelegram, **limits: int) -> tuple[Box, ChannelService]:
    """The box of tests/users_support.py, each person linked to their Telegram id (ada's chats run
    under builder, her profile), and the channel."""
    box = make_box(state_dir)
    token = box.settings.config_dir / "telegram-token"
    token.write_text(fake.token + "\n")
    extra = "".join(f"{key} = {value}\n" for key, value in limits.items())
    toml = f'[telegram]\ntoken_file = "{token}"\napi_url = "{fake.url}"\npoll_s = 1\n{extra}'
    (box.settings.config_dir / "channels.toml").write_text(toml)
    with AuditStore(box.settings.audit_path) as audit:
        for name, ident in IDS.items():
            roster.link(audit, name, "telegram", str(ident), by="test")
        roster.set_default_profile(audit, "ada", "builder")  # where she may launch
    [config] = load_channels(box.settings.config_dir)
    return box, ChannelService(box.settings, config)


def scenario(work: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(work())


async def turn(service: ChannelService) -> None:
    """One poll (returning at once when nothing waits) and one follow: what arrived is handled and
    what is due is sent."""
    await service.receive_once(0)
    await service.follow_once()


def updates(state_dir: Path) -> list[dict[str, Any]]:
    return rows(state_dir, "select * from channel_updates order by cast(update_id as integer)")


def queued(box: Box) -> list[str]:
    return sorted(p.name for p in box.settings.queue_dir.glob("*.json"))
