"""One way to decide (hearth/leash/decisions.py), on a real audit and queue directory: approve,
deny and always-allow are one call that records who decided (a channel or a person passes itself)
and wakes the run; nothing else in the code gives a verdict on a waiting approval or wakes a run."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

from hearth.audit import approvals
from hearth.audit.store import AuditStore, RunRecord
from hearth.errors import NotFound, UsageError
from hearth.leash import decisions
from hearth.leash.decisions import By
from hearth.leash.rules import RuleRefused
from hearth.settings import Settings
from hearth.users.access import User as HearthUser

OWNER = HearthUser("alice", "owner")  # the decisions here are not the check's subject

ROOT = Path(__file__).resolve().parents[3]
DECIDING = {("hearth.audit.approvals", "decide"), ("hearth.queue.wake", "wake")}


@dataclass(frozen=True)
class User:
    """What a user of hearth's own could be: anything that says how the audit names it."""

    login: str

    @property
    def decider(self) -> str:
        return f"user:{self.login}"


@pytest.fixture
def settings(state_dir: Path) -> Settings:
    settings = Settings.from_env()
    settings.queue_dir.mkdir(parents=True)
    with AuditStore(settings.audit_path) as audit:
        audit.start_run(RunRecord(id="run1", agent_name="builder", model="m", goal="g", mode="auto", status="waiting"))
    return settings


def ask(settings: Settings, command: str) -> str:
    with AuditStore(settings.audit_path) as audit:
        return approvals.ask(audit, "run1", "run_command", {"command": command}, "dangerous", timeout_s=600).id


def woken(settings: Settings) -> bool:
    return (settings.queue_dir / "run1.resume").exists()


@pytest.mark.parametrize(
    ("verdict", "by", "status", "decided_by"),
    [
        ("approve", By("cli", "alice"), "approved", "cli:alice"),
        ("deny", By("alert", "alice-phone"), "denied", "alert:alice-phone"),
        ("approve", User("bob"), "approved", "user:bob"),
    ],
)
def test_a_verdict_is_recorded_as_who_gave_it_and_wakes_the_run(
    settings: Settings, verdict: str, by: decisions.Decider, status: str, decided_by: str
) -> None:
    ident = ask(settings, "make deploy")
    done = decisions.decide(settings, ident[:6], verdict, by, note="  checked the diff ", user=OWNER)
    assert (done.approval.status, done.approval.decided_by, done.approval.note) == (
        status,
        decided_by,
        "checked the diff",
    )
    assert done.rule is None and woken(settings)


def test_always_approves_makes_the_rule_in_the_runs_profile_and_wakes_the_run(settings: Settings) -> None:
    done = decisions.decide(settings, ask(settings, "make test"), "always", By("web", "alice"), user=OWNER)
    assert (done.approval.status, done.approval.note) == ("approved", "and always in profile builder")
    assert done.rule is not None and (done.rule.profile, done.rule.covers) == ("builder", "run_command: make test")
    assert done.rule.made_by == "web:alice" and woken(settings)


def test_a_verdict_that_cannot_be_given_changes_nothing_and_wakes_nothing(settings: Settings) -> None:
    ident = ask(settings, "make deploy > /etc/passwd")
    with pytest.raises(RuleRefused):
        decisions.decide(settings, ident, "always", By("cli", "alice"), user=OWNER)
    with pytest.raises(UsageError, match="'maybe' is not a verdict"):
        decisions.decide(settings, ident, "maybe", By("cli", "alice"), user=OWNER)
    with pytest.raises(NotFound):
        decisions.decide(settings, "nosuch", "approve", By("cli", "alice"), user=OWNER)
    decisions.decide(settings, ident, "deny", By("cli", "alice"), user=OWNER)
    (settings.queue_dir / "run1.resume").unlink()
    with pytest.raises(approvals.ApprovalClosed):
        decisions.decide(settings, ident, "approve", By("cli", "mallory"), user=OWNER)
    with AuditStore(settings.audit_path) as audit:
        kept = approvals.find(audit, ident)
    assert kept is not None and (kept.status, kept.decided_by) == ("denied", "cli:alice")
    assert not woken(settings)


def _calls(path: Path) -> list[str]:
    """The calls in a file of a function in DECIDING, however it was imported."""
    tree = ast.parse(path.read_text(), str(path))
    names: dict[str, tuple[str, str]] = {}  # a name in this file -> (module, function)
    modules: dict[str, str] = {}  # a name in this file -> the module it is
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                names[alias.asname or alias.name] = (node.module, alias.name)
                modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and names.get(func.id) in DECIDING:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {func.id}()")
        held = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
        if isinstance(func, ast.Attribute) and (modules.get(held), func.attr) in DECIDING:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {held}.{func.attr}()")
    return found


def test_nothing_but_the_one_call_gives_a_verdict_or_wakes_a_run() -> None:
    paths = [p for top in ("agent", "hearth", "bench") for p in sorted((ROOT / top).rglob("*.py"))]
    # the one other waker: a delegated child's end lets its caller go on, which nobody decided
    own = {ROOT / "hearth" / "leash" / "decisions.py", ROOT / "hearth" / "run" / "delegate.py"}
    found = [hit for p in paths if p not in own for hit in _calls(p)]
    assert found == []
    assert _calls(ROOT / "hearth" / "leash" / "decisions.py")  # the check sees a call where there is one
