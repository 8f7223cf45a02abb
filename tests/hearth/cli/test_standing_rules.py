"""`hearth approve ID --always`, `hearth approvals rules` and `hearth approvals rules remove ID`
through the real console script, on a real audit.db; and runs that meet a rule: a headless
`hearth-loop`, and a queued run suspended then approved with --always, then the next one."""

from __future__ import annotations

import json
from pathlib import Path

from hearth.audit import approvals
from hearth.audit.store import AuditStore, RunRecord
from hearth.leash import decisions
from hearth.leash.decisions import By
from hearth.settings import Settings
from hearth.users.access import User as HearthUser
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer, tool_call

OWNER = HearthUser("alice", "owner")  # the decisions here are not the check's subject

# a run asks the rules once hearth/run/runner.py's _with_model wraps its approver in
# hearth.leash.rules.with_rules (the lead's file): strict, so this mark goes when that hook lands


def waiting(state_dir: Path, command: str, *, agent: str = "builder", run_id: str = "run1") -> str:
    """A run of profile ``agent`` waiting on this command; the approval's id."""
    Settings.from_env().queue_dir.mkdir(parents=True, exist_ok=True)
    with AuditStore(state_dir / "audit.db") as audit:
        if audit.run(run_id) is None:
            audit.start_run(RunRecord(id=run_id, agent_name=agent, model="m", goal="g", mode="auto"))
        return approvals.ask(audit, run_id, "run_command", {"command": command}, "dangerous", timeout_s=600).id


def test_approve_always_approves_makes_the_rule_lists_it_and_wakes_the_run(state_dir: Path) -> None:
    approval = waiting(state_dir, "make test")
    done = run_cli("hearth", "approve", approval, "--always")
    assert done.returncode == 0, done.stderr
    assert f"approved {approval}" in done.stdout and "in profile builder" in done.stdout
    assert (Settings.from_env().queue_dir / "run1.resume").exists()
    [rule] = json.loads(run_cli("hearth", "approvals", "rules", "--json").stdout)
    assert (rule["profile"], rule["tool"], rule["head"], rule["arguments"]) == (
        "builder",
        "run_command",
        "make",
        ["test"],
    )
    assert (
        rule["approval_id"] == approval
        and rule["made_by"].startswith("cli:")
        and rule["covers"] == "run_command: make test"
    )
    shown = run_cli("hearth", "approvals", "rules").stdout
    assert rule["id"] in shown and "run_command: make test" in shown and "builder" in shown
    [decided] = json.loads(run_cli("hearth", "approvals", "--all", "--json").stdout)
    assert (decided["status"], decided["note"]) == ("approved", "and always in profile builder")


def test_remove_stops_the_rule_keeps_its_record_and_refuses_twice(state_dir: Path) -> None:
    run_cli("hearth", "approve", waiting(state_dir, "make test"), "--always")
    [rule] = json.loads(run_cli("hearth", "approvals", "rules", "--json").stdout)
    removed = run_cli("hearth", "approvals", "rules", "remove", rule["id"], "--json")
    assert removed.returncode == 0, removed.stderr
    assert json.loads(removed.stdout)["removed_by"].startswith("cli:")
    assert json.loads(run_cli("hearth", "approvals", "rules", "--json").stdout) == []
    [kept] = json.loads(run_cli("hearth", "approvals", "rules", "--all", "--json").stdout)
    assert kept["id"] == rule["id"] and kept["removed_at"]
    again = run_cli("hearth", "approvals", "rules", "remove", rule["id"])
    assert again.returncode == 1 and f"rule {rule['id']} was already removed" in again.stderr
    assert run_cli("hearth", "approvals", "rules", "remove", "nosuch").returncode == 2


def test_approve_always_of_a_call_no_rule_may_cover_says_why_and_changes_nothing(state_dir: Path) -> None:
    approval = waiting(state_dir, "sudo make install")
    refused = run_cli("hearth", "approve", approval, "--always")
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        "hearth approve: no standing rule for this command: sudo is a wrapper or a shell, or not a plain program name "
        "(sudo, env, xargs, sh -c, eval ...); approve it once instead"
    ]
    [still] = json.loads(run_cli("hearth", "approvals", "--json").stdout)
    assert still["id"] == approval and still["status"] == "pending"
    assert json.loads(run_cli("hearth", "approvals", "rules", "--json").stdout) == []


