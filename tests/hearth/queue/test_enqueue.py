"""`hearth enqueue` as a real process: flags, files and stdin in both shapes, refusals that write
nothing, and healing failed spawn units through a recording fake `systemctl` first on PATH.
"""

from __future__ import annotations

import getpass
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import hearth.cli.main as cli
from hearth.audit.store import AuditStore, RunRecord
from tests.conftest import ROOT, run_cli
from tests.fake_ollama import FakeOllama, final_answer
from tests.queue_support import FakeSystemctl, listing

LOCAL = {"HEARTH_LAUNCHER": "local"}


def queued(state_dir: Path, request_id: str) -> dict[str, object]:
    return json.loads((state_dir / "queue" / f"{request_id}.json").read_text())


def test_flags_become_a_version_1_request_stamped_with_who_and_when(state_dir: Path) -> None:
    (state_dir.parent / "config" / "agents" / "tidier").mkdir(parents=True)  # a profile enqueue can find
    proc = run_cli(
        "hearth",
        "enqueue",
        "tidy the notes",
        "--id",
        "tidy-1",
        "--model",
        "qwen2.5-coder:7b",
        "--agent-name",
        "tidier",
        "--mode",
        "plan",
        "--tools",
        "read_file, list_files",
        "--max-iterations",
        "5",
        "--timeout",
        "120",
        "--credential",
        "notes-ro",
        "--egress",
        "api.github.com",
        "--source",
        "timer",
        env=LOCAL,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "tidy-1\n" and proc.stderr == ""
    body = queued(state_dir, "tidy-1")
    created = body.pop("created_at")
    assert body == {
        "version": 1,
        "id": "tidy-1",
        "goal": "tidy the notes",
        "model": "qwen2.5-coder:7b",
        "agent_name": "tidier",
        "mode": "plan",
        "allowed_tools": ["read_file", "list_files"],
        "max_iterations": 5,
        "timeout_s": 120,
        "credentials": ["notes-ro"],
        "egress": ["api.github.com"],
        "source": "timer",
        "requested_by": getpass.getuser(),
        "evolve": False,
    }
    assert created.endswith("Z") and created.startswith("20")
    assert sorted(os.listdir(state_dir / "queue")) == ["tidy-1.json"]  # the subdirectories are the spawner's


def test_the_command_line_of_the_nix_module_s_schedules_is_accepted(state_dir: Path) -> None:
    proc = run_cli(
        "hearth",
        "enqueue",
        "--goal",
        "check the disks",
        "--agent-name",
        "default",
        "--mode",
        "plan",
        "--source",
        "timer",
        "--allowed-tools",
        "read_file,list_files",
        "--model",
        "qwen2.5-coder",
        env=LOCAL,
    )
    assert proc.returncode == 0, proc.stderr
    body = queued(state_dir, proc.stdout.strip())
    assert (body["goal"], body["allowed_tools"], body["source"]) == (
        "check the disks",
        ["read_file", "list_files"],
        "timer",
    )


def test_a_submitter_who_cannot_read_the_audit_still_enqueues_and_leaves_it_untouched(state_dir: Path) -> None:
    state_dir.mkdir(parents=True)
    (state_dir / "audit.db").write_bytes(b"not a database a submitter could read")
    proc = run_cli("hearth", "enqueue", "go", "--id", "submitted", env=LOCAL)
    assert proc.returncode == 0 and proc.stdout == "submitted\n", proc.stderr
    assert (state_dir / "audit.db").read_bytes() == b"not a database a submitter could read"
    assert sorted(os.listdir(state_dir)) == ["audit.db", "queue"]


def test_a_request_file_in_either_shape_and_stdin_are_accepted(state_dir: Path, tmp_path: Path) -> None:
    v1 = tmp_path / "req.json"
    v1.write_text(json.dumps({"goal": "from a file", "requested_by": "cron"}))
    legacy = ROOT / "queue-spec" / "examples" / "valid" / "legacy-with-lists.json"
    first = run_cli("hearth", "enqueue", "--file", str(v1), "--json", env=LOCAL)
    second = run_cli("hearth", "enqueue", "--file", str(legacy), "--id", "cc-9", env=LOCAL)
    third = subprocess.run(
        [sys.executable, "-m", "hearth.cli.main", "enqueue", "--file", "-"],
        capture_output=True,
        input='{"id": "piped", "goal": "from stdin"}',
        text=True,
        cwd=ROOT,
        timeout=60,
        env={**os.environ, **LOCAL, "PYTHONPATH": str(ROOT)},
    )
    assert first.returncode == second.returncode == third.returncode == 0, (first.stderr, second.stderr, third.stderr)
    first_id = json.loads(first.stdout)["id"]
    assert queued(state_dir, first_id)["requested_by"] == "cron"
    assert queued(state_dir, "cc-9")["allowed_tools"] == ["read_file", "write_file", "run_command", "list_files"]
    assert queued(state_dir, "cc-9")["source"] == "command-center"
    assert queued(state_dir, "piped")["goal"] == "from stdin"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["go", "--tools", "read_file,no_such_tool"],
            "--allowed-tools: 'no_such_tool' is not a tool hearth has; the tools are ",
        ),
        (["go", "--id", "../x"], 'invalid request: --id "../x" is not allowed: use 1-64 characters'),
        (
            ["go", "--max-iterations", "0"],
            "invalid request: --max-iterations must be at least 1, got 0",
        ),
        (["go", "--egress", "http://x"], 'invalid request: --egress "http://x" is not allowed'),
        (["   "], "invalid request: the goal is blank; say what the agent should do"),
        ([], "no goal given; usage: hearth enqueue"),
        (["--file", "/nonexistent.json"], "cannot read /nonexistent.json: No such file or directory"),
        (["goal", "--file", "/x.json"], "--file is the whole request; drop the goal argument"),
        (["one goal", "--goal", "another"], "give the goal once: as an argument or with --goal"),
        (["go", "--egress", "pypi.org:443"], 'invalid request: --egress "pypi.org:443" is not allowed'),
        (["go", "--credential", "9lives"], 'invalid request: --credential "9lives" is not allowed'),
        (
            ["go", "--max-iterations", "500", "--timeout", "0"],
            "invalid request: --max-iterations must be at most 100, got 500; --timeout must be at least 1, got 0",
        ),
    ],
)
def test_a_bad_request_is_refused_in_one_line_and_nothing_is_written(
    state_dir: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["enqueue", *args]) == 2  # in process: eight interpreters would only add start-up time
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"hearth enqueue: {message}") and err.count("\n") == 1
    assert not (state_dir / "queue").exists() or listing(state_dir / "queue") == [
        "claimed",
        "failed",
        "locks",
        "rejected",
    ]


