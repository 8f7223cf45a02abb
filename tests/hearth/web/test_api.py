"""The command center's JSON API through the real app, audit, queue and state, runs on the fake Ollama."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hearth.queue.directory import SHOWN
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.queue_support import Gate, rows, wait_for
from tests.web_support import Center, run_status, seed_runs


def _pending(center: Center) -> list[dict[str, Any]]:
    answer: list[dict[str, Any]] = center.client().get("/api/approvals").json()
    return answer


def test_a_run_launched_through_the_api_runs_and_is_recorded_as_the_command_centers(
    center: Center, state_dir: Path
) -> None:
    with FakeOllama([final_answer("all done")]) as fake:
        center.start_watch(fake.url)
        client = center.client()
        answer = client.post_json("/api/enqueue", {"goal": "say hello", "id": "hello-1", "mode": "plan"})
        assert answer.status_code == 201, answer.text
        assert answer.json()["id"] == "hello-1" and answer.json()["path"].endswith("queue/hello-1.json")
        wait_for(lambda: run_status(state_dir, "hello-1") == "done", what="the run to finish")
    run = client.get("/api/runs/hello-1").json()
    assert run["run"]["status"] == "done" and run["run"]["source"] == "command-center"
    assert run["run"]["requested_by"] == "local" and [s["kind"] for s in run["steps"]] == ["model"]
    listed = client.get("/api/runs", params={"source": "command-center"}).json()
    assert [r["id"] for r in listed["runs"]] == ["hello-1"] and listed["total"] == 1


@pytest.mark.parametrize(
    ("body", "status", "error", "field"),
    [
        (b'{"goal": "x",', 400, "malformed request body: not valid JSON", None),
        (
            {"goal": "x", "max_iterations": 500},
            422,
            "max_iterations must be at most 100",
            "max_iterations",
        ),
        (
            {"goal": "x", "allowed_tools": ["no_such_tool"]},
            422,
            'names a tool hearth does not have: "no_such_tool"',
            "allowed_tools",
        ),
        ({"goal": "x", "colour": "red"}, 422, 'unknown field "colour"', "colour"),
        ({"goal": "   "}, 422, "goal is blank", "goal"),
        ({"goal": "x", "egress": ["http://x"]}, 422, 'egress[0] "http://x" is not allowed', "egress"),
    ],
)
def test_an_enqueue_the_queue_would_refuse_gets_its_status_and_the_queues_own_words(
    center: Center, state_dir: Path, body: Any, status: int, error: str, field: str | None
) -> None:
    client = center.client()
    client.session()
    headers = {"X-CSRF-Token": client.csrf, "Content-Type": "application/json"}
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    answer = client.post("/api/enqueue", content=raw, headers=headers)
    assert answer.status_code == status and error in answer.json()["error"], answer.text
    assert answer.json().get("field") == field
    assert not list((state_dir / "queue").glob("*.json")) if (state_dir / "queue").exists() else True


def test_a_duplicate_id_is_409_and_nothing_is_overwritten(center: Center, state_dir: Path) -> None:
    client = center.client()
    assert client.post_json("/api/enqueue", {"goal": "first", "id": "same"}).status_code == 201
    again = client.post_json("/api/enqueue", {"goal": "second", "id": "same"})
    assert again.status_code == 409 and "duplicate id" in again.json()["error"]
    assert json.loads((state_dir / "queue" / "same.json").read_text())["goal"] == "first"


def test_approve_lets_the_exact_call_run_and_a_second_decision_is_refused(center: Center, state_dir: Path) -> None:
    script = [tool_call("run_command", {"command": "echo approved-marker"}), final_answer("ran it")]
    with FakeOllama(script) as fake:
        center.start_watch(fake.url)
        client = center.client()
        client.post_json("/api/enqueue", {"goal": "echo", "id": "asks", "mode": "auto"})
        [pending] = wait_for(lambda: _pending(center), what="the approval to show")
        assert pending["tool"] == "run_command" and pending["arguments"] == {"command": "echo approved-marker"}
        decided = client.post_json(f"/api/approvals/{pending['id']}", {"decision": "approve"})
        assert decided.status_code == 200 and decided.json()["decided_by"] == "web:local"
        wait_for(lambda: run_status(state_dir, "asks") == "done", what="the run to finish")
        again = client.post_json(f"/api/approvals/{pending['id']}", {"decision": "deny"})
    assert again.status_code == 409 and "was already approved by web:local" in again.json()["error"]
    [step] = rows(state_dir, "select * from steps where run_id = 'asks' and kind = 'tool'")
    assert step["verdict"] == "approved" and "approved-marker" in step["output"]
    assert client.post_json("/api/approvals/nosuch", {"decision": "approve"}).status_code == 404


def test_deny_with_a_reason_refuses_the_call_and_the_model_is_told(center: Center, state_dir: Path) -> None:
    script = [tool_call("run_command", {"command": "rm -rf notes"}), final_answer("understood")]
    with FakeOllama(script) as fake:
        center.start_watch(fake.url)
        client = center.client()
        client.post_json("/api/enqueue", {"goal": "clean", "id": "denied-1", "mode": "auto"})
        [pending] = wait_for(lambda: _pending(center), what="the approval to show")
        client.post_json(f"/api/approvals/{pending['id']}", {"decision": "deny", "reason": "not on a Friday"})
        wait_for(lambda: run_status(state_dir, "denied-1") not in (None, "running"), what="the run to finish")
        told = json.dumps(fake.requests[-1]["messages"])
    assert "not on a Friday" in told
    [step] = rows(state_dir, "select verdict from steps where run_id = 'denied-1' and kind = 'tool'")
    assert step["verdict"] == "denied"


def test_stop_through_the_api_interrupts_the_run_and_a_second_stop_is_409(center: Center, state_dir: Path) -> None:
    gate = Gate()
    with FakeOllama([gate]) as fake:
        center.start_watch(fake.url)
        client = center.client()
        client.post_json("/api/enqueue", {"goal": "wait", "id": "held"})
        assert gate.reached.wait(30)
        stopped = client.post_json("/api/runs/held/stop", {})
        gate.opened.set()
    assert stopped.status_code == 200 and stopped.json()["status"] == "interrupted"
    assert "stopped by web:local" in rows(state_dir, "select error from runs where id = 'held'")[0]["error"]
    assert client.post_json("/api/runs/held/stop", {}).status_code == 409


def test_the_runs_list_pages_filters_and_searches_goals_in_sql(center: Center, state_dir: Path) -> None:
    seed_runs(state_dir, 120)
    client = center.client()
    third = client.get("/api/runs", params={"page": 3}).json()
    assert third["total"] == 120 and third["pages"] == 3 and len(third["runs"]) == 20
    failed = client.get("/api/runs", params={"status": "failed", "agent": "builder"}).json()
    assert failed["total"] == 30 and {r["status"] for r in failed["runs"]} == {"failed"}
    found = client.get("/api/runs", params={"q": "NUMBER 42"}).json()
    assert [r["id"] for r in found["runs"]] == ["seed-00042"]
    assert client.get("/api/runs", params={"since": "yesterday-ish"}).status_code == 400


def test_unknown_runs_and_pages_are_404_with_one_line(center: Center) -> None:
    client = center.client()
    assert client.get("/api/runs/nope").json() == {"error": "no run with id 'nope'; see /runs"}
    assert client.get("/runs/nope").status_code == 404
    assert client.get("/api/runs/..%2F..%2Fetc").status_code == 404


def test_report_and_metrics_come_from_the_audit(center: Center, state_dir: Path) -> None:
    seed_runs(state_dir, 40, steps=2)
    client = center.client()
    report = client.get("/api/report").json()
    assert report["runs"] == 40 and report["by_status"]["done"] == 20 and report["per_day"]
    assert report["tools"][0]["tool"] == "read_file" and report["tools"][0]["calls"] == 80
    text = client.get("/metrics").text
    assert 'hearth_runs_total{agent="builder",model="qwen2.5-coder",status="done"} 10.0' in text
    assert 'hearth_tool_calls_total{tool="read_file",verdict=""} 80.0' in text
    assert 'hearth_run_duration_seconds_bucket{le="5.0"} 40.0' in text and "hearth_queue_depth 0.0" in text
    assert 'hearth_tokens_total{direction="in"} 4000.0' in text and "hearth_approvals_pending 0.0" in text


def test_state_queue_and_openapi_describe_every_area(center: Center, state_dir: Path) -> None:
    client = center.client()
    client.post_json("/api/enqueue", {"goal": "waits", "id": "waiting-1"})
    assert client.get("/api/queue").json() == {"queued": ["waiting-1.json"], "queued_count": 1, "claimed": []}
    state = client.get("/api/state").json()
    assert state["queued"] == ["waiting-1.json"] and state["pending_approvals"] == 0
    paths = set(client.get("/api/openapi.json").json()["paths"])
    for path in ("/api/runs", "/api/runs/{run_id}", "/api/state", "/api/queue", "/api/approvals", "/api/enqueue"):
        assert path in paths
    for path in ("/api/report", "/api/knowledge", "/api/proposals", "/api/stop-all", "/api/events", "/metrics"):
        assert path in paths


def test_the_event_stream_sends_the_state_at_once_and_again_when_a_run_changes(center: Center, state_dir: Path) -> None:
    (state_dir / "state").mkdir(parents=True)
    client = center.client()
    with client.stream("GET", "/api/events") as stream:
        lines = stream.iter_lines()
        first = _next_state(lines)
        (state_dir / "state" / "live-1.json").write_text(
            json.dumps({"run_id": "live-1", "state": "thinking", "iteration": 2, "pid": 1})
        )
        # the states in between (the state directory appearing, a half-written file read) may come
        # first: the stream must go on to one with the run in it
        second = _next_state(lines)
        for _ in range(20):
            if second.get("active"):
                break
            second = _next_state(lines)
    assert second["version"] > first.get("version", 0)
    assert [run["id"] for run in second["active"]] == ["live-1"] and second["active"][0]["state"] == "thinking"


def _next_state(lines: Iterator[str]) -> dict[str, Any]:
    for line in lines:
        if line.startswith("data: "):
            found: dict[str, Any] = json.loads(line[6:])
            return found
    raise AssertionError("the stream ended")


def test_hearth_serve_watch_runs_what_the_page_queues_without_systemd(state_dir: Path) -> None:
    import signal

    from tests.cli_support import serving
    from tests.web_support import Client, free_port, wait_for_answer

    port = free_port()
    said = state_dir.parent / "serve.err"
    with FakeOllama([final_answer("served and done")]) as fake, said.open("w") as err:
        env = {"OLLAMA_HOST": fake.url, "HEARTH_LAUNCHER": "local"}
        with serving(port, env, err, "--watch") as serve:
            url = f"http://127.0.0.1:{port}"
            wait_for_answer(url + "/api/state", {})
            with Client(url, {}) as client:
                assert client.post_json("/api/enqueue", {"goal": "hi", "id": "served-1"}).status_code == 201
            wait_for(lambda: run_status(state_dir, "served-1") == "done", what="the served run to finish")
            # one line as it started and one as it ended, for the person watching the terminal
            wait_for(lambda: "run served-1 ended: done" in said.read_text(), what="the end to be said")
            lines = [line for line in said.read_text().splitlines() if "run served-1" in line]
            assert [line.split(" ", 3)[3] for line in lines] == ["run served-1 started", "run served-1 ended: done"]
            serve.send_signal(signal.SIGTERM)
            assert serve.wait(30) == 0


def test_a_run_page_shows_at_most_a_capped_part_of_each_huge_step_with_a_link_to_the_whole(
    center: Center, state_dir: Path
) -> None:
    import sqlite3

    [run_id] = seed_runs(state_dir, 1, steps=2)
    huge = "y" * (4 << 20)
    with sqlite3.connect(state_dir / "audit.db") as conn:  # an audit row of any size, as another writer left it
        conn.execute(
            "update steps set output = ?, arguments = ?, detail = ? where run_id = ?", [huge, huge, huge, run_id]
        )
    client = center.client()
    page = client.get(f"/runs/{run_id}")
    assert page.status_code == 200 and len(page.text) < 400_000
    link = f"/api/runs/{run_id}/steps/1"
    assert link in page.text and f"of {len(huge):,} characters" in page.text
    whole = client.get(link).json()
    assert whole["output"] == huge and whole["arguments"] == huge and whole["seq"] == 1
    assert client.get(f"/api/runs/{run_id}/steps/9").status_code == 404


def test_a_queue_of_thousands_is_listed_a_bounded_few_with_its_count(center: Center, state_dir: Path) -> None:
    queue = state_dir / "queue"
    queue.mkdir(parents=True, exist_ok=True)
    for n in range(SHOWN + 40):
        (queue / f"w-{n:04d}.json").write_text("{not even json")
    (queue / ".being-written.json.tmp").write_text("{")
    client = center.client()
    listed = client.get("/api/queue").json()
    assert listed["queued_count"] == SHOWN + 40 and listed["queued"] == [f"w-{n:04d}.json" for n in range(SHOWN)]
    state = client.get("/api/state").json()
    assert state["queued_count"] == SHOWN + 40 and len(state["queued"]) == SHOWN
    page = client.get("/").text
    assert page.count("<li>w-") == SHOWN and f"and 40 more waiting ({SHOWN + 40} in all)" in page
    assert f'id="n-queued">{SHOWN + 40}<' in page
    assert f"hearth_queue_depth {SHOWN + 40}.0" in client.get("/metrics").text
