"""Standing approvals on a real audit.db: a rule made from an approval approves the same call later
in the same profile (recorded as approved by `rule:<id>`), nothing else; the hard floor,
redirections, substitutions, chains and wrappers never get one; removal stops a rule and is kept."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.safety.policy import Decision
from hearth.audit import approvals
from hearth.audit.store import AuditStore, RunRecord
from hearth.errors import NotFound
from hearth.leash import decisions, rules
from hearth.leash.decisions import By
from hearth.leash.rules import RuleRefused
from hearth.run.approvers import HeadlessApprover
from hearth.run.events import SqliteRecorder
from hearth.run.recorder import Recorder
from hearth.run.state import StateFile
from hearth.settings import Settings
from hearth.users.access import User as HearthUser

OWNER = HearthUser("alice", "owner")  # the decisions here are not the check's subject


class Asked:
    """An approver that denies, and remembers that it was asked: the person the rule spares."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, name: str, args: dict[str, Any], reason: str) -> Decision:
        self.calls.append((name, args))
        return Decision(False, by="test", detail="asked")


@pytest.fixture
def audit(tmp_path: Path) -> Iterator[AuditStore]:
    with AuditStore(tmp_path / "audit.db") as store:
        store.start_run(RunRecord(id="run1", agent_name="builder", model="m", goal="g", mode="auto"))
        store.start_run(RunRecord(id="run2", agent_name="builder", model="m", goal="g", mode="auto"))
        store.start_run(RunRecord(id="other", agent_name="notes", model="m", goal="g", mode="auto"))
        yield store


def recorder_of(audit: AuditStore, tmp_path: Path, run_id: str) -> Recorder:
    return Recorder(SqliteRecorder(audit), StateFile(tmp_path / "state", run_id), run_id, out=io.StringIO())


def approve_always(audit: AuditStore, ident: str, by: By) -> tuple[approvals.Approval, rules.Rule]:
    """`hearth approve ID --always`: the one decision call on this audit's state directory."""
    state = audit.path.parent
    settings = Settings.from_env({"HEARTH_STATE_DIR": str(state), "HEARTH_CONFIG_DIR": str(state / "config")})
    done = decisions.decide(settings, ident, "always", by, user=OWNER)
    assert done.rule is not None
    return done.approval, done.rule


def always(audit: AuditStore, command: str, run_id: str = "run1") -> rules.Rule:
    """`hearth approve ID --always` on a pending approval of this command."""
    pending = approvals.ask(audit, run_id, "run_command", {"command": command}, "dangerous", timeout_s=60)
    decided, rule = approve_always(audit, pending.id, By("cli", "alice"))
    assert (decided.status, decided.decided_by) == ("approved", "cli:alice")
    return rule


def test_a_rule_approves_the_same_call_later_recorded_as_approved_by_the_rule(
    audit: AuditStore, tmp_path: Path
) -> None:
    rule = always(audit, "git status --short")
    asked = Asked()
    approve = rules.with_rules(asked, recorder_of(audit, tmp_path, "run2"), audit, "builder")
    decision = approve("run_command", {"command": "git  'status' --short"}, "dangerous")
    assert (decision.granted, decision.by) == (True, f"rule:{rule.id}") and asked.calls == []
    row = approvals.find(audit, decision.ref)
    assert row is not None
    assert (row.run_id, row.status, row.decided_by, row.via) == ("run2", "approved", f"rule:{rule.id}", "rule")
    [step] = audit.rows("select * from steps where run_id = 'run2' and kind = 'approval'")
    assert step["verdict"] == "approved" and json.loads(step["detail"])["by"] == f"rule:{rule.id}"
    made = audit.rows("select * from standing_rules")
    assert [(r["profile"], r["head"], r["arguments"], r["made_by"]) for r in made] == [
        ("builder", "git", '["status", "--short"]', "cli:alice")
    ]
    assert made[0]["approval_id"] == approvals.listing(audit, everything=True)[-1].id


