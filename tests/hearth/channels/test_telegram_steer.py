"""Steering from Telegram, end to end: the real client library against the fake Bot API, a real
`hearth watch` running the run against the fake Ollama. A message while the chat's run still
works, and `/steer TEXT`, reach its model after the next tool result as steers from
`channel:telegram:USER`, recorded as steer steps; an ended run, no run, and a user who lost the
right to approve are answered with the reason and nothing is left for a run."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agent.steer import STEER_MARK
from hearth.audit.store import AuditStore
from hearth.channels.service import ChannelService
from hearth.users import roster
from tests.channels_support import IDS, with_telegram
from tests.cli_support import start_watch, stop_watch
from tests.fake_ollama import FakeOllama, Gated, assert_every_request_legal, final_answer, tool_call
from tests.fake_telegram import FakeTelegram
from tests.hearth.channels.test_telegram_conversation import said, until
from tests.queue_support import rows

ADA = IDS["ada"]


def test_a_message_and_a_steer_command_reach_the_working_run_after_its_next_tool_result(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HEARTH_LAUNCHER", "local")
    first = Gated(tool_call("list_files", {"path": "."}))
    with FakeTelegram() as fake, FakeOllama([first, final_answer("Listed the top level.")]) as model:
        box, service = with_telegram(state_dir, fake)
        watch = start_watch({"OLLAMA_HOST": model.url, "HEARTH_LAUNCHER": "local"})
        try:
            asyncio.run(_steered(fake, service, model, first))
        finally:
            first.release.set()
            stop_watch(watch)
    [run] = rows(state_dir, "select id, status from runs")
    assert run["status"] == "done"
    told = model.requests[1]["messages"]
    assert told[-2]["role"] == "tool" and told[-1]["role"] == "user"
    assert told[-1]["content"] == (
        f"{STEER_MARK}channel:telegram:ada: a person watching this run, not a tool result]\nOnly the top level.\n\n"
        f"{STEER_MARK}channel:telegram:ada: a person watching this run, not a tool result]\nAnd skip dotfiles."
    )
    assert_every_request_legal(model.requests)
    steps = rows(state_dir, "select detail from steps where run_id = ? and kind = 'steer' order by seq", run["id"])
    assert [s["detail"] for s in steps] == [
        "from channel:telegram:ada: Only the top level.",
        "from channel:telegram:ada: And skip dotfiles.",
    ]
    verdicts = [u["verdict"] for u in rows(state_dir, "select verdict from channel_updates where kind = 'message'")]
    assert verdicts[:3] == ["run", "steer", "command /steer"]
    assert not list((box.settings.state_dir / "state" / "steers" / run["id"]).iterdir())


async def _steered(fake: FakeTelegram, service: ChannelService, model: FakeOllama, first: Gated) -> None:
    fake.text(ADA, "list the workspace")
    await until(service, lambda: model.requests, "the run asking its model")
    fake.text(ADA, "Only the top level.")
    await until(service, lambda: said(fake, "Told run"), "the message taken as a steer")
    fake.text(ADA, "/steer And skip dotfiles.")
    await until(service, lambda: len(said(fake, "Told run")) == 2, "the /steer command taken")
    first.release.set()
    await until(service, lambda: said(fake, "Listed the top level."), "the run's answer")
    fake.text(ADA, "/steer too late?")
    await until(service, lambda: said(fake, "has ended (done)"), "the ended run's refusal")
    assert said(fake, "write your next message to follow up")


def test_no_run_an_empty_steer_and_a_user_without_the_right_are_answered_and_nothing_is_left(state_dir: Path) -> None:
    with FakeTelegram() as fake:
        box, service = with_telegram(state_dir, fake)
        asyncio.run(_refused(fake, service, box.settings.audit_path))
    [queued] = [p.stem for p in box.settings.queue_dir.glob("*.json")]
    assert not (box.settings.state_dir / "state" / "steers" / queued).exists(), "the refused steer left nothing"


async def _refused(fake: FakeTelegram, service: ChannelService, audit_path: Path) -> None:
    fake.text(ADA, "/steer use staging")
    await until(service, lambda: said(fake, "No run to steer: write a goal."), "no run to steer")
    fake.text(ADA, "list the workspace")  # queued: no spawner here, so it stays a run not yet started
    await until(service, lambda: said(fake, "On it: run"), "the run queued")
    fake.text(ADA, "/steer")
    await until(service, lambda: said(fake, "Say what to tell the run"), "the empty steer")
    with AuditStore(audit_path) as audit:
        roster.revoke(audit, "ada", "builder", "approve")
    fake.text(ADA, "use staging")
    await until(service, lambda: said(fake, "was not given to it"), "the refusal")
    [refusal] = said(fake, "was not given to it")
    assert "approve" in refusal and "/stop it" in refusal
