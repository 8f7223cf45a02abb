"""Reminders of an undecided approval, to a real loopback ntfy receiver: once after the reminder
interval, once shortly before it expires, each once however many sweeps (and processes) ask, each
recorded in `alerts`; none for a decided approval; none when switched off."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from hearth.audit import approvals
from hearth.audit.approvals import utc_clock
from hearth.audit.store import AuditStore, RunRecord
from hearth.dispatch.launchers.local import LocalLauncher
from hearth.dispatch.spawner import Spawner
from hearth.errors import ConfigError
from hearth.leash import alerts
from hearth.settings import Settings
from tests.alert_support import Receiver, write_alerts_toml
from tests.queue_support import rows


@pytest.fixture
def ntfy() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.close()


def _configure(tmp_path: Path, ntfy: Receiver, approval_table: str) -> Settings:
    write_alerts_toml(tmp_path / "config", ("phone", f"ntfy://127.0.0.1:{ntfy.port}/hearth", ["approval"]))
    with (tmp_path / "config" / "alerts.toml").open("a") as toml:
        toml.write(approval_table)
    settings = Settings.from_env()
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    return settings


def _sweep(settings: Settings, at: timedelta, asked: object) -> list[str]:
    with AuditStore(settings.audit_path) as audit:
        sent = alerts.remind_due(settings, audit, asked + at)  # type: ignore[operator]
    alerts.flush()
    return sent


def test_an_undecided_approval_is_reminded_once_after_the_interval_and_once_before_it_expires(
    state_dir: Path, tmp_path: Path, ntfy: Receiver
) -> None:
    settings = _configure(tmp_path, ntfy, '[approval]\nremind_after = "30m"\nremind_before = "10m"\n')
    asked = utc_clock()
    with AuditStore(settings.audit_path) as audit:
        audit.start_run(RunRecord(id="run1", agent_name="default", model="m", goal="g", mode="auto"))
        approval = approvals.ask(
            audit, "run1", "run_command", {"command": "make deploy"}, "x", timeout_s=7200, now=lambda: asked
        )
        decided = approvals.ask(audit, "run1", "run_command", {"command": "ls"}, "x", timeout_s=7200, now=lambda: asked)
        approvals.decide(audit, decided.id, granted=True, by="cli:me")
    assert _sweep(settings, timedelta(minutes=29), asked) == []
    assert _sweep(settings, timedelta(minutes=31), asked) == [f"{approval.id}:after"]
    assert _sweep(settings, timedelta(minutes=32), asked) == []  # the next sweep: sent already
    assert _sweep(settings, timedelta(minutes=111), asked) == [f"{approval.id}:before"]
    assert _sweep(settings, timedelta(minutes=115), asked) == []
    titles = [got["body"]["title"] for got in ntfy.got]
    assert titles == [
        f"hearth: approval {approval.id} still waits",
        f"hearth: approval {approval.id} expires in 9 min 0 s",
    ]
    assert all("make deploy" in got["body"]["message"] for got in ntfy.got)
    recorded = rows(settings.state_dir, "select event, destination, status, title from alerts order by id")
    assert [(r["event"], r["status"], r["title"]) for r in recorded] == [("approval", "sent", t) for t in titles]


def test_reminders_switched_off_send_nothing(state_dir: Path, tmp_path: Path, ntfy: Receiver) -> None:
    settings = _configure(tmp_path, ntfy, "[approval]\nremind_after = false\nremind_before = false\n")
    asked = utc_clock()
    with AuditStore(settings.audit_path) as audit:
        audit.start_run(RunRecord(id="run1", agent_name="default", model="m", goal="g", mode="auto"))
        approvals.ask(audit, "run1", "run_command", {"command": "x"}, "x", timeout_s=7200, now=lambda: asked)
    assert _sweep(settings, timedelta(minutes=119), asked) == []
    assert ntfy.got == []


def test_a_short_wait_gets_no_before_reminder_its_first_alert_already_said_the_time_left(
    state_dir: Path, tmp_path: Path, ntfy: Receiver
) -> None:
    settings = _configure(tmp_path, ntfy, '[approval]\nremind_after = "1h"\nremind_before = "15m"\n')
    asked = utc_clock()
    with AuditStore(settings.audit_path) as audit:
        audit.start_run(RunRecord(id="run1", agent_name="default", model="m", goal="g", mode="auto"))
        approvals.ask(audit, "run1", "run_command", {"command": "x"}, "x", timeout_s=600, now=lambda: asked)
    assert _sweep(settings, timedelta(minutes=9), asked) == []
    assert ntfy.got == []


@pytest.mark.parametrize(
    ("table", "error"),
    [
        ('[approval]\nremind_after = "soon"\n', "approval.remind_after"),
        ('[approval]\npublic_url = "hearth.lan"\n', "approval.public_url must be an http"),
        ("[approval]\nremind = 1\n", "unknown key 'remind'"),
    ],
)
def test_a_bad_approval_table_is_one_line_naming_the_file_and_the_key(
    tmp_path: Path, ntfy: Receiver, table: str, error: str
) -> None:
    write_alerts_toml(tmp_path, ("phone", f"ntfy://127.0.0.1:{ntfy.port}/hearth", None))
    with (tmp_path / "alerts.toml").open("a") as toml:
        toml.write(table)
    with pytest.raises(ConfigError, match=error) as refused:
        alerts.load_approval_alerts(tmp_path)
    assert "\n" not in str(refused.value) and "alerts.toml" in str(refused.value)
    with pytest.raises(ConfigError, match=error):  # so hearth doctor reports it with the file
        alerts.load_destinations(tmp_path)


def test_the_spawner_s_sweep_sends_the_reminders_a_suspended_run_cannot(
    state_dir: Path, tmp_path: Path, ntfy: Receiver
) -> None:
    settings = _configure(tmp_path, ntfy, '[approval]\nremind_after = "1s"\nremind_before = false\n')
    asked = utc_clock() - timedelta(minutes=5)  # asked a while ago, by a run that has since suspended
    with AuditStore(settings.audit_path) as audit:
        audit.start_run(RunRecord(id="run1", agent_name="default", model="m", goal="g", mode="auto"))
        audit.update_run("run1", status="waiting")
        approval = approvals.ask(
            audit, "run1", "run_command", {"command": "make"}, "x", timeout_s=7200, now=lambda: asked
        )
    reported: list[tuple[str, str, str]] = []
    with Spawner(settings, LocalLauncher(settings), report=lambda *said: reported.append(said)) as spawner:
        spawner.sweep()
        spawner.sweep()  # once, however many sweeps
    alerts.flush()
    assert [r for r in reported if r[0] == "reminded"] == [("reminded", f"{approval.id}:after", "")]
    assert [got["body"]["title"] for got in ntfy.got] == [f"hearth: approval {approval.id} still waits"]