@pytest.mark.parametrize(
    ("profile", "tool", "args"),
    [
        ("builder", "run_command", {"command": "git status"}),  # other arguments
        ("builder", "run_command", {"command": "git status --short --branch"}),
        ("builder", "run_command", {"command": "./git status --short"}),  # another head
        ("builder", "run_command", {"command": "git status --short; rm -r build"}),  # chained after it
        ("builder", "run_command", {"command": "git status --short > out"}),
        ("notes", "run_command", {"command": "git status --short"}),  # another profile
        ("builder", "fetch_url", {"url": "https://example.org"}),  # another tool
    ],
)
def test_a_rule_covers_nothing_but_its_call_in_its_profile(
    audit: AuditStore, tmp_path: Path, profile: str, tool: str, args: dict[str, Any]
) -> None:
    always(audit, "git status --short")
    asked = Asked()
    decision = rules.with_rules(asked, recorder_of(audit, tmp_path, "run2"), audit, profile)(tool, args, "dangerous")
    assert asked.calls == [(tool, args)] and (decision.granted, decision.by) == (False, "test")
    assert rules.rule_for(audit, profile, tool, args) is None


REFUSED = [
    ("rm -rf /", "the hard floor forbids this command in every mode: rm -r would wipe /"),
    ("mkfs.ext4 /dev/sda1", "the hard floor forbids"),
    ("shutdown -h now", "the hard floor forbids"),
    ("ls > listing.txt", "it redirects (> listing.txt)"),
    ("cat < notes", "it redirects (< notes)"),
    ("echo $(whoami)", "it holds a substitution"),
    ("echo `whoami`", "it holds a substitution"),
    ("diff <(ls a) <(ls b)", "it holds a substitution"),
    ("FOO=1 make", "it sets a variable in front of its program"),
    ("(cd x && make)", "in a subshell"),
    ("make &", "in the background"),
    ("{ ls; }", "compound command"),
    ("git status && rm -r build", "this line runs 2 (git, rm)"),
    ("ls | grep x", "this line runs 2 (ls, grep)"),
    ("ls | xargs rm", "xargs is a wrapper or a shell"),
    ("sudo make install", "sudo is a wrapper or a shell"),
    ("env make", "env is a wrapper or a shell"),
    ("sh -c 'make'", "sh is a wrapper or a shell"),
    ("bash script.sh", "bash is a wrapper or a shell"),
    ("eval make", "eval is a wrapper or a shell"),
    ("$TOOL build", "$TOOL is a wrapper or a shell"),
    ("find . -exec rm {} +", "find -exec or -ok runs another program"),
    ("rm *.o", "its argument '*.o' means what its quoting says"),
    ("cat ~/.netrc", "its argument '~/.netrc'"),
    ("echo $HOME", "its argument '$HOME'"),
    ("echo 'unclosed", "the line is not complete"),
]


@pytest.mark.parametrize(("command", "reason"), REFUSED)
def test_no_rule_for_the_floor_redirection_substitution_chains_or_wrappers(
    audit: AuditStore, command: str, reason: str
) -> None:
    pending = approvals.ask(audit, "run1", "run_command", {"command": command}, "dangerous", timeout_s=60)
    with pytest.raises(RuleRefused) as refused:
        approve_always(audit, pending.id, By("cli", "alice"))
    line = str(refused.value)
    assert reason in line and "\n" not in line and line.startswith("no standing rule for this command: ")
    still = approvals.find(audit, pending.id)
    assert still is not None and still.status == "pending"  # refused before anything was decided
    assert audit.rows("select * from standing_rules") == []


def test_a_rule_on_record_never_covers_the_floor_or_a_wrapped_call(audit: AuditStore) -> None:
    """A row written by hand (or by an older hearth) is still judged as the call is."""
    for head, words in (("rm", ["-rf", "/"]), ("sudo", ["ls"])):
        audit.insert(
            "standing_rules",
            {
                "id": f"hand-{head}",
                "profile": "builder",
                "tool": "run_command",
                "head": head,
                "arguments": json.dumps(words),
            },
        )
    assert rules.rule_for(audit, "builder", "run_command", {"command": "rm -rf /"}) is None
    assert rules.rule_for(audit, "builder", "run_command", {"command": "sudo ls"}) is None


