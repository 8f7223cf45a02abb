"""A hub and two workers on one machine through a real Redis: routing by model, one audit, a
remote run approved and stopped at the hub, a killed worker, a hub away for a while.

Each role is its own process with its own state directory; each worker has its own fake Ollama
with different models pulled (tests/fleet_support.py).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.fleet_support import Hub, Redis, Worker, needs_redis, request
from tests.queue_support import drop, rows, wait_for

pytestmark = needs_redis


# the hub calls a worker silent this long lost: production's 30 s, so that a worker slowed by a
# loaded machine keeps its runs; the test of a killed worker waits 4 s
LOST_S, QUICK_LOSS_S = "30", "4"


class Fleet:
    def __init__(self, root: Path, lost_s: str = LOST_S, **hub_env: str) -> None:
        self.root = root
        self.redis = Redis(root / "redis", password="broker-secret", tls=bool(hub_env.pop("tls", ""))).start()
        self.hub = Hub(root, self.redis, HEARTH_FLEET_LOST_S=lost_s, **hub_env).start()
        self.workers: dict[str, Worker] = {}
        self.fakes: dict[str, FakeOllama] = {}

    def worker(self, name: str, models: tuple[str, ...], script: list, *labels: str, **env: str) -> Worker:
        fake = FakeOllama(script, models=models, repeat_last=True).__enter__()
        self.fakes[name] = fake
        token = self.hub.add_worker(name, *labels)
        worker = Worker(self.root, name, token, self.redis, self.hub, fake.url, **env).start()
        self.workers[name] = worker
        return worker

    def enqueue(self, run_id: str, **fields: object) -> None:
        drop(self.hub.state / "queue", f"{run_id}.json", request(run_id, **fields))

    def running(self, run_id: str, worker: str) -> Worker:
        """Wait until the run's command is going on `worker` (its marker file is there)."""
        held = self.workers[worker]
        wait_for(lambda: list(held.state.glob(f"agents/{run_id}/**/started")), 60, f"{run_id} going")
        return held

    def final(self, run_id: str, timeout: float = 90) -> dict:
        def ended() -> dict | None:
            run = self.hub.run(run_id)
            return run if run and run["status"] not in ("running", "waiting") else None

        return wait_for(ended, timeout, f"run {run_id} to end at the hub")

    def close(self) -> None:
        for worker in self.workers.values():
            worker.stop()
        self.hub.stop()
        self.redis.stop()
        for fake in self.fakes.values():
            fake.__exit__(None, None, None)


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    made = Fleet(tmp_path)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def quick_loss(tmp_path: Path) -> Iterator[Fleet]:
    """A fleet whose hub calls a worker lost after 4 s of silence."""
    made = Fleet(tmp_path, lost_s=QUICK_LOSS_S)
    try:
        yield made
    finally:
        made.close()


def test_requests_run_on_the_worker_that_has_their_model_and_land_in_the_hubs_one_audit(fleet: Fleet) -> None:
    fleet.worker("gpu1", ("llama3.2",), [final_answer("done on gpu1")])
    fleet.worker("gpu2", ("qwen2.5-coder",), [final_answer("done on gpu2")])
    fleet.enqueue("r-llama", model="llama3.2")
    fleet.enqueue("r-qwen", model="qwen2.5-coder")

    llama, qwen = fleet.final("r-llama"), fleet.final("r-qwen")

    assert (llama["status"], llama["worker"], llama["summary"]) == ("done", "gpu1", "done on gpu1")
    assert (qwen["status"], qwen["worker"], qwen["summary"]) == ("done", "gpu2", "done on gpu2")
    assert {r["model"] for r in fleet.fakes["gpu1"].requests} == {"llama3.2"}
    assert {r["model"] for r in fleet.fakes["gpu2"].requests} == {"qwen2.5-coder"}
    steps = rows(fleet.hub.state, "select kind from steps where run_id = 'r-llama' order by id")
    assert "model" in [s["kind"] for s in steps]
    wait_for(lambda: not (fleet.hub.state / "queue" / "claimed" / "r-llama.json").exists(), 30, "the request placed")
    shown = fleet.hub.cli("show", "r-llama")
    assert "worker: gpu1" in shown.stdout, shown.stderr
    listed_here = fleet.hub.cli("runs", "--worker", "gpu1")
    assert "llama3.2 on gpu1" in listed_here.stdout and "r-qwen" not in listed_here.stdout, listed_here.stderr
    import httpx

    page = httpx.get(fleet.hub.url + "/runs/r-llama", timeout=30).text
    assert 'id="run-worker">gpu1<' in page
    listed = httpx.get(fleet.hub.url + "/api/runs", timeout=30).json()
    assert {r["id"]: r["worker"] for r in listed["runs"]} == {"r-llama": "gpu1", "r-qwen": "gpu2"}


