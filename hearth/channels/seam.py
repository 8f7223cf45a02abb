"""The seam of the chat channels: one Protocol, one table, one resolver.

A channel is what hearth needs of a chat platform, and no more: receive what arrived, send a
message (with buttons where the platform has them), edit one it sent, answer a pressed button,
fetch an attachment.
`CHANNELS` names each platform's module; `channel_for(name, config)` loads only that one and says
which exist on a miss. Nothing outside a channel's module branches on which platform it is: what
differs (edits, buttons) is a property of the channel.

    ChannelDown     the platform cannot be reached or failed on its side (network, 5xx, 429):
                    the service backs off and tries again; it never blocks a run
    Undeliverable   the platform refused this one message (4xx: a chat that blocked the bot,
                    an address the server rejects): recorded as failed, tried again later
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Protocol

from hearth.errors import HearthError, UsageError

if TYPE_CHECKING:
    from hearth.channels.config import ChannelConfig
    from hearth.channels.message import Inbound

CHANNELS: dict[str, str] = {
    "telegram": "hearth.channels.telegram:TelegramChannel",
    "email": "hearth.channels.mail:EmailChannel",
}


class ChannelDown(HearthError):
    """The platform cannot be reached, or failed on its side; retry after a wait."""

    def __init__(self, message: str, retry_after_s: float = 0.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class Undeliverable(HearthError):
    """The platform refused one message (it says why); others may still go."""


class Channel(Protocol):
    name: str
    edits: bool  # whether a sent message can be changed (progress shown in place)
    buttons: bool  # whether a message can carry buttons (else an approval carries links and replies)

    async def receive(self, timeout_s: float) -> list[Inbound]: ...

    async def send(self, chat: str, text: str, buttons: list[tuple[str, str]]) -> str: ...

    async def edit(self, chat: str, message_id: str, text: str) -> None: ...

    async def answer(self, callback_id: str, text: str) -> None: ...

    async def download(self, ref: str, limit: int) -> bytes: ...  # an attachment's bytes, at most `limit`

    async def close(self) -> None: ...


def channel_for(name: str, config: ChannelConfig) -> Channel:
    """The channel of that name, made from its configuration; UsageError naming those that exist."""
    row = CHANNELS.get(name)
    if row is None:
        raise UsageError(f"no channel named {name!r}; hearth has: {', '.join(CHANNELS)}")
    module, _, attribute = row.partition(":")
    factory = getattr(importlib.import_module(module), attribute)
    channel: Channel = factory(config)
    return channel