def test_an_id_already_queued_or_already_run_is_refused(state_dir: Path) -> None:
    assert run_cli("hearth", "enqueue", "once", "--id", "same", env=LOCAL).returncode == 0
    again = run_cli("hearth", "enqueue", "twice", "--id", "same", env=LOCAL)
    assert again.returncode == 2 and "duplicate id: a request same is already queued" in again.stderr
    assert queued(state_dir, "same")["goal"] == "once"
    with AuditStore(state_dir / "audit.db") as audit:
        audit.start_run(RunRecord(id="ran", agent_name="a", model="m", goal="g", mode="auto", status="done"))
    ran = run_cli("hearth", "enqueue", "again", "--id", "ran", env=LOCAL)
    assert ran.returncode == 2 and "duplicate id: run ran already exists (status done)" in ran.stderr


@pytest.fixture
def systemctl(tmp_path: Path) -> FakeSystemctl:
    return FakeSystemctl(tmp_path)


def test_enqueue_heals_failed_spawn_units_and_says_so(state_dir: Path, systemctl: FakeSystemctl) -> None:
    systemctl.answer_is_failed("failed", "failed")
    proc = run_cli("hearth", "enqueue", "go", "--id", "healed", env=systemctl.env())
    assert proc.returncode == 0 and proc.stdout == "healed\n"
    assert systemctl.calls == [
        "is-failed hearth-spawn.path hearth-spawn.service",
        "reset-failed hearth-spawn.path hearth-spawn.service",
        "start --no-block hearth-spawn.service",
        "restart hearth-spawn.path",
    ]
    assert "launcher healed: reset-failed hearth-spawn.path hearth-spawn.service" in proc.stderr
    assert (state_dir / "queue" / "healed.json").is_file()


def test_only_the_failed_unit_is_reset(state_dir: Path, systemctl: FakeSystemctl) -> None:
    systemctl.answer_is_failed("active", "failed")
    assert run_cli("hearth", "enqueue", "go", env=systemctl.env()).returncode == 0
    assert systemctl.calls[1:] == [
        "reset-failed hearth-spawn.service",
        "start --no-block hearth-spawn.service",
        "restart hearth-spawn.path",
    ]