SLOW = tool_call("run_command", {"command": "touch started; sleep 60"})


def test_a_remote_runs_approval_is_decided_at_the_hub_and_the_suspended_run_goes_on_where_it_was(fleet: Fleet) -> None:
    echo = tool_call("run_command", {"command": "echo approved-and-ran"})
    fleet.worker("gpu1", ("llama3.2",), [echo, final_answer("ran it")], HEARTH_SUSPEND_AFTER_S="0")
    fleet.enqueue("r-ask", model="llama3.2")

    pending = wait_for(lambda: rows(fleet.hub.state, "select * from approvals where status = 'pending'"), 60, "ask")
    wait_for(lambda: fleet.hub.status("r-ask") == "waiting", 60, "the run to suspend on its worker")
    approved = fleet.hub.cli("approve", pending[0]["id"])
    assert approved.returncode == 0, approved.stderr

    run = fleet.final("r-ask")
    assert (run["status"], run["worker"], run["summary"]) == ("done", "gpu1", "ran it")
    sent = fleet.fakes["gpu1"].requests
    assert sent[-1]["messages"][-1]["content"].startswith("approved-and-ran")  # the same conversation went on
    decided = rows(fleet.hub.state, "select status, decided_by from approvals where id = ?", pending[0]["id"])[0]
    assert decided["status"] == "approved" and decided["decided_by"].startswith("cli:")
    tool = rows(fleet.hub.state, "select verdict, ok from steps where run_id = 'r-ask' and kind = 'tool'")
    assert [(t["verdict"], t["ok"]) for t in tool] == [("approved", 1)]


def test_a_remote_run_stopped_at_the_hub_ends_on_its_worker(fleet: Fleet) -> None:
    fleet.worker("gpu1", ("llama3.2",), [SLOW, final_answer("never")])
    fleet.enqueue("r-stop", model="llama3.2", mode="bypass")
    fleet.running("r-stop", "gpu1")

    stopped = fleet.hub.cli("stop", "r-stop")

    assert stopped.returncode == 0, stopped.stderr
    run = fleet.final("r-stop")
    assert run["status"] == "interrupted" and run["worker"] == "gpu1"
    worker = fleet.workers["gpu1"].state
    local = rows(worker, "select status from runs where id = 'r-stop'")[0]
    assert local["status"] == "interrupted"  # the run's process on the worker went, not only the hub's row
    # it ran through the worker's own queue; the box's (its own spawner's) never saw it
    assert (worker / "fleet" / "queue" / "failed" / "r-stop.json").exists()
    assert not list((worker / "queue").rglob("r-stop*"))


def test_a_killed_worker_loses_its_run_once_and_a_redelivered_request_is_not_run_again(quick_loss: Fleet) -> None:
    from tests.alert_support import Receiver, write_alerts_toml

    fleet = quick_loss

    ntfy = Receiver()
    write_alerts_toml(fleet.root / "hub-config", ("phone", f"ntfy://127.0.0.1:{ntfy.port}/hearth", ["interrupted"]))
    fleet.worker("gpu1", ("llama3.2",), [SLOW, final_answer("never")])
    fleet.enqueue("r-lost", mode="bypass")  # the general queue: any worker may take it
    fleet.running("r-lost", "gpu1")

    fleet.workers["gpu1"].kill()
    # a worker that hands out again what was taken 3 s ago and not acknowledged (the default: a day)
    fleet.worker("gpu2", ("llama3.2",), [final_answer("ran twice")], HEARTH_FLEET_VISIBILITY_S="3")

    run = fleet.final("r-lost")
    assert run["status"] == "interrupted" and "worker lost" in run["error"] and "gpu1" in run["error"]
    assert (fleet.hub.state / "queue" / "failed" / "r-lost.json").exists()
    refused = lambda: rows(fleet.hub.state, "select refused from fleet_runs where run_id = 'r-lost'")[0]["refused"]  # noqa: E731
    wait_for(lambda: refused() >= 1, 60, "the redelivered request to reach gpu2 and be refused")
    assert fleet.fakes["gpu2"].requests == []  # gpu2 never ran it
    assert len(fleet.fakes["gpu1"].requests) == 1
    wait_for(lambda: ntfy.got, 60, "the lost run alerted from the hub")
    [alerted] = ntfy.got
    ntfy.close()
    assert alerted["body"]["title"] == "hearth: run r-lost interrupted" and "worker lost" in alerted["body"]["message"]


