"""Approvals on a real audit.db: the store's life cycle, and both approvers (headless with an
injected clock, terminal over real pipes and a real pty)."""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import pty
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hearth.audit import approvals
from hearth.audit.approvals import ApprovalClosed
from hearth.audit.store import AuditStore, RunRecord
from hearth.errors import NotFound
from hearth.run.approvers import HeadlessApprover, TerminalApprover, choose
from hearth.run.events import SqliteRecorder
from hearth.run.recorder import Recorder
from hearth.run.state import StateFile
from hearth.settings import Settings

CALL = ("run_command", {"command": "make deploy"})


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def audit(tmp_path: Path) -> Iterator[AuditStore]:
    with AuditStore(tmp_path / "audit.db") as store:
        store.start_run(RunRecord(id="run1", agent_name="a", model="m", goal="g", mode="auto"))
        yield store


@pytest.fixture
def printed() -> io.StringIO:
    """What the run printed, as a person at its terminal would have read it."""
    return io.StringIO()


@pytest.fixture
def recorder(audit: AuditStore, tmp_path: Path, printed: io.StringIO) -> Recorder:
    return Recorder(SqliteRecorder(audit), StateFile(tmp_path / "state", "run1"), "run1", out=printed)


def other_shell(tmp_path: Path) -> AuditStore:
    """A second connection to the same file, as `hearth approve` in another shell has."""
    return AuditStore(tmp_path / "audit.db")


# --- the store -----------------------------------------------------------------------------------


def test_an_approval_is_bound_to_the_exact_call(audit: AuditStore) -> None:
    first = approvals.ask(audit, "run1", *CALL, "dangerous", timeout_s=60)
    same = approvals.call_hash("run_command", {"command": "make deploy"})
    assert first.call_hash == same != approvals.call_hash("run_command", {"command": "make deploy "})
    assert first.arguments == '{"command":"make deploy"}'
    assert approvals.call_hash("t", {"a": 1, "b": 2}) == approvals.call_hash("t", {"b": 2, "a": 1})


def test_approve_then_approve_again_is_refused(audit: AuditStore, tmp_path: Path) -> None:
    pending = approvals.ask(audit, "run1", *CALL, "dangerous", timeout_s=60)
    with other_shell(tmp_path) as shell:
        decided = approvals.decide(shell, pending.id, granted=True, by="cli:alice")
        with pytest.raises(ApprovalClosed, match="already approved by cli:alice"):
            approvals.decide(shell, pending.id, granted=False, by="cli:bob")
    assert (decided.status, decided.decided_by) == ("approved", "cli:alice")
    assert approvals.find(audit, pending.id).status == "approved"


def test_deny_records_the_reason(audit: AuditStore) -> None:
    pending = approvals.ask(audit, "run1", *CALL, "dangerous", timeout_s=60)
    denied = approvals.decide(audit, pending.id[:6], granted=False, by="cli:alice", note="not on a Friday")
    assert (denied.status, denied.note) == ("denied", "not on a Friday")


def test_an_expired_approval_cannot_be_approved_and_says_so_in_its_row(audit: AuditStore) -> None:
    clock = Clock()
    pending = approvals.ask(audit, "run1", *CALL, "dangerous", timeout_s=30, now=clock)
    clock.advance(31)
    assert approvals.listing(audit, now=clock) == []
    with pytest.raises(ApprovalClosed, match="expired at 2026-01-01T12:00:30.000Z"):
        approvals.decide(audit, pending.id, granted=True, by="cli:late", now=clock)
    row = approvals.find(audit, pending.id)
    assert (row.status, row.decided_by, row.decided_at) == ("expired", "timeout", "2026-01-01T12:00:30.000Z")


def test_unknown_and_ambiguous_ids_are_not_found(audit: AuditStore) -> None:
    approvals.ask(audit, "run1", *CALL, "dangerous", timeout_s=60)
    with pytest.raises(NotFound, match="no approval with id 'nope'"):
        approvals.decide(audit, "nope", granted=True, by="x")
    assert approvals.find(audit, "") is None and approvals.find(audit, "%") is None


def test_listing_shows_open_ones_oldest_first_or_everything(audit: AuditStore) -> None:
    clock = Clock()
    a = approvals.ask(audit, "run1", *CALL, "r", timeout_s=60, now=clock)
    clock.advance(1)
    b = approvals.ask(audit, "run1", "write_file", {"path": "x"}, "r", timeout_s=60, now=clock)
    approvals.decide(audit, a.id, granted=False, by="x", now=clock)
    assert [x.id for x in approvals.listing(audit, now=clock)] == [b.id]
    assert [x.id for x in approvals.listing(audit, everything=True, now=clock)] == [b.id, a.id]


