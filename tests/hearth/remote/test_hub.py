"""The hub's side of the fleet alone, on a real audit file: tokens, claims, events written once,
what a worker may not send, when a worker is lost; and the fleet's settings."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from hearth.audit.store import AuditStore, RunRecord
from hearth.errors import ConfigError, NotFound, UsageError
from hearth.fleet.config import FleetConfig, queue_for
from hearth.remote import hub
from hearth.run.events import RunStarted, StepRecorded, to_json


@pytest.fixture
def audit(tmp_path: Path) -> AuditStore:
    return AuditStore(tmp_path / "audit.db")


def worker(audit: AuditStore, name: str) -> hub.Worker:
    token = hub.add_worker(audit, name, [], "test")
    return hub.identify(audit, f"Bearer {token}")


def started(run_id: str) -> RunStarted:
    return RunStarted.of(RunRecord(id=run_id, agent_name="default", model="m", goal="g", mode="auto"))


def item(event_id: str, event: object) -> dict[str, str]:
    return {"id": event_id, "event": to_json(event)}  # type: ignore[arg-type]


def test_a_token_names_its_worker_and_only_its_hash_is_kept(audit: AuditStore) -> None:
    token = hub.add_worker(audit, "gpu1", ["big"], "test")
    assert hub.identify(audit, f"Bearer {token}").name == "gpu1"
    assert token not in str(audit.rows("select * from fleet_workers"))
    for wrong in ("", "Bearer hw-nope", f"Basic {token}"):
        with pytest.raises(hub.WorkerRefused) as refused:
            hub.identify(audit, wrong)
        assert refused.value.status == 401


def test_the_first_claim_runs_and_a_redelivery_to_another_worker_is_dropped_and_counted(audit: AuditStore) -> None:
    one, two = worker(audit, "one"), worker(audit, "two")
    hub.sent(audit, "r1", "general", None, None)
    assert hub.claim(audit, one, "r1") == {"go": "run"}
    again = hub.claim(audit, two, "r1")
    assert again["go"] == "drop" and "one's" in again["why"]
    assert hub.fleet_run(audit, "r1")["refused"] == 1  # type: ignore[index]
    with pytest.raises(hub.WorkerRefused):
        hub.claim(audit, one, "never-sent")


def test_a_batch_sent_twice_is_written_once(audit: AuditStore) -> None:
    one = worker(audit, "one")
    hub.sent(audit, "r1", "general", None, None)
    hub.claim(audit, one, "r1")
    batch = [item("e-0000001", started("r1")), item("e-0000002", StepRecorded("r1", "note", {"detail": "x"}))]
    assert hub.accept(audit, one, batch)["written"] == 2
    assert hub.accept(audit, one, batch) == {"written": 0, "skipped": 2, "finished": [], "asked": []}
    assert len(audit.rows("select * from steps where run_id = 'r1'")) == 1
    assert audit.run("r1")["worker"] == "one"  # type: ignore[index]


def test_an_event_of_a_run_the_worker_did_not_claim_refuses_the_batch_and_names_it(audit: AuditStore) -> None:
    one, two = worker(audit, "one"), worker(audit, "two")
    for run_id in ("r1", "r2"):
        hub.sent(audit, run_id, "general", None, None)
    hub.claim(audit, one, "r1")
    hub.claim(audit, two, "r2")
    batch = [item("e-0000001", started("r1")), item("e-0000002", started("r2"))]
    with pytest.raises(hub.WorkerRefused) as refused:
        hub.accept(audit, one, batch)
    assert (refused.value.status, refused.value.index) == (403, 1)
    assert audit.run("r1") is None  # nothing of a refused batch is written


def test_a_worker_that_says_it_is_the_runs_worker_is_refused(audit: AuditStore) -> None:
    one = worker(audit, "one")
    hub.sent(audit, "r1", "general", None, None)
    hub.claim(audit, one, "r1")
    hub.accept(audit, one, [item("e-0000001", started("r1"))])
    from hearth.run.events import RunUpdated

    with pytest.raises(hub.WorkerRefused):
        hub.accept(audit, one, [item("e-0000002", RunUpdated("r1", {"worker": "someone-else"}))])


def test_a_worker_is_lost_only_for_silence_the_door_was_up_to_hear(audit: AuditStore) -> None:
    one = worker(audit, "one")
    hub.sent(audit, "r1", "general", None, None)
    hub.claim(audit, one, "r1")
    hub.accept(audit, one, [item("e-0000001", started("r1"))])
    later = time.time() + hub.LOST_S + 5
    assert hub.lost(audit, "r1", later) is None  # no door has been up: nobody could hear it
    hub.door_alive(audit.path, time.time() - 1000)
    audit.conn.execute("update fleet_door set alive_at = ?", [later])
    assert "worker lost: one" in (hub.lost(audit, "r1", later) or "")
    hub.heartbeat(audit, one, [], [{"run_id": "r1", "state": "running"}])
    assert hub.lost(audit, "r1", time.time()) is None


def test_a_budget_spent_at_the_hub_stops_the_workers_run_which_ends_budget_exceeded(audit: AuditStore) -> None:
    from datetime import datetime

    from hearth.leash.budget import Budget
    from hearth.run.events import RunFinished

    one = worker(audit, "one")
    hub.sent(audit, "r1", "general", None, None)
    hub.claim(audit, one, "r1")
    turn = StepRecorded("r1", "model", {"tokens_in": 40, "tokens_out": 20})
    hub.accept(audit, one, [item("e-0000001", started("r1")), item("e-0000002", turn)])
    running = [{"run_id": "r1", "state": "running"}]
    now = datetime.now().astimezone()

    assert hub.heartbeat(audit, one, [], running, budget=Budget(daily=100), now=now)["stop"] == {}
    answer = hub.heartbeat(audit, one, [], running, budget=Budget(daily=60), now=now)

    assert answer["stop"]["r1"].startswith("stopped: the daily token budget of 60 tokens is spent (60 used today)")
    signalled = RunFinished("r1", "interrupted", {"error": "interrupted by a signal"})
    hub.accept(audit, one, [item("e-0000003", signalled)])
    run = audit.run("r1") or {}
    assert (run["status"], run["error"]) == ("budget_exceeded", answer["stop"]["r1"])


def test_an_operators_stop_is_not_taken_over_by_a_budget_spent_later(audit: AuditStore) -> None:
    from datetime import datetime

    from hearth.leash.budget import Budget

    one = worker(audit, "one")
    hub.sent(audit, "r1", "general", None, None)
    hub.claim(audit, one, "r1")
    hub.accept(
        audit, one, [item("e-0000001", started("r1")), item("e-0000002", StepRecorded("r1", "model", {"tokens_in": 9}))]
    )
    hub.ask_stop(audit, "r1", "stopped at the hub")
    answer = hub.heartbeat(audit, one, [], [{"run_id": "r1"}], budget=Budget(daily=1), now=datetime.now().astimezone())
    assert answer["stop"] == {"r1": "stopped at the hub"}
    assert (hub.fleet_run(audit, "r1") or {})["stop_status"] == "interrupted"


def test_labels_are_the_hubs_to_give_and_a_claim_without_the_label_is_sent_back(audit: AuditStore) -> None:
    one = worker(audit, "one")
    hub.sent(audit, "r1", "worker.big", "m", "big")
    assert hub.heartbeat(audit, one, [], [])["labels"] == []
    assert hub.claim(audit, one, "r1")["go"] == "wait"  # back to the broker, for a worker labelled big
    assert (hub.fleet_run(audit, "r1") or {})["worker"] is None

    assert hub.set_labels(audit, "one", ["big", "gpu", "big"]) == ("big", "gpu")
    relabelled = hub.identify(audit, "Bearer " + hub.add_worker(audit, "two", [], "test"))
    assert hub.heartbeat(audit, hub.workers(audit)[0], [], [])["labels"] == ["big", "gpu"]
    assert hub.claim(audit, hub.workers(audit)[0], "r1")["go"] == "run"
    assert relabelled.labels == ()
    with pytest.raises(UsageError):
        hub.set_labels(audit, "one", ["Not A Label"])
    with pytest.raises(NotFound):
        hub.set_labels(audit, "nobody", ["big"])


def test_a_worker_reads_only_the_approvals_of_its_own_runs(audit: AuditStore) -> None:
    from hearth.audit import approvals

    one, two = worker(audit, "one"), worker(audit, "two")
    for run_id, who in (("r1", one), ("r2", two)):
        hub.sent(audit, run_id, "general", None, None)
        hub.claim(audit, who, run_id)
        hub.accept(audit, who, [item(f"e-start-{run_id}", started(run_id))])
    asked = approvals.ask(audit, "r2", "run_command", {"command": "make deploy"}, "dangerous", timeout_s=600)

    assert hub.approval(audit, two, asked.id)["status"] == "pending"
    with pytest.raises(hub.WorkerRefused) as refused:
        hub.approval(audit, one, asked.id)
    assert refused.value.status == 404


def test_the_broker_password_comes_from_a_file_never_the_url(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text("s3cr:t\n")
    config = FleetConfig.from_env(
        {"HEARTH_FLEET_BROKER": "redis://10.0.0.1:6379/0", "HEARTH_FLEET_BROKER_PASSWORD_FILE": str(secret)}
    )
    assert config.broker == "redis://:s3cr%3At@10.0.0.1:6379/0" and "s3cr" not in config.shown_broker
    with pytest.raises(ConfigError, match="carries a password"):
        FleetConfig.from_env({"HEARTH_FLEET_BROKER": "redis://:pw@10.0.0.1:6379/0"})
    with pytest.raises(ConfigError, match="HEARTH_FLEET_BROKER_PASSWORD_FILE: cannot read"):
        FleetConfig.from_env({"HEARTH_FLEET_BROKER": "redis://h:1/0", "HEARTH_FLEET_BROKER_PASSWORD_FILE": "/nope"})


def test_a_worker_needs_its_hub_name_and_token_file(tmp_path: Path) -> None:
    base = {"HEARTH_FLEET_BROKER": "redis://127.0.0.1:6379/0", "HEARTH_FLEET_HUB": "http://hub:8770"}
    with pytest.raises(ConfigError, match="HEARTH_FLEET_NAME"):
        FleetConfig.from_env(base, worker=True)
    with pytest.raises(ConfigError, match="HEARTH_FLEET_TOKEN_FILE is not set"):
        FleetConfig.from_env({**base, "HEARTH_FLEET_NAME": "gpu1"}, worker=True)
    creds = tmp_path / "creds"
    creds.mkdir()
    (creds / "fleet-token").write_text("hw-abc\n")
    config = FleetConfig.from_env(
        {**base, "HEARTH_FLEET_NAME": "gpu1", "CREDENTIALS_DIRECTORY": str(creds)}, worker=True
    )
    assert (config.token, config.concurrency) == ("hw-abc", 2)


def test_a_request_goes_to_its_labels_queue_else_its_models_else_the_general_one() -> None:
    assert queue_for("llama3.2", "big") == "worker.big"
    assert queue_for("llama3.2", None) == "model.llama3.2"
    assert queue_for("auto", None) == queue_for(None, None) == "general"


def two_workers_with_a_run_each(audit: AuditStore) -> tuple[hub.Worker, hub.Worker]:
    one, two = worker(audit, "one"), worker(audit, "two")
    for run_id, who in (("r1", one), ("r2", two)):
        hub.sent(audit, run_id, "general", None, None)
        hub.claim(audit, who, run_id)
        hub.accept(audit, who, [item(f"e-start-{run_id}", started(run_id))])
    hub.accept(audit, two, [item("e-two-step", StepRecorded("r2", "note", {"detail": "two's own"}))])
    audit.update_run("r2", summary="two's summary")
    return one, two


@pytest.mark.parametrize(
    "crafted",
    [
        {'summary" = ?, "goal" = ? where "id" = \'r2\' --': "rewritten"},  # SQL in a column's name
        {"id": "r2"},  # a run's own key
        {"no_such_column": 1},
    ],
)
def test_a_worker_cannot_rewrite_another_workers_run_through_a_column_name(
    audit: AuditStore, crafted: dict[str, object]
) -> None:
    from hearth.run.events import RunFinished, RunUpdated

    one, _ = two_workers_with_a_run_each(audit)
    for event in (RunUpdated("r1", crafted), RunFinished("r1", "done", crafted)):
        with pytest.raises(hub.WorkerRefused) as refused:
            hub.accept(audit, one, [item("e-crafted-" + type(event).__name__, event)])
        assert refused.value.status == 400 and refused.value.index == 0
    r2 = audit.run("r2") or {}
    assert (r2["summary"], r2["goal"], audit.run("r1")["status"]) == ("two's summary", "g", "running")  # type: ignore[index]


@pytest.mark.parametrize("place", [{"run_id": "r2"}, {"run_id": "r2", "seq": 7}, {"seq": 1}, {"at": "then"}])
def test_a_worker_cannot_move_a_step_into_another_workers_run(audit: AuditStore, place: dict[str, object]) -> None:
    from hearth.run.events import StepClosed

    one, _ = two_workers_with_a_run_each(audit)
    opened = StepRecorded("r1", "tool", {"tool": "run_command", "verdict": "started"}, opens="k1")
    hub.accept(audit, one, [item("e-open-0001", opened)])
    for n, event in enumerate((StepClosed("r1", "k1", {"ok": 1, **place}), StepRecorded("r1", "note", place))):
        with pytest.raises(hub.WorkerRefused) as refused:
            hub.accept(audit, one, [item(f"e-moved-{n:04d}", event)])
        assert refused.value.status == 400
    assert [s["detail"] for s in audit.steps("r2")] == ["two's own"]
    assert [(s["seq"], s["verdict"]) for s in audit.steps("r1")] == [(1, "started")]


def test_an_approval_reusing_another_runs_approval_id_is_a_conflict_and_changes_nothing(audit: AuditStore) -> None:
    from dataclasses import asdict

    from hearth.audit import approvals
    from hearth.run.events import ApprovalAsked

    one, _ = two_workers_with_a_run_each(audit)
    theirs = approvals.ask(audit, "r2", "run_command", {"command": "make deploy"}, "dangerous", timeout_s=600)
    mine = approvals.pending(
        "r1", "run_command", {"command": "ls"}, "dangerous", timeout_s=600, now=approvals.utc_clock
    )
    forged = ApprovalAsked({**asdict(mine), "id": theirs.id})
    with pytest.raises(hub.WorkerRefused) as refused:
        hub.accept(audit, one, [item("e-start-r1b", StepRecorded("r1", "note", {})), item("e-forged-01", forged)])
    assert (refused.value.status, refused.value.index) == (409, 1)
    assert theirs.id in str(refused.value) and "exists already" in str(refused.value)
    assert approvals.row_of(audit, theirs.id) == asdict(theirs)
    assert audit.steps("r1") == []  # the batch is one: nothing of it was written


def test_a_worker_added_on_a_box_that_is_no_hub_is_warned_about(state_dir: Path) -> None:
    from tests.conftest import run_cli

    plain = run_cli("hearth", "fleet", "add", "gpu1", env={"HEARTH_LAUNCHER": "local"})
    assert plain.returncode == 0 and len(plain.stdout.splitlines()[0]) > 20  # its token, shown once
    assert "this box is no hub (HEARTH_LAUNCHER=local runs no request on other machines)" in plain.stderr
    at_hub = run_cli("hearth", "fleet", "add", "gpu2", env={"HEARTH_LAUNCHER": "celery"})
    assert at_hub.returncode == 0 and "no hub" not in at_hub.stderr
