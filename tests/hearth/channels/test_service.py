"""The channel service against a Telegram that fails: it backs off (doubling), says so once in the
log and in the channel's state, never blocks, and is `up` again once Telegram answers; a message
Telegram refuses is tried again with backoff, `delivered` only with Telegram's message id, and
`missing` (alerted) after its last try; a mission's answer goes to the chat it names; the state is shown by `hearth channels status` and
the Users page."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hearth.audit import channels as channel_rows
from hearth.audit.store import AuditStore, RunRecord
from hearth.channels.follow import MAX_ATTEMPTS
from hearth.cli.main import main
from hearth.settings import Settings
from tests.channels_support import IDS, STRANGER, scenario, turn, with_telegram
from tests.fake_telegram import FakeTelegram
from tests.queue_support import rows
from tests.web_support import Center


@pytest.fixture(autouse=True)
def _local(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEARTH_LAUNCHER", "local")


def test_a_channel_that_cannot_reach_telegram_backs_off_says_so_once_and_comes_back(
    state_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    waits: list[float] = []
    states: list[tuple[str, str]] = []
    with FakeTelegram() as fake:
        box, service = with_telegram(state_dir, fake)
        fake.down = True

        async def work() -> None:
            stopping = asyncio.Event()

            async def sleep(seconds: float) -> None:
                waits.append(seconds)
                [state] = rows(state_dir, "select state, last_error from channel_state")
                states.append((state["state"], state["last_error"]))
                if len(waits) == 3:
                    fake.down = False  # Telegram answers again

            async def watch() -> None:
                while not (waits and len(waits) >= 3 and service.failures == 0):
                    await asyncio.sleep(0.05)
                stopping.set()

            await asyncio.gather(service.run(stopping, sleep=sleep), watch())

        with caplog.at_level(logging.WARNING, logger="hearth.channels"):
            scenario(work)
    assert waits == [1.0, 2.0, 4.0]
    assert all(state == "backing off" and "Bad Gateway" in error for state, error in states)
    said = [r.getMessage() for r in caplog.records]
    assert sum("retrying with backoff" in s for s in said) == 1 and sum("reachable again" in s for s in said) == 1
    assert rows(state_dir, "select state from channel_state") == [{"state": "stopped"}]


def test_a_refused_message_is_tried_again_later_and_is_delivered_only_once_acknowledged(state_dir: Path) -> None:
    with FakeTelegram() as fake:
        box, service = with_telegram(state_dir, fake)
        clock = [datetime.now(UTC)]
        service.follower.now = lambda: clock[0]
        fake.fail("sendMessage", 2, 400, "Bad Request: chat not found")

        async def work() -> None:
            fake.text(STRANGER, "hello?")
            await turn(service)
            await service.follow_once()  # not due yet: no second try
            clock[0] += timedelta(seconds=2.5)
            await service.follow_once()
            clock[0] += timedelta(seconds=4.5)
            await service.follow_once()

        scenario(work)
    tries = [p for p in fake.sent("sendMessage") if int(p["chat_id"]) == STRANGER]
    assert len(tries) == 3
    [sent] = rows(state_dir, "select status, attempts, message_id, last_error from deliveries")
    assert (sent["status"], sent["attempts"], sent["message_id"]) == ("delivered", 2, "101")
    assert "Chat not found" in sent["last_error"]


def test_a_message_that_never_goes_through_is_missing_and_alerted(
    state_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with FakeTelegram() as fake:
        box, service = with_telegram(state_dir, fake)
        clock = [datetime.now(UTC)]
        service.follower.now = lambda: clock[0]
        fake.fail("sendMessage", 100, 403, "Forbidden: bot was blocked by the user")

        async def work() -> None:
            fake.text(STRANGER, "hello?")
            await service.receive_once(0)
            for _ in range(MAX_ATTEMPTS + 2):
                await service.follow_once()
                clock[0] += timedelta(hours=2)

        with caplog.at_level(logging.WARNING, logger="hearth.channels"):
            scenario(work)
    [sent] = rows(state_dir, "select status, attempts from deliveries")
    assert sent == {"status": "missing", "attempts": MAX_ATTEMPTS}
    assert len(fake.sent("sendMessage")) == MAX_ATTEMPTS
    assert any("could not deliver a refusal on telegram" in r.getMessage() for r in caplog.records)


def test_a_missions_answer_goes_to_the_chat_it_names_once(state_dir: Path) -> None:
    with FakeTelegram() as fake:
        box, service = with_telegram(state_dir, fake)
        missions = box.settings.config_dir / "missions"
        missions.mkdir()
        (missions / "digest.toml").write_text('schedule = "daily"\ngoal = "the digest"\ndeliver = "telegram:bob"\n')
        (missions / "lost.toml").write_text('schedule = "daily"\ngoal = "the other"\ndeliver = "telegram:nobody"\n')
        with AuditStore(box.settings.audit_path) as audit:
            for name in ("digest", "lost"):
                record = RunRecord(
                    id=f"{name}-1", agent_name="default", model="m", goal="g", mode="auto", status="done"
                )
                audit.start_run(record)
                audit.update_run(f"{name}-1", requested_by=f"mission:{name}", summary=f"{name}: all quiet")

        async def work() -> None:
            await service.follow_once()
            await service.follow_once()

        scenario(work)
    assert fake.texts(IDS["bob"]) == ["Mission digest, run digest-1: digest: all quiet"]
    found = {d["mission"]: (d["status"], d["last_error"]) for d in rows(state_dir, "select * from deliveries")}
    assert found == {"digest": ("delivered", None), "lost": ("missing", "nobody has no telegram chat")}


def test_each_channels_state_last_error_and_missing_deliveries_are_shown_by_the_cli_and_the_users_page(
    state_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    with AuditStore(state_dir / "audit.db") as audit:
        row = {"channel": "telegram", "state": "backing off", "since": "2026-01-01T00:00:00Z"}
        channel_rows.set_state(audit, row | {"last_error": "cannot reach Telegram", "updated_at": "x"})
        for status in ("pending", "failed", "delivered", *["missing"] * 12):
            ident = channel_rows.add_delivery(
                audit, {"channel": "telegram", "chat": "1000", "kind": "answer", "subject": status, "text": "t"}
            )
            channel_rows.set_delivery(audit, ident, {"status": status, "last_error": f"{status} why"})
    assert main(["channels", "status", "--json"]) == 0
    [shown] = json.loads(capsys.readouterr().out)
    assert (shown["state"], shown["last_error"], shown["owed"], shown["missing"]) == (
        "backing off",
        "cannot reach Telegram",
        2,
        12,
    )
    with Center(Settings.from_env(), tokens={"operator": "o" * 24, "viewer": "v" * 24}) as center:
        [channel] = center.client(Authorization=f"Bearer {'v' * 24}").get("/api/users").json()["channels"]
        page = center.client(Authorization=f"Bearer {'v' * 24}").get("/operate/users").text
    assert channel["state"] == "backing off" and [d["last_error"] for d in channel["missing"]] == ["missing why"] * 12
    assert "cannot reach Telegram" in page and page.count("missing why") == 10  # the first few