def _decide_in_process(path: str, approval_id: str, granted: bool, queue: Any) -> None:
    with AuditStore(path) as store:
        try:
            approvals.decide(store, approval_id, granted=granted, by=f"proc-{granted}")
            queue.put("won")
        except ApprovalClosed:
            queue.put("closed")


def test_two_shells_deciding_at_once_have_exactly_one_winner(audit: AuditStore, tmp_path: Path) -> None:
    pending = approvals.ask(audit, "run1", *CALL, "dangerous", timeout_s=60)
    queue: Any = multiprocessing.get_context("fork").Queue()
    procs = [
        multiprocessing.get_context("fork").Process(
            target=_decide_in_process, args=(str(tmp_path / "audit.db"), pending.id, i % 2 == 0, queue)
        )
        for i in range(6)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(30)
    assert sorted(queue.get(timeout=5) for _ in procs) == ["closed"] * 5 + ["won"]
    assert approvals.find(audit, pending.id).status in ("approved", "denied")


# --- the headless approver -----------------------------------------------------------------------


def test_headless_waits_then_runs_what_another_shell_approved(
    recorder: Recorder, printed: io.StringIO, tmp_path: Path, audit: AuditStore
) -> None:
    clock, seen_state = Clock(), []

    def sleep(seconds: float) -> None:  # stands for the time the operator takes, in another shell
        seen_state.append(json.loads(recorder.state.path.read_text())["state"])
        clock.advance(seconds)
        with other_shell(tmp_path) as shell:
            [waiting] = approvals.listing(shell, now=clock)
            approvals.decide(shell, waiting.id, granted=True, by="cli:alice", now=clock)

    decision = HeadlessApprover(recorder, 300, now=clock, sleep=sleep)(*CALL, "dangerous")
    assert decision.granted and decision.by == "cli:alice" and decision.ref
    assert seen_state == ["waiting_approval"]
    assert "hearth approve " + decision.ref in printed.getvalue()
    [step] = audit.steps("run1")
    detail = json.loads(step["detail"])
    assert (step["kind"], step["verdict"], detail["by"], detail["timeout_s"]) == (
        "approval",
        "approved",
        "cli:alice",
        300,
    )


def test_headless_silence_until_the_timeout_is_a_deny(recorder: Recorder, audit: AuditStore) -> None:
    clock = Clock()
    decision = HeadlessApprover(recorder, 5, now=clock, sleep=clock.advance, poll_s=1)(*CALL, "dangerous")
    assert not decision.granted and decision.by == "timeout"
    assert decision.detail == "nobody approved it within 5s, and an unanswered approval is a deny"
    row = approvals.find(audit, decision.ref)
    assert (row.status, row.decided_at) == ("expired", "2026-01-01T12:00:05.000Z")


def test_no_approval_waits_past_the_end_of_its_run(recorder: Recorder, audit: AuditStore) -> None:
    clock = Clock()
    approver = HeadlessApprover(
        recorder, 300, now=clock, sleep=clock.advance, poll_s=5, run_ends=clock() + timedelta(seconds=12)
    )
    first = approver(*CALL, "dangerous")
    later = approver(*CALL, "dangerous")  # the run's time is up: it does not wait at all
    assert [approvals.find(audit, d.ref).timeout_s for d in (first, later)] == [12, 0]
    assert not first.granted and not later.granted


def test_headless_refuses_an_approval_that_no_longer_matches_its_call(recorder: Recorder, tmp_path: Path) -> None:
    clock = Clock()

    def tamper_then_approve(seconds: float) -> None:
        with other_shell(tmp_path) as shell:
            [waiting] = approvals.listing(shell, now=clock)
            shell.db["approvals"].update(
                waiting.id, {"call_hash": approvals.call_hash("run_command", {"command": "x"})}
            )
            approvals.decide(shell, waiting.id, granted=True, by="cli:mallory", now=clock)

    decision = HeadlessApprover(recorder, 300, now=clock, sleep=tamper_then_approve)(*CALL, "dangerous")
    assert not decision.granted and decision.detail == "the approval on record does not match this call"


def test_arguments_too_long_to_review_are_denied_without_asking(recorder: Recorder, audit: AuditStore) -> None:
    decision = HeadlessApprover(recorder, 300, sleep=lambda s: pytest.fail("it waited"))(
        "run_command", {"command": "x" * 70_000}, "dangerous"
    )
    assert not decision.granted and "more than anyone can review" in decision.detail
    assert approvals.find(audit, decision.ref).status == "denied"


# --- the terminal approver -----------------------------------------------------------------------

OPEN_KEYBOARDS: list[Any] = []  # write ends kept open, so silence is silence and not end of input


class Keyboard:
    """A real pipe standing for the terminal's input."""

    def __init__(self, typed: str = "", close: bool = False) -> None:
        read, write = os.pipe()
        os.write(write, typed.encode())
        if close:
            os.close(write)
        else:
            OPEN_KEYBOARDS.append(os.fdopen(write, "w"))
        self.stream = os.fdopen(read, "r")


def terminal(
    recorder: Recorder, typed: str, *, close: bool = False, timeout_s: float = 5
) -> tuple[TerminalApprover, io.StringIO]:
    out = io.StringIO()
    return TerminalApprover(recorder, timeout_s, Keyboard(typed, close).stream, out), out


def test_terminal_once_runs_this_call_and_asks_again_next_time(recorder: Recorder, audit: AuditStore) -> None:
    approver, out = terminal(recorder, "o\nd\n")
    assert approver(*CALL, "dangerous").granted
    second = approver(*CALL, "dangerous")
    assert not second.granted and second.detail == "denied by " + approver.who
    assert out.getvalue().count("approval needed: dangerous") == 2
    statuses = [r.status for r in approvals.listing(audit, everything=True)]
    assert statuses == ["denied", "approved"]


def test_terminal_always_covers_the_same_programs_for_the_rest_of_the_run(recorder: Recorder) -> None:
    approver, out = terminal(recorder, "a\nd\n")
    assert approver("run_command", {"command": "git status"}, "dangerous").granted
    again = approver("run_command", {"command": "git log | git shortlog"}, "dangerous")
    other = approver("run_command", {"command": "git status; rm -rf build"}, "dangerous")
    assert again.granted and again.by.endswith("(always for this run)")
    assert not other.granted
    assert "[a]lways (run_command for the rest of this run when it runs only: git)" in out.getvalue()
    assert out.getvalue().count("approval needed") == 2


def test_terminal_always_for_other_tools_covers_the_tool(recorder: Recorder, audit: AuditStore) -> None:
    approver, _ = terminal(recorder, "always\n")
    assert approver("http_request", {"url": "http://a"}, "dangerous").granted
    assert approver("http_request", {"url": "http://b"}, "dangerous").granted
    assert [r.decided_by for r in approvals.listing(audit, everything=True)] == [
        approver.who + " (always for this run)",
        approver.who,
    ]


def test_terminal_does_not_offer_always_when_the_programs_cannot_be_known(recorder: Recorder) -> None:
    approver, out = terminal(recorder, "a\na\na\n")
    decision = approver("run_command", {"command": "$TOOL --fix"}, "dangerous")
    assert not decision.granted and "[a]lways" not in out.getvalue()


@pytest.mark.parametrize(("typed", "close"), [("", True), ("maybe\nperhaps\nlater\n", False)], ids=["eof", "gibberish"])
def test_terminal_end_of_input_or_no_clear_answer_is_a_deny(recorder: Recorder, typed: str, close: bool) -> None:
    approver, _ = terminal(recorder, typed, close=close)
    assert not approver(*CALL, "dangerous").granted


def test_terminal_silence_until_the_timeout_is_a_deny(recorder: Recorder, audit: AuditStore) -> None:
    approver, out = terminal(recorder, "", timeout_s=0.2)
    decision = approver(*CALL, "dangerous")
    assert not decision.granted and decision.by == "timeout"
    assert "no answer: denied" in out.getvalue()
    assert approvals.find(audit, decision.ref).status == "expired"


def test_choose_asks_at_a_terminal_only_when_both_ends_are_one(recorder: Recorder) -> None:
    settings = Settings.from_env({"HEARTH_STATE_DIR": "/nonexistent"})
    master, slave = pty.openpty()
    try:
        with os.fdopen(os.dup(slave), "r") as tty_in, os.fdopen(os.dup(slave), "w") as tty_out:
            assert isinstance(choose(recorder, settings, stdin=tty_in, stdout=tty_out), TerminalApprover)
            assert isinstance(choose(recorder, settings, stdin=tty_in, stdout=io.StringIO()), HeadlessApprover)
        assert isinstance(choose(recorder, settings, stdin=Keyboard().stream, stdout=io.StringIO()), HeadlessApprover)
    finally:
        os.close(master)
        os.close(slave)


def test_a_run_stopped_while_waiting_cancels_its_approval(recorder: Recorder, audit: AuditStore) -> None:
    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        HeadlessApprover(recorder, 300, sleep=interrupted)(*CALL, "dangerous")
    [row] = approvals.listing(audit, everything=True)
    assert row.status == "cancelled" and "stopped while waiting" in row.note
    with pytest.raises(ApprovalClosed, match="already cancelled"):
        approvals.decide(audit, row.id, granted=True, by="cli:late")