def test_removal_stops_the_rule_and_is_recorded(audit: AuditStore, tmp_path: Path) -> None:
    rule = always(audit, "make test")
    assert rules.rule_for(audit, "builder", "run_command", {"command": "make test"}) == rule
    removed = rules.remove(audit, rule.id[:5], by="cli:bob")
    assert (removed.removed_by, removed.removed_at is not None) == ("cli:bob", True)
    asked = Asked()
    rules.with_rules(asked, recorder_of(audit, tmp_path, "run2"), audit, "builder")(
        "run_command", {"command": "make test"}, "dangerous"
    )
    assert asked.calls == [("run_command", {"command": "make test"})]
    assert rules.listing(audit) == [] and [r.removed_by for r in rules.listing(audit, everything=True)] == ["cli:bob"]
    with pytest.raises(RuleRefused, match=f"rule {rule.id} was already removed by cli:bob"):
        rules.remove(audit, rule.id, by="cli:carol")
    with pytest.raises(NotFound, match="no standing rule with id 'nosuch'"):
        rules.remove(audit, "nosuch", by="cli:carol")


def test_the_same_call_made_always_twice_keeps_one_rule(audit: AuditStore) -> None:
    first, second = always(audit, "make test"), always(audit, "make  test")
    assert first.id == second.id and len(rules.listing(audit)) == 1


def test_a_rule_for_a_tool_without_a_command_covers_it_with_any_arguments(audit: AuditStore) -> None:
    pending = approvals.ask(audit, "run1", "fetch_url", {"url": "https://a.example"}, "dangerous", timeout_s=60)
    _, rule = approve_always(audit, pending.id, By("web", "alice"))
    assert rule.covers == "fetch_url (any arguments)"
    assert rules.rule_for(audit, "builder", "fetch_url", {"url": "https://b.example"}) == rule


def test_a_call_no_rule_covers_goes_to_the_real_headless_approver(audit: AuditStore, tmp_path: Path) -> None:
    """Wrapped round the run's own approver: covered calls never wait; the rest wait as before."""
    rule = always(audit, "make test")
    recorder = recorder_of(audit, tmp_path, "run2")
    approve = rules.with_rules(HeadlessApprover(recorder, 0.0), recorder, audit, "builder")
    assert approve("run_command", {"command": "make test"}, "dangerous").by == f"rule:{rule.id}"
    denied = approve("run_command", {"command": "make deploy"}, "dangerous")
    assert (denied.granted, denied.by) == (False, "timeout")
    rows = audit.rows("select decided_by, via from approvals where run_id = 'run2' order by requested_at, rowid")
    assert rows == [{"decided_by": f"rule:{rule.id}", "via": "rule"}, {"decided_by": "timeout", "via": "queue"}]


def test_a_command_rule_leaves_the_bounded_timeout_to_the_model(audit: AuditStore) -> None:
    rule = always(audit, "make test")
    assert rules.rule_for(audit, "builder", "run_command", {"command": "make test", "timeout_s": 120}) == rule


def test_a_resumed_runs_waited_call_is_answered_by_the_persons_decision_not_the_rule(
    audit: AuditStore, tmp_path: Path
) -> None:
    """`hearth approve ID --always` on a suspended run: its call is the person's, the next the rule's."""
    pending = approvals.ask(audit, "run1", "run_command", {"command": "make test"}, "dangerous", timeout_s=60)
    decided, rule = approve_always(audit, pending.id, By("cli", "alice"))
    asked = Asked()
    approve = rules.with_rules(asked, recorder_of(audit, tmp_path, "run1"), audit, "builder", resumed=decided)
    approve("run_command", {"command": "make test"}, "dangerous")
    assert asked.calls == [("run_command", {"command": "make test"})]
    assert approve("run_command", {"command": "make test"}, "dangerous").by == f"rule:{rule.id}"
    assert asked.calls == [("run_command", {"command": "make test"})]