def test_healthy_spawn_units_are_left_alone(state_dir: Path, systemctl: FakeSystemctl) -> None:
    systemctl.answer_is_failed("active", "inactive")
    proc = run_cli("hearth", "enqueue", "go", env=systemctl.env())
    assert proc.returncode == 0 and proc.stderr == ""
    assert systemctl.calls == ["is-failed hearth-spawn.path hearth-spawn.service"]


def test_a_stopped_path_unit_is_reported_not_overridden(state_dir: Path, systemctl: FakeSystemctl) -> None:
    systemctl.answer_is_failed("inactive", "inactive")
    proc = run_cli("hearth", "enqueue", "go", env=systemctl.env())
    assert proc.returncode == 0
    assert "warning: hearth-spawn.path is inactive: the request waits until it is started" in proc.stderr
    assert len(systemctl.calls) == 1


def test_the_request_stays_queued_when_systemctl_cannot_heal(state_dir: Path, systemctl: FakeSystemctl) -> None:
    systemctl.states.write_text("what\n")
    proc = run_cli("hearth", "enqueue", "go", "--id", "kept", env=systemctl.env())
    assert proc.returncode == 0 and proc.stdout == "kept\n"
    assert "queued, but the launcher could not be checked" in proc.stderr
    assert (state_dir / "queue" / "kept.json").is_file()


def test_spawn_with_systemd_starts_one_unit_per_request_and_the_unit_s_agent_runs_it(
    state_dir: Path, systemctl: FakeSystemctl, fake: FakeOllama
) -> None:
    env = systemctl.env(OLLAMA_HOST=fake.url)
    fake.add(final_answer("ran under the unit"))
    run_cli("hearth", "enqueue", "go", "--id", "unit-1", env=env)
    spawned = run_cli("hearth", "spawn", env=env)
    assert spawned.returncode == 0 and "started unit-1" in spawned.stdout
    assert systemctl.calls[-1] == "start --no-block hearth-agent@unit-1.service"
    assert listing(state_dir / "queue" / "claimed") == ["unit-1.json"]
    agent = run_cli("hearth", "agent", "unit-1", env=env)  # what ExecStart of hearth-agent@unit-1 runs
    assert agent.returncode == 0, agent.stderr
    assert listing(state_dir / "queue" / "claimed") == []


def test_enqueue_says_what_the_request_will_meet_a_pause_a_spent_budget_a_model_not_pulled(state_dir: Path) -> None:
    assert run_cli("hearth", "pause", "--reason", "maintenance", env=LOCAL).returncode == 0
    with AuditStore(state_dir / "audit.db") as audit:  # 110 tokens spent today, by a run of the default profile
        audit.start_run(RunRecord(id="spent", agent_name="default", model="m", goal="g", mode="plan"))
        audit.record_step("spent", "model", iteration=1, tokens_in=90, tokens_out=20, ok=1)
        audit.finish_run("spent", status="done", iterations=1, tokens_in=90, tokens_out=20)
    with FakeOllama(models=("qwen2.5-coder:7b",)) as fake:
        env = {**LOCAL, "OLLAMA_HOST": fake.url, "HEARTH_DAILY_TOKENS": "100"}
        proc = run_cli("hearth", "enqueue", "go", "--id", "late", "--model", "qwen2.5-codr", env=env)
        plain = run_cli(
            "hearth",
            "enqueue",
            "go",
            "--id",
            "fine",
            "--model",
            "qwen2.5-coder",
            env={**env, "HEARTH_DAILY_TOKENS": ""},
        )
    assert proc.returncode == 0 and proc.stdout == "late\n"  # queued all the same, its id printed
    said = proc.stderr.splitlines()
    assert said[0] == "hearth enqueue: hearth is paused since " + said[0].split("paused since ")[1]
    assert "by " in said[0] and "(maintenance): the request waits in the queue until `hearth resume`" in said[0]
    assert said[1].startswith("hearth enqueue: the daily token budget of 100 tokens is spent (110 used today)")
    assert said[2].startswith("hearth enqueue: model qwen2.5-codr is not pulled; pulled models: qwen2.5-coder:7b")
    assert "did you mean qwen2.5-coder:7b?; the run will end model_unavailable" in said[2] and len(said) == 3
    assert plain.returncode == 0 and plain.stderr.splitlines() == [said[0]]  # a tag of it is pulled: said nothing
