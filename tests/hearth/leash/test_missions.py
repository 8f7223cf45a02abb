"""Missions: scheduled goals you can list, run now, pause and resume; fired by `hearth watch` too."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from hearth.leash.schedule import CalendarError, parse_calendar
from tests.cli_support import Lines, start_watch, stop_watch
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer
from tests.queue_support import listing, rows, wait_for

NOTES = """
schedule = "daily"
goal = "Tidy the notes."
agent = "default"
model = "auto"
mode = "plan"
allowed_tools = ["read_file", "list_files"]
max_iterations = 3
max_tokens = 5000
label = "nightly notes"
"""


def _mission(config: Path, name: str, text: str) -> None:
    (config / "missions").mkdir(parents=True, exist_ok=True)
    (config / "missions" / f"{name}.toml").write_text(text)


def _listed(name: str) -> dict[str, object]:
    proc = run_cli("hearth", "missions", "--json")
    return next(m for m in json.loads(proc.stdout)["missions"] if m["name"] == name)


def test_hearth_missions_shows_runs_and_pauses_a_mission(state_dir: Path, tmp_path: Path) -> None:
    _mission(tmp_path / "config", "notes", NOTES)
    listed = run_cli("hearth", "missions")
    assert listed.returncode == 0, listed.stderr
    assert re.search(
        r"notes\s+daily\s+in \d+ (?:h|min)(?: \d+ min)?\s+never\s+-\s+0\s+default\s+Tidy the notes.", listed.stdout
    )
    run_id = run_cli("hearth", "missions", "run", "notes").stdout.strip()
    assert run_id.startswith("notes-")
    with FakeOllama([final_answer("tidy")]) as fake:
        assert run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url}).returncode == 0
    [run] = rows(state_dir, "select * from runs")
    assert (run["id"], run["status"], run["mode"], run["label"], run["requested_by"]) == (
        run_id, "done", "plan", "nightly notes", "mission:notes"
    )  # fmt: skip
    assert fake.requests[0]["messages"] and {t["function"]["name"] for t in fake.requests[0]["tools"]} == {
        "read_file",
        "list_files",
    }
    shown = _listed("notes")
    assert (shown["last_run"], shown["last_status"], shown["paused"]) == (run_id, "done", None)

    paused = run_cli("hearth", "missions", "pause", "notes")
    assert paused.stdout.startswith("mission notes is paused since ")
    fired = run_cli("hearth", "missions", "fire", "notes")  # what its timer runs
    assert fired.stdout.strip() == "mission notes is paused: skipped"
    assert [n for n in listing(state_dir / "queue") if n.endswith(".json")] == []
    shown = _listed("notes")
    assert str(shown["paused"]).startswith("since ") and shown["skipped"] == 1
    assert "since " in run_cli("hearth", "missions").stdout
    assert run_cli("hearth", "missions", "resume", "notes").stdout.strip() == "mission notes resumed"
    again = run_cli("hearth", "missions", "fire", "notes").stdout.strip()
    assert again.startswith("notes-") and f"{again}.json" in listing(state_dir / "queue")


def test_hearth_watch_fires_missions_on_their_schedule_and_skips_a_paused_one(state_dir: Path, tmp_path: Path) -> None:
    config = tmp_path / "config"
    _mission(config, "tick", 'schedule = "*-*-* *:*:*"\ngoal = "tick"\n')  # every second
    _mission(config, "nixos", 'schedule = "*-*-* *:*:*"\ngoal = "not mine"\ntimer = "systemd"\n')
    with FakeOllama([final_answer("tock")], repeat_last=True) as fake:
        watch = start_watch({"OLLAMA_HOST": fake.url})
        out = Lines(watch)
        try:
            out.wait_for('"event": "mission", "name": "tick", "detail": "enqueued tick-')
            wait_for(lambda: rows(state_dir, "select 1 from runs where status = 'done'"), what="a mission's run")
            assert run_cli("hearth", "missions", "pause", "tick").returncode == 0
            out.wait_for('"name": "tick", "detail": "skipped: the mission is paused"')
        finally:
            stop_watch(watch)
    runs = rows(state_dir, "select requested_by, source from runs")
    assert {(r["requested_by"], r["source"]) for r in runs} == {("mission:tick", "timer")}  # never `nixos`
    assert _listed("tick")["skipped"] >= 1


def test_a_mission_whose_time_passed_while_nothing_watched_fires_once_at_start(state_dir: Path, tmp_path: Path) -> None:
    from hearth.leash.missions import Timetable
    from hearth.leash.missions import state_dir as missions_state
    from hearth.settings import Settings

    config = tmp_path / "config"
    for name in ("missed", "fresh", "never"):
        _mission(config, name, 'schedule = "daily"\ngoal = "g"\n')  # at midnight
    now = datetime(2026, 3, 10, 12, 0)
    missions_state(Settings.from_env()).mkdir(parents=True)
    last = {"missed": "2026-03-08T12:00:00.000Z", "fresh": datetime(2026, 3, 10, 6, 0).astimezone().isoformat()}
    for name, when in last.items():  # "never" has no record: it never fired, so it never missed
        (missions_state(Settings.from_env()) / f"{name}.json").write_text(json.dumps({"last_fired": when}))
    table = Timetable(Settings.from_env(), now)
    assert [m.name for m in table.due(now)] == ["missed"] and table.missed == {"missed"}
    assert table.due(now) == []  # once: its next elapse is tonight's
    table.reload(now)  # a sweep's re-read never catches up again
    assert table.due(now) == []


def test_a_bad_mission_file_is_reported_and_skipped_never_fatal(state_dir: Path, tmp_path: Path) -> None:
    config = tmp_path / "config"
    _mission(config, "good", 'schedule = "hourly"\ngoal = "fine"\n')
    _mission(config, "agentless", 'schedule = "hourly"\ngoal = "g"\nagent = "nobody"\n')
    _mission(config, "odd", 'schedule = "*-*-* 06:00 Europe/Berlin"\ngoal = "g"\n')
    _mission(config, "typo", 'schedule = "daily"\ngoal = "g"\nmode = "yolo"\n')
    _mission(config, "broken", "schedule = ")
    proc = run_cli("hearth", "missions")
    assert proc.returncode == 1 and "good" in proc.stdout
    errors = dict(line.removeprefix("hearth missions: skipped ").split(": ", 1) for line in proc.stderr.splitlines())
    assert errors[str(config / "missions" / "agentless.toml")].startswith("agent 'nobody' is not a profile")
    assert "time zones are not supported" in errors[str(config / "missions" / "odd.toml")]
    assert errors[str(config / "missions" / "typo.toml")].startswith("mode must be 'plan', 'auto' or")
    assert errors[str(config / "missions" / "broken.toml")].startswith("not valid TOML")
    doctor = run_cli("hearth", "doctor", "--json")
    found = [f for f in json.loads(doctor.stdout)["findings"] if f["check"] == "missions"]
    assert {f["status"] for f in found} == {"ok", "error"} and len(found) == 5
    assert run_cli("hearth", "missions", "run", "typo").returncode == 2


EXPRESSIONS = [
    "hourly",
    "daily",
    "weekly",
    "monthly",
    "quarterly",
    "yearly",
    "minutely",
    "*-*-* 06:00:00",
    "Mon..Fri 09:30",
    "*-*-1,15 12:00",
    "*:0/15",
    "Sat,Sun 10:00",
    "*-02-29 00:00",
    "Tue,Thu *-*-* 18:05:30",
    "*-*-* 08..10:00/20",
    "Fri *-*-13 13:13",
]


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_the_schedule_parser_agrees_with_systemd_analyze(expression: str) -> None:
    base = "2026-02-27 23:59:58"
    out = subprocess.run(
        ["systemd-analyze", "calendar", "--iterations", "5", f"--base-time={base}", expression],
        capture_output=True,
        text=True,
        env={"TZ": "UTC", "PATH": "/usr/bin:/bin"},
        check=True,
    ).stdout
    theirs = re.findall(r"(?:Next elapse|Iter\. #\d+): \w+ (\S+ \S+)", out)
    calendar, moment, mine = parse_calendar(expression), datetime.fromisoformat(base), []
    for _ in range(5):
        moment = calendar.next_after(moment)  # type: ignore[assignment]
        mine.append(moment.strftime("%Y-%m-%d %H:%M:%S"))
    assert mine == theirs


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("*-*-* 06:00 UTC", "time zones are not supported"),
        ("*-*~03", "the last days of a month (~) are not supported"),
        ("Mun 10:00", "'Mun' is not a weekday"),
        ("*-*-* 25:00", "'25' is not a hour from 0 to 23"),
        ("*-*-* 06:00:00.5", "fractions of a second are not supported"),
        ("", "the schedule is empty"),
    ],
)
def test_a_schedule_outside_the_subset_is_refused_with_its_reason(expression: str, reason: str) -> None:
    with pytest.raises(CalendarError, match=re.escape(reason)):
        parse_calendar(expression)
