"""The conventions people expect from a CLI they like (gh, llm, journalctl, systemctl), through the
real console scripts: --version, a subcommand's own usage, filters and search, people's times,
--json everywhere with one help line, one name per option, completion and a man page, a watch that
says when and why, a report that says over which period."""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hearth.audit.store import AuditStore, RunRecord
from hearth.cli.loop import build_parser as build_loop_parser
from hearth.cli.main import build_parser
from hearth.queue.directory import Queue
from hearth.queue.request import Request
from hearth.settings import Settings
from tests.alert_support import write_alerts_toml
from tests.conftest import ROOT, run_cli
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.queue_support import drop, rows, wait_for
from tests.web_support import free_port

# what prints no data: the web server, and the two that print generated scripts
NO_JSON = {"serve", "worker", "channels run", "completion", "man", "mcp serve"}  # services; mcp serve: stdout is MCP
SYNONYMS = [("--max-iterations", "--max-iters"), ("--allowed-tools", "--tools"), ("--agent-name", "--agent")]


def leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, argparse.ArgumentParser]]:
    found = []
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for action in subs:
        for name, child in action.choices.items():
            found += leaves(child, (*path, name))
    return found if subs else [(" ".join(path), parser)]


def seed(state_dir: Path) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    with AuditStore(state_dir / "audit.db", clock=lambda: "2026-01-10T00:00:00.000Z") as audit:
        for run_id, agent, model, source, started, goal in [
            ("old-1", "builder", "qwen2.5-coder", "cli", "2025-06-01T10:00:00.000Z", "tidy the garage notes"),
            ("new-1", "notes", "llama3.2", "timer", "2026-01-05T10:00:00.000Z", "summarise the meeting"),
            ("new-2", "builder", "llama3.2", "command-center", "2026-01-06T10:00:00.000Z", "fix the flaky test"),
        ]:
            audit.start_run(
                RunRecord(
                    id=run_id, agent_name=agent, model=model, goal=goal, mode="auto", source=source, started_at=started
                )
            )
            audit.finish_run(run_id, status="done" if run_id != "new-2" else "failed", duration_ms=4200, summary="")
        audit.finish_run("new-1", summary="The meeting chose a quarterly release train.")


def ids(*args: str) -> list[str]:
    proc = run_cli("hearth", "runs", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return [r["id"] for r in json.loads(proc.stdout)]


@pytest.mark.parametrize("program", ["hearth", "hearth-loop"])
def test_version_prints_the_version_and_the_commit(program: str) -> None:
    proc = run_cli(program, "--version")
    assert proc.returncode == 0
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    expected = f"{program} 0.1.0" + (f" (commit {commit.stdout.strip()})" if commit.returncode == 0 else "")
    assert proc.stdout.strip() == expected


@pytest.mark.parametrize(
    ("argv", "usage"),
    [
        (["runs", "--bogus"], "usage: hearth runs "),
        (["creds", "set", "X", "--host", "h", "--bogus"], "usage: hearth creds set "),
        (["--state-dir", "/tmp", "show", "--nope"], "usage: hearth show "),
    ],
)
def test_a_subcommand_s_bad_flag_shows_that_subcommand_s_usage(state_dir: Path, argv: list[str], usage: str) -> None:
    proc = run_cli("hearth", *argv)
    assert proc.returncode == 2 and proc.stderr.startswith(usage) and "unrecognized arguments: --" in proc.stderr


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["aprove", "abcd"], "argument COMMAND: invalid choice: 'aprove'; did you mean approve?"),
        (["kb", "serch", "x"], "argument VERB: invalid choice: 'serch'; did you mean search?"),
        (["runs", "--status", "donee"], "argument --status: no run has the status 'donee'; did you mean done?"),
    ],
)
def test_a_mistyped_word_is_answered_with_the_one_likely_meant(state_dir: Path, argv: list[str], said: str) -> None:
    proc = run_cli("hearth", *argv)
    assert proc.returncode == 2 and said in proc.stderr, proc.stderr
    assert proc.stdout == ""


def test_runs_filters_by_status_agent_model_source_and_since(state_dir: Path) -> None:
    seed(state_dir)
    assert ids() == ["new-2", "new-1", "old-1"]
    assert ids("--status", "failed") == ["new-2"]
    assert ids("--agent", "builder") == ids("--agent-name", "builder") == ["new-2", "old-1"]
    assert ids("--model", "llama3.2", "--source", "timer") == ["new-1"]
    assert ids("--since", "2026-01-01") == ["new-2", "new-1"]
    assert "no runs match these filters" in run_cli("hearth", "runs", "--status", "denied").stdout


def test_runs_search_finds_words_in_goals_and_summaries_through_the_full_text_index(state_dir: Path) -> None:
    seed(state_dir)
    assert ids("--search", "flaky") == ["new-2"]
    assert ids("--search", "release train") == ["new-1"]  # the summary, written when the run finished
    assert ids("--search", 'garage "notes') == ["old-1"]  # quotes are words, not FTS syntax
    assert ids("--search", "quarterly", "--status", "failed") == []
    with AuditStore(state_dir / "audit.db") as audit:
        assert audit.rows("select name from _migrations where name = 'm110_runs_search'")