def test_no_rules_yet_says_how_to_make_one(state_dir: Path) -> None:
    shown = run_cli("hearth", "approvals", "rules")
    assert shown.returncode == 0 and "hearth approve ID --always" in shown.stdout


def test_a_headless_run_in_the_rules_profile_runs_the_covered_call_without_asking(
    state_dir: Path, tmp_path: Path
) -> None:
    """End to end: `hearth-loop` with nobody to ask runs the call a rule covers, recorded as the rule's."""
    waiting(state_dir, "touch ruled.txt", agent="default", run_id="earlier")
    with AuditStore(state_dir / "audit.db") as audit:
        [approval] = approvals.listing(audit)
    rule = decisions.decide(Settings.from_env(), approval.id, "always", By("cli", "alice"), user=OWNER).rule
    assert rule is not None
    workspace = tmp_path / "ws"
    script = [tool_call("run_command", {"command": "touch  ruled.txt"}), final_answer("touched it")]
    quick = {"HEARTH_APPROVAL_WAIT": "1s"}  # were it asked, nobody answers: denied in a second
    with FakeOllama(script) as fake:
        done = run_cli("hearth-loop", "--ollama-host", fake.url, "--workspace", str(workspace), "touch it", env=quick)
    assert done.returncode == 0, done.stderr
    assert (workspace / "ruled.txt").exists() and "waiting for approval" not in done.stdout
    with AuditStore(state_dir / "audit.db") as audit:
        [run] = audit.runs(1)
        [asked] = audit.rows("select status, decided_by, via from approvals where run_id = ?", [run["id"]])
        [tool] = audit.rows("select verdict from steps where run_id = ? and kind = 'tool'", [run["id"]])
    assert asked == {"status": "approved", "decided_by": f"rule:{rule.id}", "via": "rule"}
    assert run["status"] == "done" and tool["verdict"] == "approved"


def test_approve_always_on_a_suspended_run_then_the_next_run_of_its_profile_does_not_wait(state_dir: Path) -> None:
    """The person's decision answers the call the run waited on; the rule answers the next run's."""
    from hearth.queue.directory import Queue
    from hearth.queue.request import Request

    queue = Queue(state_dir / "queue").ensure()
    call = tool_call("run_command", {"command": "echo ruled"})
    env = {"HEARTH_SUSPEND_AFTER_S": "0", "HEARTH_SANDBOX": "none"}
    with FakeOllama([call, final_answer("first"), call, final_answer("second")]) as fake:
        env["OLLAMA_HOST"] = fake.url
        queue.enqueue(Request(id="first", goal="echo it", mode="auto"))
        assert run_cli("hearth", "spawn", "--local", env=env).returncode == 0
        [pending] = json.loads(run_cli("hearth", "approvals", "--json").stdout)
        assert run_cli("hearth", "approve", pending["id"], "--always").returncode == 0
        assert "resumed first" in run_cli("hearth", "spawn", "--local", env=env).stdout
        queue.enqueue(Request(id="second", goal="echo it again", mode="auto"))
        spawned = run_cli("hearth", "spawn", "--local", env=env)
        assert spawned.returncode == 0 and "waiting second" not in spawned.stdout, spawned.stdout
    [rule] = json.loads(run_cli("hearth", "approvals", "rules", "--json").stdout)
    with AuditStore(state_dir / "audit.db") as audit:
        decided = audit.rows("select run_id, decided_by from approvals order by requested_at, rowid")
        statuses = [r["status"] for r in audit.rows("select status from runs order by started_at, rowid")]
    assert [d["run_id"] for d in decided] == ["first", "second"] and statuses == ["done", "done"]
    assert decided[0]["decided_by"].startswith("cli:") and decided[1]["decided_by"] == f"rule:{rule['id']}"
