"""A role's heartbeats: upkeep turns that continue one conversation, a strategic review exactly when
due, a role switched off skipped and refused, each firing in the audit."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hearth.errors import UsageError
from hearth.roles import heartbeat, switch
from hearth.roles.home import home_of, read_record
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.roles_support import make_role, rows, run_queued, settings_for

ROLE = 'home = true\nheartbeat = "hourly"\nmodel = "qwen2.5-coder"\n'


def test_three_heartbeats_continue_one_conversation_and_review_exactly_when_due(tmp_path: Path) -> None:
    make_role(tmp_path / "config", "household", ROLE)
    script = [
        final_answer("reviewed: the plan stands"),
        tool_call("read_file", {"path": "agent/inbox.md"}),
        final_answer("the inbox is empty"),
        final_answer("reviewed again"),
    ]
    with FakeOllama(script) as fake:
        settings = settings_for(tmp_path, fake.url)
        now = datetime.now(UTC)
        first = heartbeat.fire(settings, "household", by="test", source="timer", now=now)
        first_run, first_status = run_queued(first, settings)
        second = heartbeat.fire(settings, "household", by="test", source="timer", now=now + timedelta(hours=1))
        second_run, second_status = run_queued(second, settings)
        third = heartbeat.fire(settings, "household", by="test", source="timer", now=now + timedelta(hours=25))
        third_run, third_status = run_queued(third, settings)
    assert (first_status, second_status, third_status) == ("done", "done", "done")
    assert [first.kind, second.kind, third.kind] == ["strategic-review", "upkeep", "strategic-review"]
    assert first.why == "the role has no record yet" and "older than 24 h" in third.why
    sent = [request["messages"] for request in fake.requests]
    assert len(sent) == 4
    for earlier, later in zip(sent, sent[1:], strict=False):
        assert later[: len(earlier)] == earlier  # each request begins with the one before it
    assert all([m["role"] for m in messages].count("system") == 1 for messages in sent)
    goals = [m["content"] for m in sent[-1] if m["role"] == "user"]
    assert [g.split(":")[0] for g in goals] == ["Strategic review", "Heartbeat", "Strategic review"]
    runs = rows(settings, "select id, kind, label, workspace from runs order by started_at")
    assert [r["kind"] for r in runs] == ["heartbeat"] * 3
    assert {r["workspace"] for r in runs} == {str(home_of(settings, "household").resolve())}
    steps = rows(settings, "select run_id, detail from steps where kind = 'heartbeat' order by id")
    assert f"from run {first_run}" in next(s["detail"] for s in steps if s["run_id"] == second_run)
    assert f"from run {second_run}" in next(s["detail"] for s in steps if s["run_id"] == third_run)
    fired = rows(settings, "select subject, ok, detail from operator_actions where area = 'roles'")
    assert [(f["subject"], f["ok"]) for f in fired] == [("household", 1)] * 3
    assert fired[1]["detail"].startswith("upkeep: the last strategic review")


def test_a_done_strategic_review_sets_last_strategic_review_and_an_upkeep_does_not(tmp_path: Path) -> None:
    make_role(tmp_path / "config", "household", ROLE)
    with FakeOllama([final_answer("reviewed"), final_answer("kept")]) as fake:
        settings = settings_for(tmp_path, fake.url)
        before = datetime.now(UTC).replace(microsecond=0)
        run_queued(heartbeat.fire(settings, "household", by="test", source="cli"), settings)
        stamped = read_record(home_of(settings, "household")).front["last_strategic_review"]
        run_queued(heartbeat.fire(settings, "household", by="test", source="cli"), settings)
    assert stamped >= before
    assert read_record(home_of(settings, "household")).front["last_strategic_review"] == stamped


def test_a_strategic_review_asked_for_is_chosen_though_not_due(tmp_path: Path) -> None:
    make_role(tmp_path / "config", "household", ROLE)
    settings = settings_for(tmp_path)
    home = home_of(settings, "household")
    (home / "agent").mkdir(parents=True)
    (home / "agent" / "record.md").write_text(f"---\nlast_strategic_review: {datetime.now(UTC).isoformat()}\n---\n")
    assert heartbeat.fire(settings, "household", by="t", source="cli").kind == "upkeep"
    asked = heartbeat.fire(settings, "household", by="t", source="cli", review=True)
    assert (asked.kind, asked.why) == ("strategic-review", "a strategic review was asked for")


def test_the_review_interval_is_the_roles_own(tmp_path: Path) -> None:
    make_role(tmp_path / "config", "household", ROLE + 'strategic_review = "2h"\n')
    settings = settings_for(tmp_path)
    home = home_of(settings, "household")
    (home / "agent").mkdir(parents=True)
    three_hours_ago = (datetime.now(UTC) - timedelta(hours=3)).isoformat()
    (home / "agent" / "record.md").write_text(f"---\nlast_strategic_review: {three_hours_ago}\n---\n")
    fired = heartbeat.fire(settings, "household", by="t", source="cli")
    assert fired.kind == "strategic-review" and "older than 2 h" in fired.why


def test_an_unreadable_record_makes_the_heartbeat_a_review_naming_the_problem(tmp_path: Path) -> None:
    make_role(tmp_path / "config", "household", ROLE)
    settings = settings_for(tmp_path)
    home = home_of(settings, "household")
    (home / "agent").mkdir(parents=True)
    (home / "agent" / "record.md").write_text("---\nlast_strategic_review: last tuesday\n---\n")
    fired = heartbeat.fire(settings, "household", by="t", source="cli")
    assert fired.kind == "strategic-review"
    assert "last_strategic_review must be a time" in fired.why and "record.md" in fired.why


def test_a_switched_off_role_skips_its_heartbeat_recorded_and_its_requests_are_refused(tmp_path: Path) -> None:
    make_role(tmp_path / "config", "household", ROLE)
    with FakeOllama([]) as fake:
        settings = settings_for(tmp_path, fake.url)
        made = heartbeat.fire(settings, "household", by="t", source="cli")  # queued while on
        switch.disable(settings, "household", by="ada", reason="on holiday")
        skipped = heartbeat.fire(settings, "household", by="t", source="timer")
        with pytest.raises(UsageError) as refused:
            run_queued(made, settings)
    assert skipped.skipped and "switched off (by ada" in skipped.why and "on holiday" in skipped.why
    assert "its requests are refused while it is off" in str(refused.value)
    assert fake.requests == []
    [run] = rows(settings, "select status, error from runs")
    assert run["status"] == "rejected" and "role household is switched off" in run["error"]
    actions = rows(settings, "select ok, detail from operator_actions where area = 'roles' order by id")
    assert [a["ok"] for a in actions] == [1, 0] and actions[1]["detail"].startswith("skipped: role household")


def test_enabled_false_in_the_config_switches_the_role_off(tmp_path: Path) -> None:
    make_role(tmp_path / "config", "household", ROLE + "enabled = false\n")
    settings = settings_for(tmp_path)
    fired = heartbeat.fire(settings, "household", by="t", source="timer")
    assert fired.skipped and "enabled = false" in fired.why
    assert not list(settings.queue_dir.glob("*.json"))


def test_a_sweep_fires_one_heartbeat_per_role_with_a_heartbeat(tmp_path: Path) -> None:
    make_role(tmp_path / "config", "household", ROLE)
    make_role(tmp_path / "config", "garden", ROLE)
    make_role(tmp_path / "config", "archive", "home = true\n")  # a role without a heartbeat
    make_role(tmp_path / "config", "away", ROLE + "enabled = false\n")
    settings = settings_for(tmp_path)
    fired, problems = heartbeat.sweep(settings, by="t", source="cli")
    assert problems == []
    assert sorted((f.role, f.skipped) for f in fired) == [("away", True), ("garden", False), ("household", False)]
    assert len(list(settings.queue_dir.glob("*.json"))) == 2


def test_a_heartbeat_of_a_profile_that_is_not_a_role_is_refused(tmp_path: Path) -> None:
    make_role(tmp_path / "config", "scout", 'model = "qwen2.5-coder"\n')
    with pytest.raises(UsageError, match="not a role; add home = true"):
        heartbeat.fire(settings_for(tmp_path), "scout", by="t", source="cli")


def test_a_role_with_a_heartbeat_is_a_mission_that_fires_it_and_skips_while_paused(tmp_path: Path) -> None:
    from hearth.leash.missions import fire, load_missions, pause_mission

    make_role(tmp_path / "config", "household", ROLE)
    settings = settings_for(tmp_path)
    missions, problems = load_missions(settings)
    [mission] = missions
    assert (mission.name, mission.schedule, mission.role, problems) == (
        "heartbeat-household",
        "hourly",
        "household",
        [],
    )
    done = fire(settings, mission, source="timer", by="hearth watch", now=datetime.now())
    assert done is not None and done.notes == ["strategic-review: the role has no record yet"]
    queued = json.loads(done.path.read_text())
    assert (queued["agent_name"], queued["heartbeat"], queued["requested_by"]) == (
        "household",
        "strategic-review",
        "hearth watch",
    )
    pause_mission(settings, mission, by="ada")
    assert fire(settings, mission, source="timer", by="hearth watch", now=datetime.now()) is None
    assert len(list(settings.queue_dir.glob("*.json"))) == 1


def test_hearth_watch_fires_a_heartbeat_unless_a_systemd_timer_does(tmp_path: Path) -> None:
    from hearth.leash.missions import Timetable

    make_role(tmp_path / "config", "household", ROLE)
    make_role(tmp_path / "config", "garden", ROLE + 'heartbeat_timer = "systemd"\n')
    timetable = Timetable(settings_for(tmp_path), datetime(2026, 12, 7, 21, 30))
    assert {name: at.isoformat() for name, (_, at) in timetable.next.items()} == {
        "heartbeat-household": "2026-12-07T22:00:00"
    }
