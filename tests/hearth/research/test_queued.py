"""A research run through the queue, as a user starts one: `hearth research` queues it, `hearth
spawn --local` runs it until its plan waits (its process ends, holding nothing), `hearth approve`
wakes it, the next spawn goes on from its record to the report. Real processes, the fake Ollama
playing the phases; the search endpoint is on loopback, which the production guard refuses, so
the run's searches are recorded refused and the report has no evidence to cite."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from tests.cli_support import start_watch, stop_watch
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama
from tests.queue_support import listing, rows, wait_for
from tests.research_support import Script, phase_of

ENV = {"HEARTH_SUSPEND_AFTER_S": "0", "HEARTH_SEARCH_URL": "http://127.0.0.1:9/search"}


def phases(fake: FakeOllama) -> list[str]:
    return [str(body["messages"][0]["content"]).split()[1] for body in fake.requests]


def test_a_queued_research_run_waits_holding_nothing_and_goes_on_from_its_record_once_approved(
    state_dir: Path,
) -> None:
    queued = run_cli("hearth", "research", "What changed in Python 3.13?", "--id", "q1", "--max-rounds", "2")
    assert queued.returncode == 0, queued.stderr
    with FakeOllama([Script()], repeat_last=True) as fake:
        env = {"OLLAMA_HOST": fake.url, **ENV}
        first = run_cli("hearth", "spawn", "--local", env=env)
        assert first.returncode == 0, first.stderr
        [run] = rows(state_dir, "select status, kind from runs where id = 'q1'")
        assert (run["status"], run["kind"]) == ("waiting", "research")
        assert phases(fake) == ["plan"]
        assert listing(state_dir / "queue" / "claimed") == ["q1.json"]  # kept until it goes on

        [pending] = json.loads(run_cli("hearth", "approvals", "--json").stdout)
        assert pending["tool"] == "research_plan"
        assert run_cli("hearth", "approve", pending["id"]).returncode == 0
        second = run_cli("hearth", "spawn", "--local", env=env)
        assert second.returncode == 0, second.stderr
        assert "resumed q1" in second.stdout, second.stdout

    assert phases(fake) == ["plan", "direct", "write"]  # no second plan: decide, then the synthesis
    [run] = rows(state_dir, "select status, summary from runs where id = 'q1'")
    assert run["status"] == "done"
    searched = rows(state_dir, "select verdict, output from steps where run_id = 'q1' and kind = 'search'")
    assert [s["verdict"] for s in searched] == ["failed", "failed"]
    assert all("refused" in s["output"] and "127.0.0.1" in s["output"] for s in searched)
    report = run_cli("hearth", "research", "--report", "q1").stdout
    assert report == run["summary"] and "0 claims cited, 1 caveat, 0 sources" in report
    assert "## Sources" not in report  # nothing read, nothing listed
    assert listing(state_dir / "queue" / "claimed") == []


def test_a_mission_under_a_profile_with_a_research_table_queues_a_research_run_with_its_limits(
    state_dir: Path, tmp_path: Path
) -> None:
    agents = tmp_path / "config" / "agents" / "scout"
    agents.mkdir(parents=True)
    (agents / "agent.toml").write_text('name = "scout"\n[research]\nmax_sub_questions = 1\n')
    (tmp_path / "config" / "missions").mkdir()
    mission = 'schedule = "daily"\ngoal = "What changed in Python 3.13?"\nagent = "scout"\n'
    (tmp_path / "config" / "missions" / "weekly.toml").write_text(mission)
    fired = run_cli("hearth", "missions", "run", "weekly")
    assert fired.returncode == 0, fired.stderr
    with FakeOllama([Script()], repeat_last=True) as fake:
        assert run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url, **ENV}).returncode == 0
    [run] = rows(state_dir, "select id, status, kind, requested_by from runs")
    assert (run["id"], run["status"], run["kind"]) == (fired.stdout.strip(), "waiting", "research")
    assert run["requested_by"] == "mission:weekly" and phases(fake) == ["plan"]
    schema = fake.requests[0]["format"]  # the profile's limit holds the planner to one sub-question
    assert schema["properties"]["sub_questions"]["maxItems"] == 1


def test_hearth_stop_ends_a_research_run_in_the_middle_of_a_phase_and_it_does_not_go_on(state_dir: Path) -> None:
    script, deciding, release = Script(), threading.Event(), threading.Event()

    def answer(body: dict[str, object]) -> dict[str, object]:
        if phase_of(body["messages"]) == "decide":  # type: ignore[arg-type]
            deciding.set()  # the marker: the resumed run is in its decide phase
            release.wait(60)
        return script(body)  # type: ignore[arg-type]

    assert run_cli("hearth", "research", "What changed in Python 3.13?", "--id", "q1").returncode == 0
    with FakeOllama([answer], repeat_last=True) as fake:
        watch = start_watch({"OLLAMA_HOST": fake.url, **ENV})
        try:
            wait_for(lambda: run_cli("hearth", "approvals", "--json").stdout.strip() not in ("", "[]"), 60)
            [pending] = json.loads(run_cli("hearth", "approvals", "--json").stdout)
            assert run_cli("hearth", "approve", pending["id"]).returncode == 0
            assert deciding.wait(60), stop_watch(watch)
            stopped = run_cli("hearth", "stop", "q1")
            assert stopped.returncode == 0, stopped.stderr
            wait_for(lambda: rows(state_dir, "select status from runs where id = 'q1'")[0]["status"] == "interrupted")
        finally:
            release.set()
            stop_watch(watch)
    [run] = rows(state_dir, "select status, error from runs where id = 'q1'")
    assert run["status"] == "interrupted" and "stop" in run["error"]
    assert phases(fake) == ["plan", "direct"]  # nothing asked after the stop, nothing asked again
    assert rows(state_dir, "select count(*) as n from steps where run_id = 'q1' and kind = 'stop'")[0]["n"] >= 1
    assert listing(state_dir / "queue" / "claimed") == []
