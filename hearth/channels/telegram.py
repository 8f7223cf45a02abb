"""Telegram, through python-telegram-bot's `Bot` (the Bot API over httpx, which hearth already uses).

Long polling (getUpdates): the box needs no public address and no webhook. Who sent an update is
Telegram's `from.id` (a user id Telegram vouches for); a message sent on behalf of a chat
(`sender_chat`: an anonymous group admin, a channel) vouches for no user and is a stranger's. In
a group, hearth is addressed by a command (`/status`, or `/status@its_name`), by naming it
(`@its_name`), or by a reply to one of its messages; anything else there is not for it.

The platform's errors become the seam's: a network failure, a 5xx, a 429 (with Telegram's
retry_after) or a rejected token are ChannelDown (the service backs off); a message Telegram
refuses (a chat that blocked the bot, bad text) is Undeliverable.
"""

from __future__ import annotations

from typing import Any

from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, Update
from telegram.error import BadRequest, Forbidden, InvalidToken, NetworkError, RetryAfter, TelegramError, TimedOut

from hearth.channels.config import ChannelConfig
from hearth.channels.message import Attachment, Inbound
from hearth.channels.seam import ChannelDown, Undeliverable

API = "https://api.telegram.org"
TEXT_CAP = 4000  # Telegram takes 4,096 characters a message
UPDATES = ["message", "edited_message", "callback_query"]


class TelegramChannel:
    name = "telegram"
    edits = True
    buttons = True

    def __init__(self, config: ChannelConfig) -> None:
        api = str(config.get("api_url", API)).rstrip("/")
        self.bot = Bot(config.secret, base_url=f"{api}/bot", base_file_url=f"{api}/file/bot")
        self.offset: int | None = None
        self.username = ""
        self.bot_id = 0

    async def receive(self, timeout_s: float) -> list[Inbound]:
        async with _platform("receive updates"):
            if not self.username:
                await self.bot.initialize()
                self.username, self.bot_id = self.bot.username, self.bot.id
            wait = int(timeout_s)
            found = await self.bot.get_updates(
                offset=self.offset, timeout=wait, allowed_updates=UPDATES, read_timeout=wait + 10
            )
        if found:
            self.offset = max(u.update_id for u in found) + 1  # Telegram forgets what is confirmed
        return [self._inbound(update) for update in found]

    async def send(self, chat: str, text: str, buttons: list[tuple[str, str]]) -> str:
        markup = InlineKeyboardMarkup([[InlineKeyboardButton(label, callback_data=data) for label, data in buttons]])
        async with _platform(f"send to chat {chat}"):
            sent = await self.bot.send_message(int(chat), _capped(text), reply_markup=markup if buttons else None)
        return str(sent.message_id)

    async def edit(self, chat: str, message_id: str, text: str) -> None:
        try:
            async with _platform(f"edit a message in chat {chat}"):
                await self.bot.edit_message_text(_capped(text), chat_id=int(chat), message_id=int(message_id))
        except Undeliverable as exc:
            if "not modified" not in str(exc):
                raise

    async def answer(self, callback_id: str, text: str) -> None:
        async with _platform("answer a button"):
            await self.bot.answer_callback_query(callback_id, text=text[:190])

    async def download(self, ref: str, limit: int) -> bytes:
        data = b""
        async with _platform("fetch a file"):
            found = await self.bot.get_file(ref)
            if (found.file_size or 0) > limit:
                raise Undeliverable(f"the file is {found.file_size} bytes, past the limit of {limit}")
            data = bytes(await found.download_as_bytearray())
        return data

    async def close(self) -> None:
        if self.username:
            await self.bot.shutdown()

    # -- an update as the desk reads it -----------------------------------------------------------------
    def _inbound(self, update: Update) -> Inbound:
        ident = str(update.update_id)
        if update.callback_query is not None:
            query = update.callback_query
            message: Any = query.message
            chat = str(message.chat.id) if message is not None else ""
            shown = str(message.message_id) if message is not None else ""
            sender = str(query.from_user.id)
            return Inbound(
                ident, "callback", sender, chat, callback_id=query.id, data=query.data or "", message_id=shown
            )
        if update.edited_message is not None:
            edited = update.edited_message
            return Inbound(ident, "edited", _sender(edited), str(edited.chat.id), edited.chat.type == "private")
        if update.message is None:
            return Inbound(ident, "other", "", "")
        msg = update.message
        text = msg.text or msg.caption or ""
        private = msg.chat.type == "private"
        return Inbound(
            ident,
            "message",
            _sender(msg),
            str(msg.chat.id),
            private,
            self._without_name(text),
            private or self._addressed(msg, text),
            attachments=_attachments(msg),
        )

    def _addressed(self, msg: Any, text: str) -> bool:
        named = f"@{self.username}".lower()
        word = text.split(maxsplit=1)[0].lower() if text.strip() else ""
        replied = msg.reply_to_message is not None and msg.reply_to_message.from_user is not None
        if replied and msg.reply_to_message.from_user.id == self.bot_id:
            return True
        if word.startswith("/"):
            return "@" not in word or word.endswith(named)
        return bool(self.username) and named in text.lower()

    def _without_name(self, text: str) -> str:
        if not self.username:
            return text
        return " ".join(part for part in text.split(" ") if part.lower() != f"@{self.username}".lower())


def _sender(msg: Any) -> str:
    """Telegram's id of the person who sent it; '' when it was sent on behalf of a chat."""
    if msg.sender_chat is not None or msg.from_user is None:
        return ""
    return str(msg.from_user.id)


def _attachments(msg: Any) -> tuple[Attachment, ...]:
    found = []
    if msg.document is not None:
        doc = msg.document
        found.append(Attachment(doc.file_name or "file", int(doc.file_size or 0), doc.file_id, doc.mime_type or ""))
    if msg.photo:
        photo = max(msg.photo, key=lambda p: p.file_size or 0)
        found.append(
            Attachment(f"photo-{photo.file_unique_id}.jpg", int(photo.file_size or 0), photo.file_id, "image/jpeg")
        )
    return tuple(found)


def _capped(text: str) -> str:
    return text if len(text) <= TEXT_CAP else text[:TEXT_CAP] + " [...]"


class _platform:
    """The Bot API's errors as the seam's, naming what was being done."""

    def __init__(self, doing: str) -> None:
        self.doing = doing

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> bool:
        if exc is None or not isinstance(exc, TelegramError):
            return False
        if isinstance(exc, RetryAfter):
            wait = exc.retry_after
            seconds = wait if isinstance(wait, int | float) else wait.total_seconds()
            raise ChannelDown(f"Telegram asks to wait {seconds:g} s before the next call", float(seconds)) from None
        if isinstance(exc, InvalidToken):
            raise ChannelDown(f"Telegram refuses the bot token: {exc}; check [telegram].token_file") from None
        if isinstance(exc, BadRequest | Forbidden):
            raise Undeliverable(f"Telegram refused to {self.doing}: {exc}") from None
        if isinstance(exc, NetworkError | TimedOut):
            raise ChannelDown(f"cannot reach Telegram to {self.doing}: {exc}") from None
        raise ChannelDown(f"Telegram failed to {self.doing}: {exc}") from None
