"""A hearth with users, their Telegram ids and a Telegram channel pointed at tests/fake_telegram.py,
or their addresses and an e-mail channel pointed at tests/mail_servers.py's pair: what the channel
tests stand on. Each scenario runs in one event loop (the client library's HTTP
client belongs to the loop that made it)."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from hearth.audit.store import AuditStore
from hearth.channels.config import load_channels
from hearth.channels.service import ChannelService
from hearth.users import roster
from tests.fake_telegram import FakeTelegram
from tests.mail_servers import AUTHSERV, PASSWORD, MailPair
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


def with_email(state_dir: Path, pair: MailPair, web_url: str = "", **limits: int) -> tuple[Box, ChannelService]:
    """The same box, each person linked to their address at the pair's domain (ada's threads run
    under builder), and the channel reading hearth@'s mailbox. `web_url`: the command center an
    approval's links open."""
    box = make_box(state_dir)
    if web_url:
        box.settings = dataclasses.replace(box.settings, web_url=web_url)
    secret = box.settings.config_dir / "mail-password"
    secret.write_text(PASSWORD + "\n")
    extra = "".join(f"{key} = {value}\n" for key, value in limits.items())
    (box.settings.config_dir / "channels.toml").write_text(
        f'[email]\naddress = "{pair.address("hearth")}"\nusername = "hearth"\npassword_file = "{secret}"\n'
        f'authserv_id = "{AUTHSERV}"\nimap_host = "127.0.0.1"\nimap_port = {pair.imap_port}\nimap_tls = "none"\n'
        f'smtp_host = "127.0.0.1"\nsmtp_port = {pair.smtp_port}\nsmtp_tls = "none"\npoll_s = 1\n{extra}'
    )
    with AuditStore(box.settings.audit_path) as audit:
        for name in IDS:
            roster.link(audit, name, "email", pair.address(name), by="test")
        roster.set_default_profile(audit, "ada", "builder")
    [config] = load_channels(box.settings.config_dir)
    return box, ChannelService(box.settings, config)


def scenario(work: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(work())


async def turn(service: ChannelService) -> None:
    """One poll (returning at once when nothing waits) and one follow: what arrived is handled and
    what is due is sent."""
    await service.receive_once(0)
    await service.follow_once()


async def until(service: ChannelService, check: Callable[[], Any], what: str) -> Any:
    """Turn the channel until `check` holds: the runs' own progress is the marker."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        await turn(service)
        found = check()
        if found:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"gave up waiting for {what}")


def check_conversation(state_dir: Path, channel: str) -> None:
    """What the whole-conversation tests leave: a run under ada's profile from the channel, its
    follow-up, the approval decided as ada through the channel, and a new run stopped."""
    first, second, third = rows(
        state_dir, "select id, status, agent_name, requested_by, parent_run, source from runs order by started_at"
    )
    assert (first["status"], first["agent_name"], first["requested_by"], first["source"]) == (
        "done",
        "builder",
        f"{channel}:ada",
        f"channel:{channel}",
    )
    assert (second["status"], second["parent_run"]) == ("done", first["id"])
    assert third["status"] == "interrupted" and third["parent_run"] is None
    [decided] = rows(state_dir, "select decided_by, status from approvals where run_id = ?", second["id"])
    assert decided == {"decided_by": f"channel:{channel}:ada", "status": "approved"}


def updates(state_dir: Path) -> list[dict[str, Any]]:
    return rows(state_dir, "select * from channel_updates order by cast(update_id as integer)")


def queued(box: Box) -> list[str]:
    return sorted(p.name for p in box.settings.queue_dir.glob("*.json"))
