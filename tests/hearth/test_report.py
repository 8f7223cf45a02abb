"""`hearth report` over a real audit file, and `hearth state` while a queued run is held mid-way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent.safety.policy import NO_APPROVER, denied_message
from hearth.audit.requests import FileFacts
from hearth.audit.store import AuditStore, RunRecord
from hearth.errors import UsageError
from hearth.queue.directory import Queue
from hearth.queue.ledger import record_rejection
from hearth.queue.request import Request
from hearth.report import parse_since
from tests.conftest import ROOT, run_cli
from tests.fake_ollama import FakeOllama
from tests.queue_support import Gate, wait_for

RUNS = [  # id, status, model, source, duration_ms, iterations, tokens in/out, error
    ("r1", "done", "m1", "cli", 100, 1, 10, 1, None),
    ("r2", "done", "m1", "cli", 200, 2, 20, 2, None),
    ("r3", "failed", "m2", "timer", 300, 3, 30, 3, "the model gave 3 unusable replies in a row"),
    ("r4", "failed", "m2", "timer", 400, 4, 40, 4, "the model gave 3 unusable replies in a row"),
    ("r5", "model_unavailable", "m1", "command-center", 500, 0, 0, 0, "cannot reach Ollama at http://x\nmore"),
    ("r7", "running", "m1", "cli", None, None, 5, 0, None),
]


@pytest.fixture
def audit_file(state_dir: Path) -> Path:
    state_dir.mkdir(parents=True)
    path = state_dir / "audit.db"
    with AuditStore(path, clock=lambda: "2026-01-10T00:00:00.000Z") as audit:
        audit.start_run(
            RunRecord(id="r0", agent_name="a", model="m1", goal="g", mode="auto", started_at="2020-01-01T00:00:00.000Z")
        )
        audit.finish_run("r0", status="done", duration_ms=50, iterations=1, tokens_in=1, tokens_out=1)
        for rid, status, model, source, duration, iters, t_in, t_out, error in RUNS:
            audit.start_run(RunRecord(id=rid, agent_name="a", model=model, goal="g", mode="auto", source=source))
            if status != "running":
                audit.finish_run(
                    rid,
                    status=status,
                    duration_ms=duration,
                    iterations=iters,
                    tokens_in=t_in,
                    tokens_out=t_out,
                    error=error,
                )
            else:
                audit.update_run(rid, tokens_in=t_in)
        record_rejection(
            audit,
            "not valid JSON: Expecting value (line 1, column 1)",
            FileFacts.of("x.json", b""),
            kept_as="rejected/x.json",
        )
        for run_id, tool, ok, verdict, output in (
            ("r1", "list_files", 1, "run", "a.txt"),
            ("r1", "read_file", 1, "run", "text"),
            ("r2", "run_command", 0, "denied", denied_message("run_command", NO_APPROVER.detail)),
            ("r2", "write_file", 0, "run", "Error: disk full"),
            ("r2", "run_command", 1, "approved", "ok"),
        ):
            audit.record_step(run_id, "tool", tool=tool, ok=ok, verdict=verdict, output=output)
    return path


def report(*args: str) -> dict[str, object]:
    proc = run_cli("hearth", "report", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_report_counts_runs_tools_denials_failures_percentiles_and_tokens(audit_file: Path) -> None:
    data = report("--since", "2026-01-01")
    assert data["runs"] == 7
    assert data["by_status"] == {"done": 2, "failed": 2, "model_unavailable": 1, "rejected": 1, "running": 1}
    assert data["by_model"] == {"m1": 4, "m2": 2}
    assert data["by_source"] == {"cli": 3, "timer": 2, "command-center": 1, "unknown": 1}
    assert data["duration_ms"] == {"p50": 300, "p95": 500, "n": 5}  # nearest rank over the finished runs
    assert data["iterations"] == {"p50": 2, "p95": 4, "n": 5}
    assert data["tokens"] == {"in": 105, "out": 10}
    assert data["tools"] == [
        {"tool": "run_command", "calls": 2, "ok": 1, "failed": 0, "denied": 1, "approved": 1},
        {"tool": "list_files", "calls": 1, "ok": 1, "failed": 0, "denied": 0, "approved": 0},
        {"tool": "read_file", "calls": 1, "ok": 1, "failed": 0, "denied": 0, "approved": 0},
        {"tool": "write_file", "calls": 1, "ok": 0, "failed": 1, "denied": 0, "approved": 0},
    ]
    assert data["denials"] == [{"what": "run_command | it needs approval and nobody can approve it here", "count": 1}]
    assert data["failures"] == [
        {"what": "failed | the model gave 3 unusable replies in a row", "count": 2},
        {"what": "model_unavailable | cannot reach Ollama at http://x", "count": 1},
    ]
    assert data["rejections"] == [{"what": "not valid JSON: Expecting value (line 1, column 1)", "count": 1}]


def test_a_run_still_waiting_for_a_person_is_no_failure_reason(state_dir: Path) -> None:
    state_dir.mkdir(parents=True)
    with AuditStore(state_dir / "audit.db") as audit:
        audit.start_run(RunRecord(id="w1", agent_name="a", model="m1", goal="g", mode="auto"))
        audit.update_run("w1", status="waiting")
    data = report("--since", "7d")
    assert data["by_status"] == {"waiting": 1} and data["failures"] == []


def test_without_since_every_run_counts(audit_file: Path) -> None:
    data = report()
    assert data["runs"] == 8 and data["duration_ms"] == {"p50": 200, "p95": 500, "n": 6}


def test_markdown_and_text_show_every_section(audit_file: Path) -> None:
    markdown = run_cli("hearth", "report", "--markdown").stdout
    for title in (
        "By status",
        "By model",
        "By source",
        "Duration and iterations",
        "Tool use",
        "Denials",
        "Failure reasons",
        "Rejections",
    ):
        assert f"## {title}" in markdown
    assert "| run_command | 2 | 1 | 0 | 1 | 1 |" in markdown
    text = run_cli("hearth", "report").stdout
    assert (
        text.startswith("8 runs, all recorded, since the first on ")
        and "; tokens 106 in / 11 out" in text
        and "duration (ms)  200  500  6" in text
    )


def test_a_report_without_an_audit_is_empty_and_creates_nothing(state_dir: Path) -> None:
    assert report()["runs"] == 0
    assert not state_dir.exists()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-01-31", "2026-01-31T00:00:00.000Z"),
        ("2026-01-31T10:00:00+02:00", "2026-01-31T08:00:00.000Z"),
        ("7d", "2026-02-03T12:00:00.000Z"),
        ("24h", "2026-02-09T12:00:00.000Z"),
    ],
)
def test_since_takes_a_date_a_date_time_or_a_span(text: str, expected: str) -> None:
    assert parse_since(text, now=datetime(2026, 2, 10, 12, tzinfo=UTC)) == expected


def test_a_bad_since_is_one_line() -> None:
    with pytest.raises(UsageError, match="--since wants a date"):
        parse_since("last tuesday")


def test_state_shows_a_live_queued_run_a_dead_unqueued_one_and_what_waits(state_dir: Path) -> None:
    queue = Queue(state_dir / "queue").ensure()
    queue.enqueue(Request(id="held", goal="wait at the gate"))
    (state_dir / "state").mkdir()
    (state_dir / "state" / "ghost.json").write_text(
        json.dumps({"run_id": "ghost", "state": "thinking", "pid": 2**22 + 1})
    )
    gate = Gate()
    with FakeOllama([gate], repeat_last=True) as fake:
        spawner = subprocess.Popen(
            [sys.executable, "-m", "hearth.cli.main", "spawn", "--local", "--concurrency", "1"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
            env={**os.environ, "OLLAMA_HOST": fake.url, "PYTHONPATH": str(ROOT)},
        )
        try:
            assert gate.reached.wait(30)
            queue.enqueue(Request(id="waiting", goal="next"))
            state = json.loads(run_cli("hearth", "state", "--json").stdout)
            table = run_cli("hearth", "state").stdout
        finally:
            gate.opened.set()
            spawner.wait(60)
    by_id = {run["id"]: run for run in state["active"]}
    assert by_id["held"]["alive"] is True and by_id["held"]["queued"] is True
    assert by_id["held"]["state"] == "thinking" and isinstance(by_id["held"]["pid"], int)
    assert by_id["ghost"]["alive"] is False and by_id["ghost"]["queued"] is False
    assert state["queued"] == ["waiting.json"]
    assert "held" in table and "1 waiting in" in table
    wait_for(lambda: json.loads(run_cli("hearth", "state", "--json").stdout)["active"] == [by_id["ghost"]])