def test_events_of_a_run_made_while_the_hub_was_away_all_arrive_once(fleet: Fleet) -> None:
    quick = tool_call("run_command", {"command": "touch started; sleep 2; echo slept"})
    fleet.worker("gpu1", ("llama3.2",), [quick, final_answer("done while away")])
    fleet.enqueue("r-away", model="llama3.2", mode="bypass")
    fleet.running("r-away", "gpu1")
    fleet.hub.stop()
    worker = fleet.workers["gpu1"]
    wait_for(lambda: rows(worker.state, "select status from runs where id = 'r-away'")[0]["status"] == "done", 60, "")
    waiting = worker.outbox()
    assert waiting > 0  # kept on disk while the hub could not be reached

    fleet.hub.start()

    run = fleet.final("r-away")
    assert (run["status"], run["summary"]) == ("done", "done while away")
    here = rows(worker.state, "select kind, tool from steps where run_id = 'r-away' order by id")
    there = rows(fleet.hub.state, "select kind, tool from steps where run_id = 'r-away' order by id")
    assert there == here  # every step, none twice
    wait_for(lambda: worker.outbox() == 0)


def test_a_request_waits_in_the_broker_across_its_restart_and_runs_once(fleet: Fleet) -> None:
    fleet.enqueue("r-kept", model="mistral")
    wait_for(lambda: fleet.hub.status("r-kept") is None and fleet.hub.sent("r-kept"), 30, "the request sent")
    state = json.loads(fleet.hub.cli("state", "--json").stdout)
    waits = [r for r in state["active"] if r["id"] == "r-kept"]
    assert "no worker" in waits[0]["detail"] and "mistral" in waits[0]["detail"]
    fleet.redis.stop()
    fleet.redis.start()

    fleet.worker("gpu3", ("mistral",), [final_answer("kept")])

    run = fleet.final("r-kept")
    assert (run["status"], run["worker"], run["summary"]) == ("done", "gpu3", "kept")
    assert len(fleet.fakes["gpu3"].requests) == 1


def test_a_worker_cannot_write_another_workers_run_or_forge_a_decision(fleet: Fleet) -> None:
    import httpx

    fleet.worker(
        "gpu1",
        ("llama3.2",),
        [tool_call("run_command", {"command": "echo x"}), final_answer("ok")],
        HEARTH_SUSPEND_AFTER_S="0",
    )
    fleet.enqueue("r-mine", model="llama3.2")
    pending = wait_for(lambda: rows(fleet.hub.state, "select * from approvals where status = 'pending'"), 60, "ask")
    intruder = fleet.hub.add_worker("intruder")
    headers = {"Authorization": f"Bearer {intruder}"}
    forged = {
        "event": "ApprovalDecided",
        "approval_id": pending[0]["id"],
        "status": "approved",
        "decided_at": "2026-01-01T00:00:00Z",
        "decided_by": "cli:root",
        "note": None,
    }
    answer = httpx.post(
        fleet.hub.url + "/fleet/events",
        headers=headers,
        json={"events": [{"id": "forged-0001", "event": json.dumps(forged)}]},
    )
    assert answer.status_code == 403 and answer.json()["index"] == 0
    step = {
        "event": "StepRecorded",
        "run_id": "r-mine",
        "kind": "note",
        "columns": {"detail": "x"},
        "opens": None,
        "at": "2026-01-01T00:00:00Z",
    }
    answer = httpx.post(
        fleet.hub.url + "/fleet/events",
        headers=headers,
        json={"events": [{"id": "forged-0002", "event": json.dumps(step)}]},
    )
    assert answer.status_code == 403 and "not a run intruder claimed" in answer.json()["error"]
    assert httpx.post(fleet.hub.url + "/fleet/claim", json={"run_id": "r-mine"}).status_code == 401
    assert (
        rows(fleet.hub.state, "select status from approvals where id = ?", pending[0]["id"])[0]["status"] == "pending"
    )


