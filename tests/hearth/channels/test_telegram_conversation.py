"""A whole conversation in Telegram, end to end: the real client library against the fake Bot API,
a real `hearth watch` running each run against the fake Ollama. A goal is a run whose progress is
edited in place and whose answer arrives; the next message is a follow-up in the same workspace;
an approval arrives with buttons and is decided by one; /stop stops; /new starts over. Every
message hearth sent is a delivery the platform acknowledged, with its message id."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hearth.channels.service import ChannelService
from tests.channels_support import IDS, check_conversation, until, with_telegram
from tests.cli_support import start_watch, stop_watch
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.fake_telegram import FakeTelegram
from tests.queue_support import rows

ADA = IDS["ada"]


def said(fake: FakeTelegram, part: str) -> list[str]:
    return [t for t in fake.texts(ADA) if part in t]


def test_a_goal_a_follow_up_an_approval_by_button_and_a_stop(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEARTH_LAUNCHER", "local")
    script = [
        tool_call("write_file", {"path": "notes.txt", "content": "three points"}),
        final_answer("wrote notes.txt with three points"),
        tool_call("run_command", {"command": "cat notes.txt"}),
        final_answer("notes.txt says: three points"),
        tool_call("run_command", {"command": "sleep 600"}),
    ]
    with FakeTelegram() as fake, FakeOllama(script, repeat_last=True) as model:
        box, service = with_telegram(state_dir, fake)
        watch = start_watch({"OLLAMA_HOST": model.url, "HEARTH_LAUNCHER": "local"})
        try:
            asyncio.run(_conversation(fake, service))
        finally:
            stop_watch(watch)
    check_conversation(state_dir, "telegram")
    sent = rows(state_dir, "select status, message_id from deliveries where chat = ?", str(ADA))
    assert sent and all(d["status"] == "delivered" and d["message_id"] for d in sent)


async def _conversation(fake: FakeTelegram, service: ChannelService) -> None:
    fake.text(ADA, "write three points into notes.txt")
    [answer] = await until(service, lambda: said(fake, "wrote notes.txt"), "the first answer")
    assert any("On it: run" in t for t in fake.texts(ADA))
    assert fake.sent("editMessageText", ADA), "the progress message was edited as the run went"

    fake.text(ADA, "what does notes.txt say?")
    await until(service, lambda: [m for m in fake.sent("sendMessage", ADA) if "reply_markup" in m], "the approval")
    [shown] = [m for m in fake.sent("sendMessage", ADA) if "reply_markup" in m]
    data = shown["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
    assert data.startswith("a:") and "cat notes.txt" in shown["text"]
    message = {"message_id": 1, "date": 0, "chat": {"id": ADA, "type": "private"}, "text": shown["text"]}
    fake.press(ADA, data, message)
    await until(service, lambda: said(fake, "notes.txt says: three points"), "the follow-up's answer")
    assert any(p["text"].startswith("Approved by channel:telegram:ada") for p in fake.sent("answerCallbackQuery"))

    fake.text(ADA, "/new")
    fake.text(ADA, "run something long")
    await until(
        service, lambda: len([m for m in fake.sent("sendMessage", ADA) if "reply_markup" in m]) == 2, "the wait"
    )
    fake.text(ADA, "/stop")
    await until(service, lambda: said(fake, "interrupted"), "the stop")
