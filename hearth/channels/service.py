"""`hearth channels`: each configured channel's two loops, and its state for everyone to see.

    receive   long-polls the platform; a message's attachments are fetched, then each update goes
              to the desk (hearth/channels/desk.py);
              a pressed button is answered at once, and the messages that carried a decided
              approval are changed to say who decided
    follow    every FOLLOW_S: progress edits, answers, approvals, then what is due is sent
              (hearth/channels/follow.py)

A platform that cannot be reached (ChannelDown) is waited for, 1 s doubling to BACKOFF_CAP_S (or
as long as it asks), said once in the log per outage and kept in `channel_state` (`backing off`,
its error), which the command center shows; the channel's other loop and every run go on. Back
up, the state says `up` and the log says so once. A channel that cannot even start (its token
unreadable, channels.toml wrong) is `stopped` with the reason; the others run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from hearth.audit import channels as rows
from hearth.audit.store import AuditStore
from hearth.channels.config import ChannelConfig
from hearth.channels.desk import Desk
from hearth.channels.follow import Follower
from hearth.channels.message import Attachment, Edit, Fetched, Inbound
from hearth.channels.seam import Channel, ChannelDown, Undeliverable, channel_for
from hearth.settings import Settings

log = logging.getLogger("hearth.channels")
FOLLOW_S = 1.0
BACKOFF_CAP_S = 300.0
Sleep = Callable[[float], Awaitable[None]]


class ChannelService:
    """One channel, its desk and its follower; `receive_once` and `follow_once` are one turn of
    each loop (a test drives them), `run` both loops until stopped."""

    def __init__(self, settings: Settings, config: ChannelConfig, channel: Channel | None = None) -> None:
        self.settings, self.config = settings, config
        self.channel = channel or channel_for(config.name, config)
        self.desk = Desk(settings, config, progress=self.channel.edits)
        self.follower = Follower(settings, config.name)
        self.poll_s = float(config.get("poll_s", 25))
        self.failures = 0

    async def receive_once(self, timeout_s: float | None = None) -> int:
        """One poll: each update handled, buttons answered, decided approvals' messages changed."""
        found = await self.channel.receive(self.poll_s if timeout_s is None else timeout_s)
        for inbound in found:
            fetched = await self._fetch(inbound)
            handled = await asyncio.to_thread(self.desk.handle, inbound, fetched)
            if inbound.kind == "callback" and inbound.callback_id and handled.answer:
                await self._quietly(self.channel.answer(inbound.callback_id, handled.answer))
            await self._apply(handled.edits)
        return len(found)

    async def _fetch(self, inbound: Inbound) -> tuple[Fetched, ...]:
        """A message's attachments, each fetched when its declared size and the count allow; the
        bytes stay in memory until the desk judged them (hearth/channels/attachments.py)."""
        limit, most = self.config.limits["attachment_bytes"], self.config.limits["attachments_per_message"]
        found = []
        for index, attachment in enumerate(inbound.attachments if inbound.kind == "message" else ()):
            if index >= most:
                found.append(Fetched(attachment, None, f"at most {most} files are taken from one message"))
            elif attachment.size > limit:
                found.append(Fetched(attachment, None, f"it is {attachment.size} bytes; at most {limit} are taken"))
            else:
                found.append(await self._download(attachment, limit))
        return tuple(found)

    async def _download(self, attachment: Attachment, limit: int) -> Fetched:
        try:
            return Fetched(attachment, await self.channel.download(attachment.ref, limit + 1))
        except (ChannelDown, Undeliverable) as exc:  # the message is handled still: its update is not lost
            return Fetched(attachment, None, f"it could not be fetched: {exc}")

    async def follow_once(self) -> None:
        edits = await asyncio.to_thread(self.follower.step, self.channel.edits, self.channel.buttons)
        await self._apply(edits)
        await self.follower.deliver(self.channel)

    async def run(self, stopping: asyncio.Event, sleep: Sleep = asyncio.sleep) -> None:
        self._state("up", "")
        loops = [self._loop(self.receive_once, stopping, sleep), self._loop(self._follow_turn, stopping, sleep)]
        try:
            await asyncio.gather(*loops)
        finally:
            await self.channel.close()
            self._state("stopped", "")

    async def _follow_turn(self) -> None:
        await self.follow_once()
        await asyncio.sleep(FOLLOW_S)

    async def _loop(self, turn: Callable[[], Awaitable[object]], stopping: asyncio.Event, sleep: Sleep) -> None:
        while not stopping.is_set():
            try:
                await _until(turn(), stopping)
                self._recovered()
            except ChannelDown as exc:
                await _until(sleep(self._backoff(exc)), stopping)

    def _backoff(self, exc: ChannelDown) -> float:
        """How long to wait now; said once per outage in the log and kept as the channel's state."""
        self.failures += 1
        wait = max(exc.retry_after_s, min(BACKOFF_CAP_S, 2.0 ** (self.failures - 1)))
        if self.failures == 1:
            log.warning(
                "%s: %s; retrying with backoff (at most %g s) until it answers", self.config.name, exc, BACKOFF_CAP_S
            )
        self._state("backing off", str(exc))
        return wait

    def _recovered(self) -> None:
        if self.failures:
            log.warning("%s: reachable again after %d failed tries", self.config.name, self.failures)
            self.failures = 0
            self._state("up", "")

    async def _apply(self, edits: list[Edit]) -> None:
        for edit in edits:
            await self._quietly(self.channel.edit(edit.chat, edit.message_id, edit.text))

    async def _quietly(self, done: Awaitable[None]) -> None:
        """An answer or an edit that fails is logged, not retried: the message it would change
        stands, and the audit has the decision."""
        try:
            await done
        except Undeliverable as exc:
            log.info("%s: %s", self.config.name, exc)

    def _state(self, state: str, error: str) -> None:
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        with AuditStore(self.settings.audit_path) as audit:
            before = rows.state(audit, self.config.name)
            since = before["since"] if before and before["state"] == state else now
            row = {"channel": self.config.name, "state": state, "since": since, "last_error": error[:500]}
            rows.set_state(audit, row | {"updated_at": now})


async def _until(work: Awaitable[object], stopping: asyncio.Event) -> None:
    """`work`, unless stopping comes first (then it is cancelled)."""
    task = asyncio.ensure_future(work)
    stop = asyncio.ensure_future(stopping.wait())
    done, _ = await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
    for pending in (task, stop):
        if pending not in done:
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pending
    if task in done:
        task.result()


async def serve(settings: Settings, configs: list[ChannelConfig], stopping: asyncio.Event) -> None:
    """Every configured channel until `stopping` is set; one that cannot start is `stopped` with why."""
    services = []
    for config in configs:
        try:
            services.append(ChannelService(settings, config))
        except Exception as exc:  # a channel that cannot start keeps the others running
            log.error("%s: cannot start: %s", config.name, exc)
            _stopped(settings, config.name, str(exc))
    await asyncio.gather(*(service.run(stopping) for service in services))


def _stopped(settings: Settings, name: str, error: str) -> None:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    with AuditStore(settings.audit_path) as audit:
        rows.set_state(
            audit, {"channel": name, "state": "stopped", "since": now, "last_error": error[:500], "updated_at": now}
        )