def test_a_worker_takes_requests_for_a_model_pulled_after_it_started(fleet: Fleet) -> None:
    fleet.worker("gpu1", ("llama3.2",), [final_answer("pulled and ran")], HEARTH_FLEET_SURVEY_S="1")
    fleet.enqueue("r-phi", model="phi3")
    wait_for(lambda: fleet.hub.sent("r-phi"), 30, "the request sent")

    fleet.fakes["gpu1"].models = ("llama3.2", "phi3")  # `ollama pull phi3` on gpu1's host

    run = fleet.final("r-phi")
    assert (run["status"], run["worker"], run["model"]) == ("done", "gpu1", "phi3")


def test_while_the_hub_is_paused_a_request_already_in_the_broker_waits_and_runs_once_resumed(fleet: Fleet) -> None:
    fleet.enqueue("r-held", model="mistral")
    wait_for(lambda: fleet.hub.sent("r-held"), 30, "the request sent")
    assert fleet.hub.cli("pause").returncode == 0
    worker = fleet.worker("gpu3", ("mistral",), [final_answer("after the pause")])
    wait_for(lambda: b"retry: Retry in" in worker.log.read_bytes(), 60, "the worker told to wait")
    assert fleet.hub.run("r-held") is None and fleet.fakes["gpu3"].requests == []

    assert fleet.hub.cli("resume").returncode == 0

    run = fleet.final("r-held")
    assert (run["status"], run["summary"]) == ("done", "after the pause")
    assert len(fleet.fakes["gpu3"].requests) == 1


def test_stop_all_at_the_hub_ends_the_runs_on_every_worker(fleet: Fleet) -> None:
    fleet.worker("gpu1", ("llama3.2",), [SLOW, final_answer("never")])
    fleet.worker("gpu2", ("qwen2.5-coder",), [SLOW, final_answer("never")])
    fleet.enqueue("r-a", model="llama3.2", mode="bypass")
    fleet.enqueue("r-b", model="qwen2.5-coder", mode="bypass")
    fleet.running("r-a", "gpu1")
    fleet.running("r-b", "gpu2")

    stopped = fleet.hub.cli("stop", "--all")

    assert stopped.returncode == 0, stopped.stderr
    assert [fleet.final(r)["status"] for r in ("r-a", "r-b")] == ["interrupted", "interrupted"]


def test_a_request_queued_while_the_broker_is_down_waits_in_the_queue_and_runs_once_it_is_back(fleet: Fleet) -> None:
    fleet.worker("gpu1", ("llama3.2",), [final_answer("after the outage")])
    fleet.redis.stop()
    hub_log = fleet.root / "hub.log"

    fleet.enqueue("r-outage", model="llama3.2")

    wait_for(lambda: b"does not answer" in hub_log.read_bytes(), 60, "the hub to find the broker away")
    assert (fleet.hub.state / "queue" / "r-outage.json").exists()  # not claimed, not failed: it waits
    assert fleet.hub.run("r-outage") is None
    fleet.redis.start()
    run = fleet.final("r-outage")
    assert (run["status"], run["worker"], run["summary"]) == ("done", "gpu1", "after the outage")
    assert b"answers again" in hub_log.read_bytes()
    assert list((fleet.hub.state / "queue" / "failed").glob("*")) == []
    assert len(fleet.fakes["gpu1"].requests) == 1


def test_a_run_going_on_while_the_broker_restarts_ends_once_and_the_next_request_still_runs(fleet: Fleet) -> None:
    held = tool_call("run_command", {"command": "touch started; while [ ! -e go ]; do sleep 0.1; done; echo went"})
    env = {"HEARTH_FLEET_VISIBILITY_S": "3"}  # a request not acknowledged is handed out again soon after
    fleet.worker("gpu1", ("llama3.2",), [held, final_answer("across the restart")], **env)
    fleet.enqueue("r-across", model="llama3.2", mode="bypass")
    worker = fleet.running("r-across", "gpu1")

    fleet.redis.stop()
    fleet.redis.start()
    started = next(worker.state.glob("agents/r-across/**/started"))
    (started.parent / "go").touch()

    run = fleet.final("r-across")
    assert (run["status"], run["summary"]) == ("done", "across the restart")
    fleet.enqueue("r-next", model="llama3.2")
    assert fleet.final("r-next")["status"] == "done"
    assert len(fleet.fakes["gpu1"].requests) == 3  # r-across's two turns and r-next's one: nothing ran twice
    assert [r["id"] for r in rows(fleet.hub.state, "select id from runs order by id")] == ["r-across", "r-next"]


