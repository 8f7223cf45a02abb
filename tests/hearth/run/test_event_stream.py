"""The run's record is one stream (hearth/run/events.py): captured whole by another recorder, sent
as JSON lines, and replayed into an empty audit, it gives the rows the run recorded directly.

A real run through run_goal against the loopback fake Ollama: a file written, a command that
needs an approval (decided from another connection, as `hearth approve` in another shell does),
prints a decoy (a tripwire, record-only) and makes two connections through the run's proxy (one
allowed, one refused: local test servers behind test names), the answer, and the workspace
checkpoints before and after.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from agent.loop import Outcome
from agent.safety.sandbox import SandboxUnavailable, detect
from agent.services import RunServices
from hearth.audit import approvals
from hearth.audit.store import AuditStore
from hearth.run.events import ApprovalAsked, RunEvent, SqliteRecorder, from_json
from hearth.run.goal import GoalRequest
from hearth.run.runner import run_goal
from hearth.settings import Settings
from tests.capture_recorder import CaptureRecorder, replay
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.netfixtures import Answer, TestNet, Web

# Left out of the comparison, each for a reason: `_migrations` holds when each audit file was
# made (the replay's own time, and no record of a run); the runs_fts tables are SQLite's full-text
# index, kept by triggers from `runs` itself (compared through `runs`). The built-in users are
# made with each audit file, so their `created_at` is that file's own time, not a run's record.
NOT_A_RUNS_RECORD = ("_migrations",)
MADE_WITH_THE_FILE = {"users": "created_at"}
FETCH = "python3 -c \"import urllib.request as u; print(u.urlopen('http://notes.example/').read())\""
COMMAND = f"cat notes.txt ~/.aws/credentials; {FETCH}; git ls-remote http://elsewhere.example/x.git"


def tables(audit: AuditStore) -> dict[str, list[dict[str, Any]]]:
    """Every table's rows, in the order they were written, without autoincrement ids (a row's
    place in one file, not part of what was recorded)."""
    names = [
        (row["name"], "without rowid" in row["sql"].lower())
        for row in audit.rows("select name, sql from sqlite_master where type = 'table' order by name")
        if row["name"] not in NOT_A_RUNS_RECORD and not row["name"].startswith(("runs_fts", "sqlite_"))
    ]
    found: dict[str, list[dict[str, Any]]] = {}
    for name, keyed in names:
        # a rollup (m200) has no rowid: its rows in the order of its key
        rows = audit.rows(f'select * from "{name}"' + ("" if keyed else " order by rowid"))
        found[name] = [
            {
                k: v
                for k, v in row.items()
                if not (k == "id" and isinstance(v, int))
                and not (row.get("built_in") and MADE_WITH_THE_FILE.get(name) == k)
            }
            for row in rows
        ]
    return found


def test_a_runs_stream_replayed_from_json_into_an_empty_audit_gives_the_rows_recorded_directly(
    state_dir: Path, tmp_path: Path
) -> None:
    try:
        detect("bwrap")
    except SandboxUnavailable as exc:
        pytest.skip(f"network for commands needs bwrap, unavailable here: {exc}")
    net, notes = TestNet(), Web({"/": Answer(body="the notes server")})
    net.host("notes.example", notes)
    try:
        capture, recorded, (run_id, outcome) = _run_captured(net)
    finally:
        notes.close()

    assert outcome.status == "done", outcome.error
    kinds = capture.kinds()
    for kind in ("StepClosed", "ApprovalAsked", "ApprovalDecided", "TripwireTripped", "ConnectionMade", "RunFinished"):
        assert kind in kinds
    assert kinds[0] == "RunStarted" and kinds[-1] == "CheckpointKept"
    [approval] = recorded["approvals"]
    assert (approval["status"], approval["decided_by"]) == ("approved", "cli:operator")
    assert [s["kind"] for s in recorded["steps"] if s["kind"] in ("tool", "approval")] == ["tool", "tool", "approval"]
    assert [c["phase"] for c in recorded["checkpoints"]] == ["before", "after"]
    assert {(t["decoy"], t["action"]) for t in recorded["tripwires"]} == {("~/.aws/credentials", "record")}
    assert [(c["host"], c["allowed"]) for c in recorded["connections"]] == [
        ("notes.example", 1),
        ("elsewhere.example", 0),
    ]
    assert [r["id"] for r in recorded["runs"]] == [run_id]

    with AuditStore(tmp_path / "elsewhere.db") as empty:  # the audit's machine, receiving the lines
        replay(capture.lines, empty)
        assert tables(empty) == recorded


def _run_captured(net: TestNet) -> tuple[CaptureRecorder, dict[str, list[dict[str, Any]]], tuple[str, Outcome]]:
    """The run, recorded directly into its audit with every record also captured; its audit's rows."""

    def guarded(services: RunServices) -> None:
        services.net = net.guard(egress=("notes.example",))

    script = [
        tool_call("write_file", {"path": "notes.txt", "content": "kept by the stream\n"}),
        tool_call("run_command", {"command": COMMAND}),  # auto mode asks for it
        final_answer("Wrote notes.txt and read it back."),
    ]
    with FakeOllama(script) as fake:
        changed = {"model_host": fake.url, "approval_wait_s": 300, "tripwire_action": "record", "sandbox": "bwrap"}
        settings = Settings(**{**Settings.from_env().__dict__, **changed})
        settings.writable_state_dir()
        with AuditStore(settings.audit_path) as direct, AuditStore(settings.audit_path) as other_shell:

            def operator(event: RunEvent) -> None:
                if isinstance(event, ApprovalAsked) and event.row["status"] == "pending":
                    approvals.decide(other_shell, event.row["id"], granted=True, by="cli:operator")

            capture = CaptureRecorder(SqliteRecorder(direct), heard=operator)
            request = GoalRequest(goal="keep a note", model="qwen2.5-coder", mode="auto", max_iters=4, network=True)
            ended = run_goal(request, settings, out=io.StringIO(), configure_services=guarded, recorder=capture)
            return capture, tables(direct), ended


def test_a_line_naming_an_unknown_record_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown run event 'StepForgotten'; known: RunStarted, RunUpdated"):
        from_json('{"event": "StepForgotten", "run_id": "r"}')