def test_tables_show_times_as_people_read_them_and_json_keeps_iso(state_dir: Path) -> None:
    seed(state_dir)
    table = run_cli("hearth", "runs").stdout
    assert "2026-01-06T10:00:00.000Z" not in table and "4.2 s" in table
    assert re.search(r"new-2 .* 2026-01-06 \d\d:\d\d ", table)  # a day or more ago: the local date and time
    assert json.loads(run_cli("hearth", "runs", "--json").stdout)[0]["started_at"] == "2026-01-06T10:00:00.000Z"
    shown = run_cli("hearth", "show", "new-2").stdout
    assert "took 4.2 s" in shown and "started 2026-01-06 " in shown
    start = run_cli("hearth-loop", "--self-test")
    assert start.returncode == 0
    assert re.search(r"(just now|\d+ s ago)", run_cli("hearth", "runs", "--limit", "1").stdout)


def test_every_table_shows_its_times_as_people_read_them(state_dir: Path, tmp_path: Path) -> None:
    """The alerts' `at`, a mission's `next` and the budget's day read as the runs' `started` does."""
    config = tmp_path / "config"
    write_alerts_toml(config, ("desk", f"json://127.0.0.1:{free_port()}/nobody", None))
    (config / "missions").mkdir()
    (config / "missions" / "nightly.toml").write_text('schedule = "*-*-* 06:00:00"\ngoal = "sum up"\n')
    assert run_cli("hearth", "alerts", "test").returncode == 1  # nobody listens: recorded failed
    shown = {c: run_cli("hearth", c).stdout for c in ("alerts", "missions", "budget")}
    iso = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d")
    assert {command: iso.findall(text) for command, text in shown.items()} == {
        "alerts": [],
        "missions": [],
        "budget": [],
    }
    assert re.search(r"desk +failed", shown["alerts"]) and re.search(r"(just now|\d+ s ago)", shown["alerts"])
    assert re.search(r"nightly .* (in \d+ (h|min|s)|just now) ", shown["missions"])


def test_every_command_that_prints_data_takes_json_with_a_help_line() -> None:
    missing, silent = [], []
    for name, parser in leaves(build_parser()):
        if name in NO_JSON:
            continue
        found = [a for a in parser._actions if "--json" in a.option_strings]
        if not found:
            missing.append(name)
        elif not found[0].help:
            silent.append(name)
    assert missing == [] and silent == []


def test_pause_and_resume_answer_in_json_what_they_did(state_dir: Path) -> None:
    held = json.loads(run_cli("hearth", "pause", "--reason", "upgrade", "--json").stdout)
    assert held["paused"]["reason"] == "upgrade" and held["already"] is False
    assert json.loads(run_cli("hearth", "pause", "--json").stdout)["already"] is True
    done = json.loads(run_cli("hearth", "resume", "--json").stdout)
    assert done["resumed"] is True and done["was"]["reason"] == "upgrade"
    assert json.loads(run_cli("hearth", "resume", "--json").stdout) == {"resumed": False, "was": None}


def test_one_name_per_option_across_commands_with_the_other_kept_as_an_alias() -> None:
    parsers = [*leaves(build_parser()), ("hearth-loop", build_loop_parser(Settings.from_env({})))]
    for name, parser in parsers:
        for action in parser._actions:
            for canonical, alias in SYNONYMS:
                if {canonical, alias} & set(action.option_strings):
                    assert action.option_strings[:2] == [canonical, alias], (name, action.option_strings)


def test_bash_completion_is_generated_from_the_parsers_and_completes_for_real(tmp_path: Path) -> None:
    script = tmp_path / "hearth.bash"
    script.write_text(run_cli("hearth", "completion", "bash").stdout)
    probe = (
        f"source {script}\n"
        't() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _hearth_complete; echo "${COMPREPLY[*]}"; }\n'
        "t hearth ru\nt hearth creds s\nt hearth runs --sta\nt hearth-loop --allowed\nt hearth completion z\n"
    )
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True)
    assert done.stdout.splitlines() == ["runs", "set", "--status", "--allowed-tools", "zsh"]


def test_zsh_and_fish_completion_parse_and_name_every_command() -> None:
    for shell in ("zsh", "fish"):
        text = run_cli("hearth", "completion", shell).stdout
        for command in ("runs", "show", "enqueue", "creds", "completion"):
            assert command in text
        if shutil.which(shell):
            assert subprocess.run([shell, "-n", "-c", text]).returncode == 0 if shell == "fish" else True
    assert run_cli("hearth", "completion", "zsh").stdout.startswith("#compdef hearth hearth-loop")