def test_a_remote_run_ends_budget_exceeded_when_the_budget_counted_at_the_hub_is_spent(fleet: Fleet) -> None:
    fleet.worker("gpu1", ("llama3.2",), [SLOW, final_answer("never")])
    config = fleet.hub.state.parent / "hub-config"  # the hub's HEARTH_CONFIG_DIR (tests/fleet_support.py)
    config.mkdir(parents=True, exist_ok=True)
    (config / "budget.toml").write_text("daily = 1\n")  # spent by the run's first model turn, on its worker

    fleet.enqueue("r-spend", model="llama3.2", mode="bypass")

    run = fleet.final("r-spend")
    assert (run["status"], run["worker"]) == ("budget_exceeded", "gpu1")
    assert run["error"].startswith("stopped: the daily token budget of 1 tokens is spent")
    local = rows(fleet.workers["gpu1"].state, "select status from runs where id = 'r-spend'")[0]
    assert local["status"] == "interrupted"  # the worker's own budget is not spent: the hub stopped it
    assert len(fleet.fakes["gpu1"].requests) == 1


def test_hearth_show_follow_at_the_hub_follows_a_remote_run_to_its_end(fleet: Fleet) -> None:
    held = tool_call("run_command", {"command": "touch started; while [ ! -e go ]; do sleep 0.1; done; echo went-on"})
    fleet.worker("gpu1", ("llama3.2",), [held, final_answer("followed to the end")])
    fleet.enqueue("r-follow", model="llama3.2", mode="bypass")
    worker = fleet.running("r-follow", "gpu1")
    wait_for(lambda: fleet.hub.status("r-follow") == "running", 60, "the run's row at the hub")
    argv = [sys.executable, "-m", "hearth.cli.main", "show", "r-follow", "--follow"]
    follow = subprocess.Popen(argv, env=fleet.hub.env, cwd=ROOT, stdout=subprocess.PIPE, text=True)

    (next(worker.state.glob("agents/r-follow/**/started")).parent / "go").touch()

    out, _ = follow.communicate(timeout=120)
    assert follow.returncode == 0, out
    assert "went-on" in out and "followed to the end" in out
    assert "worker: gpu1" in out


def test_a_remote_runs_approval_is_alerted_from_the_hub_and_answered_from_the_alert(fleet: Fleet) -> None:
    import re

    import httpx

    from tests.alert_support import Receiver, write_alerts_toml

    ntfy = Receiver()
    try:
        config = fleet.hub.state.parent / "hub-config"
        write_alerts_toml(config, ("phone", f"ntfy://127.0.0.1:{ntfy.port}/hearth", ["approval", "done"]))
        with (config / "alerts.toml").open("a") as toml:
            toml.write(f'[approval]\npublic_url = "{fleet.hub.url}"\n')
        echo = tool_call("run_command", {"command": "echo answered-from-the-phone"})
        fleet.worker("gpu1", ("llama3.2",), [echo, final_answer("went on")], HEARTH_SUSPEND_AFTER_S="0")
        fleet.enqueue("r-phone", model="llama3.2")

        wait_for(lambda: ntfy.got, 60, "the approval alert from the hub")
        [asked] = ntfy.got
        assert "r-phone" in asked["body"]["message"] and "answered-from-the-phone" in asked["body"]["message"]
        found = dict(re.findall(r"http, (\w+), (\S+), method=POST, clear=true", asked["headers"]["X-Actions"]))
        assert found["Approve"].startswith(fleet.hub.url + "/act/")
        wait_for(lambda: fleet.hub.status("r-phone") == "waiting", 60, "the run to suspend on its worker")
        assert httpx.post(found["Approve"], timeout=10).status_code == 200

        run = fleet.final("r-phone")
        assert (run["status"], run["worker"], run["summary"]) == ("done", "gpu1", "went on")
        wait_for(lambda: len(ntfy.got) == 2, 60, "the run's end alerted from the hub")
        assert ntfy.got[1]["body"]["title"] == "hearth: run r-phone done"
        decided = rows(fleet.hub.state, "select status, decided_by from approvals where run_id = 'r-phone'")
        assert [(d["status"], d["decided_by"]) for d in decided] == [("approved", "alert:phone")]
    finally:
        ntfy.close()


def test_a_request_naming_a_label_or_a_worker_runs_only_there(fleet: Fleet) -> None:
    fleet.worker("gpu1", ("llama3.2",), [final_answer("ran here")])
    fleet.worker("gpu2", ("llama3.2",), [final_answer("ran here")], "big")
    fleet.enqueue("r-big", model="llama3.2", worker="big")
    fleet.enqueue("r-named", model="llama3.2", worker="gpu1")
    fleet.enqueue("r-nobody", model="llama3.2", worker="huge")

    assert (fleet.final("r-big")["worker"], fleet.final("r-named")["worker"]) == ("gpu2", "gpu1")
    state = json.loads(fleet.hub.cli("state", "--json").stdout)
    [waits] = [r for r in state["active"] if r["id"] == "r-nobody"]
    assert waits["detail"] == "waits for a worker labelled huge: none answers now"
    assert fleet.hub.run("r-nobody") is None

    relabelled = fleet.hub.cli("fleet", "labels", "gpu1", "--label", "huge")  # given at the hub: no restart

    assert relabelled.returncode == 0 and "gpu1: labels huge" in relabelled.stdout, relabelled.stderr
    assert fleet.final("r-nobody")["worker"] == "gpu1"


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command for a certificate")
def test_over_a_tls_broker_a_run_goes_through_and_a_hub_that_does_not_trust_its_certificate_sends_nothing(
    tmp_path: Path,
) -> None:
    stranger = tmp_path / "stranger.pem"  # a certificate of no broker: what a hub trusts by mistake
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(tmp_path / "stranger.key")]
        + ["-out", str(stranger), "-days", "2", "-subj", "/CN=127.0.0.1"],
        check=True,
        capture_output=True,
    )
    fleet = Fleet(tmp_path, tls="1", SSL_CERT_FILE=str(stranger))
    try:
        assert fleet.redis.url.startswith("rediss://")
        fleet.worker("gpu1", ("llama3.2",), [final_answer("over tls")], SSL_CERT_FILE=str(fleet.redis.ca))
        fleet.enqueue("r-tls", model="llama3.2")
        hub_log = fleet.root / "hub.log"
        wait_for(lambda: b"CERTIFICATE_VERIFY_FAILED" in hub_log.read_bytes(), 60, "the hub to refuse the certificate")
        assert b"does not answer" in hub_log.read_bytes() and fleet.hub.run("r-tls") is None
        assert b"broker-secret" not in hub_log.read_bytes()  # the line names the broker, never its password

        fleet.hub.stop()
        fleet.hub.env["SSL_CERT_FILE"] = str(fleet.redis.ca)
        fleet.hub.start()

        run = fleet.final("r-tls")
        assert (run["status"], run["worker"], run["summary"]) == ("done", "gpu1", "over tls")
    finally:
        fleet.close()


def test_an_approval_decided_at_the_hub_reaches_a_remote_run_still_waiting_in_its_process(fleet: Fleet) -> None:
    echo = tool_call("run_command", {"command": "echo decided-while-it-waited"})
    fleet.worker("gpu1", ("llama3.2",), [echo, final_answer("never suspended")], HEARTH_SUSPEND_AFTER_S="600")
    fleet.enqueue("r-live", model="llama3.2")
    pending = wait_for(lambda: rows(fleet.hub.state, "select * from approvals where status = 'pending'"), 60, "ask")

    assert fleet.hub.cli("approve", pending[0]["id"]).returncode == 0

    run = fleet.final("r-live")
    assert (run["status"], run["summary"]) == ("done", "never suspended")
    kinds = [s["kind"] for s in rows(fleet.hub.state, "select kind from steps where run_id = 'r-live'")]
    assert "suspend" not in kinds  # the run's own poll heard the hub's decision
    assert fleet.fakes["gpu1"].requests[-1]["messages"][-1]["content"].startswith("decided-while-it-waited")