@pytest.mark.parametrize("program", ["hearth", "hearth-loop"])
def test_the_man_page_is_generated_from_the_parser(program: str) -> None:
    page = run_cli("hearth", "man", program).stdout
    assert page.startswith(f".TH {program.upper().replace('-', chr(92) + '-')} 1")
    assert "\\-\\-state\\-dir" in page and "\\-\\-version" in page
    if program == "hearth":
        assert '.SS "hearth runs"' in page and "\\-\\-search" in page
    if shutil.which("groff"):
        shown = subprocess.run(["groff", "-man", "-Tutf8"], input=page, capture_output=True, text=True)
        assert shown.returncode == 0 and "warning" not in shown.stderr


def read_until(proc: subprocess.Popen[str], lines: list[str], marker: str, timeout: float = 60) -> None:
    """Read `proc`'s lines into `lines` until one holds `marker`; fail after `timeout`."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while not any(marker in line for line in lines):
        assert time.monotonic() < deadline, f"no {marker!r} in {lines}"
        if select.select([proc.stdout], [], [], 0.5)[0]:
            lines.append(proc.stdout.readline().rstrip("\n"))


def test_watch_stamps_every_line_gives_each_rejection_s_reason_and_says_when_a_run_waits(
    state_dir: Path, tmp_path: Path
) -> None:
    queue = state_dir / "queue"
    script = [tool_call("run_command", {"command": "echo hi"}), final_answer("said hi")]
    with FakeOllama(script) as fake:
        watch = subprocess.Popen(
            [sys.executable, "-m", "hearth.cli.main", "watch"],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**os.environ, "OLLAMA_HOST": fake.url, "PYTHONPATH": str(ROOT)},
        )
        assert watch.stdout is not None
        try:
            drop(queue, "ghost.json", {"id": "ghost", "goal": "g", "agent_name": "ghost"})  # refused by its run
            drop(queue, "broken.json", b"{not json")  # refused by the queue
            drop(queue, "asks.json", {"id": "asks", "goal": "say hi", "mode": "auto"})
            lines: list[str] = []
            read_until(watch, lines, " waiting asks: ")
            [waiting] = [line for line in lines if " waiting " in line]
            approval = re.search(r"approval (\S+): run_command", waiting).group(1)  # type: ignore[union-attr]
            assert f"decide with: hearth approve {approval}  or: hearth deny {approval}" in waiting
            assert run_cli("hearth", "approve", approval).returncode == 0
            wait_for(lambda: rows(state_dir, "select 1 from runs where id = 'asks' and status = 'done'"))
            read_until(watch, lines, "ended ghost: ")
            read_until(watch, lines, "ended asks: ")
            read_until(watch, lines, "rejected broken.json: ")
        finally:
            watch.send_signal(signal.SIGTERM)
            lines += watch.communicate(timeout=60)[0].splitlines()
    assert all(re.match(r"\d\d:\d\d:\d\d ", line) for line in lines[:-1] if line), lines  # all but the summary
    assert any(re.search(r"rejected broken.json: not valid JSON", line) for line in lines)
    assert any(re.search(r"ended ghost: exit 2: rejected: unknown agent profile 'ghost'", line) for line in lines), (
        lines
    )


def test_the_report_says_its_period_and_counts_every_rejected_run_as_a_rejection(state_dir: Path) -> None:
    rejected = run_cli("hearth-loop", "--agent-name", "ghost", "go")  # refused when its run was checked
    assert rejected.returncode == 2
    report = run_cli("hearth", "report").stdout
    assert re.match(r"1 runs, all recorded, since the first on \d{4}-\d\d-\d\d ", report)
    section = report.split("\nRejections\n", 1)[1]
    assert "unknown agent profile 'ghost'" in section and "none" not in section.splitlines()[0]
    data = json.loads(run_cli("hearth", "report", "--json").stdout)
    assert data["by_status"] == {"rejected": 1} and sum(r["count"] for r in data["rejections"]) == 1
    assert "since" in run_cli("hearth", "report", "--since", "7d").stdout.splitlines()[0]


def test_a_queued_run_whose_state_dir_is_inside_a_git_repository_gets_its_checkpoints(tmp_path: Path) -> None:
    repo = tmp_path / "project"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    state = repo / ".hearth"
    env = {"HEARTH_STATE_DIR": str(state), "HEARTH_CONFIG_DIR": str(tmp_path / "config")}
    Queue(state / "queue").ensure().enqueue(Request(id="in-repo", goal="write it", mode="auto"))
    script = [tool_call("write_file", {"path": "note.txt", "content": "hi\n"}), final_answer("wrote it")]
    with FakeOllama(script) as fake:
        spawned = run_cli("hearth", "spawn", "--local", env={**env, "OLLAMA_HOST": fake.url})
    assert spawned.returncode == 0, spawned.stderr
    points = rows(state, "select phase, status, tag from checkpoints where run_id = 'in-repo' order by id")
    assert points[-1]["status"] == "committed" and points[-1]["tag"] == "hearth/in-repo/done"
    assert subprocess.run(["git", "-C", str(repo), "log", "--oneline"], capture_output=True).stdout == b""
