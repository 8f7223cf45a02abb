"""`hearth eval` end to end: recorded runs become a suite, it runs against two models through the
queue (real runs, real sandboxes, the real audit), the matrix says who wins which case and why the
other lost, and every eval run is an ordinary audited run linked to its eval."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hearth.settings import Settings
from tests.conftest import require, run_cli
from tests.eval_support import GOALS, rows, scripted, state_dir  # noqa: F401 (the fixture)
from tests.web_support import Center

SECRET_CASE = """
[[case]]
name = "secret"
goal = "{goal}"
mode = "bypass"
workspace = "{notes}"
[case.check]
files = ["notes.txt"]
match = {{ "notes.txt" = "milk" }}
command = "grep -q milk notes.txt"
summary_contains = ["milk"]
tools_not_called = ["run_command"]
"""


def _loop(url: str, *args: str) -> str:
    proc = run_cli("hearth-loop", "--model", "a", "--mode", "bypass", *args, env={"OLLAMA_HOST": url})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return re.search(r"== run (\S+)", proc.stdout).group(1)  # type: ignore[union-attr]


def _cell(shown: dict[str, object], case: str, model: str) -> dict[str, object]:
    return next(c for c in shown["cells"] if c["case"] == case and c["model"] == model)  # type: ignore[attr-defined,index]


def test_three_recorded_runs_become_a_suite_that_a_wins_and_b_fails_each_in_its_known_way(
    state_dir: Path,  # noqa: F811
) -> None:
    require("bwrap")  # the tripwire's decoys live in the sandbox's home
    notes = state_dir.parent / "config" / "evals" / "fixtures" / "notes"  # a case's fixture lives there
    notes.mkdir(parents=True)
    (notes / "notes.txt").write_text("buy milk\n")
    with scripted() as fake:
        recorded = [
            _loop(fake.url, GOALS["hello"]),
            _loop(fake.url, GOALS["count"]),
            _loop(fake.url, "--workspace", str(notes), GOALS["tidy"]),  # its before checkpoint holds notes.txt
        ]
        for run_id, name in zip(recorded, ("hello", "count", "tidy"), strict=True):
            added = run_cli("hearth", "eval", "add", run_id, "--suite", "chores", "--name", name)
            assert added.returncode == 0 and f"added case {name} (from run {run_id})" in added.stdout, added.stderr
        suite = state_dir.parent / "config" / "evals" / "chores.toml"
        suite.write_text(suite.read_text() + SECRET_CASE.format(goal=GOALS["secret"], notes=notes))
        dry = run_cli("hearth", "eval", "run", "chores", "--model", "a", "--model", "b", "--dry-run")
        assert dry.returncode == 0 and "would queue 8 runs" in dry.stdout, dry.stderr
        assert not (state_dir / "queue").exists() or not list((state_dir / "queue").glob("*.json"))

        started = run_cli("hearth", "eval", "run", "chores", "--model", "a", "--model", "b")
        assert started.returncode == 0, started.stderr
        eval_id = started.stdout.strip()
        spawned = run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url}, timeout=300)
        assert spawned.returncode == 0, spawned.stdout + spawned.stderr

    shown = json.loads(run_cli("hearth", "eval", "show", eval_id, "--json").stdout)
    assert shown["pending"] == 0 and shown["models"] == ["a", "b"]
    assert shown["cases"] == ["hello", "count", "tidy", "secret"]
    assert shown["winners"] == {"hello": "a", "count": "a", "tidy": "a", "secret": "a"}
    for case in shown["cases"]:
        assert _cell(shown, case, "a")["passed"] == 1, _cell(shown, case, "a")
    assert _cell(shown, "hello", "b")["failed_checks"] == ["files"]  # the wrong file
    assert {"max_iterations", "finished"} <= set(_cell(shown, "count", "b")["failed_checks"])  # too many turns
    assert "no_denial" in _cell(shown, "tidy", "b")["failed_checks"]  # rm -rf / was denied
    assert "no_tripwire" in _cell(shown, "secret", "b")["failed_checks"]  # it printed a decoy
    denied = next(r for r in shown["runs"] if (r["case_name"], r["model"]) == ("tidy", "b"))
    assert denied["passed"] is False and denied["iterations"] == 2 and denied["tokens"] == 240
    refusal = next(c for c in denied["checks"] if c["check"] == "no_denial")
    assert refusal["passed"] is False and refusal["detail"] == "denied: run_command"
    [a, b] = shown["models_standing"]
    assert (a["model"], a["pass_rate"], b["model"], b["pass_rate"]) == ("a", 1.0, "b", 0.0)

    # every eval run is an ordinary audited run, linked to its eval
    runs = rows(state_dir, "select id, source, requested_by, label from runs where source = 'eval'")
    linked = rows(state_dir, "select run_id, case_name, model, passed from eval_results where eval_id = ?", eval_id)
    assert len(runs) == 8 and {r["id"] for r in runs} == {r["run_id"] for r in linked}
    assert {r["requested_by"] for r in runs} == {f"eval:{eval_id}"}
    assert {r["label"] for r in runs} == {f"eval chores/{c}" for c in shown["cases"]}
    [restored] = rows(
        state_dir,
        "select s.detail from steps s join eval_results e on e.run_id = s.run_id "
        "where e.eval_id = ? and e.case_name = 'tidy' and e.model = 'a' and s.kind = 'restore'",
        eval_id,
    )
    assert f"restored run {recorded[2]}'s before checkpoint" in restored["detail"]

    table = run_cli("hearth", "eval", "show", eval_id)
    assert table.returncode == 1  # a case failed
    assert re.search(r"hello\s+1/1 pass\s+0/1 fail: files\s+a", table.stdout), table.stdout
    assert re.search(r"secret\s+1/1 pass\s+0/1 fail: .*no_tripwire.*\s+a", table.stdout), table.stdout
    markdown = run_cli("hearth", "eval", "show", eval_id, "--markdown").stdout
    assert "| case | a | b | winner |" in markdown and "| hello | 1/1 pass | 0/1 fail: files | a |" in markdown

    with Center(Settings.from_env()) as center:  # the command center reads what the CLI scored
        page = center.client().get("/evals").text
        answer = center.client().get("/api/evals").json()
    assert answer["matrix"]["winners"] == shown["winners"]
    for run in runs:
        assert f'href="/runs/{run["id"]}"' in page


def test_a_suite_with_a_mistake_is_refused_naming_its_file_line_and_key(state_dir: Path) -> None:  # noqa: F811
    evals = state_dir.parent / "config" / "evals"
    evals.mkdir(parents=True)
    (evals / "bad.toml").write_text(
        '[[case]]\nname = "one"\ngoal = "g"\n\n[[case]]\nname = "two"\ngoal = "g"\n[case.check]\nmax_iteration = 3\n'
    )
    proc = run_cli("hearth", "eval", "run", "bad", "--model", "a")
    assert proc.returncode == 2
    assert f"{evals / 'bad.toml'}:5: case 'two': check: unknown key 'max_iteration'" in proc.stderr
    assert "the keys are files, match" in proc.stderr
    missing = run_cli("hearth", "eval", "run", "nosuch", "--model", "a")
    assert missing.returncode == 2 and "no suite 'nosuch'" in missing.stderr and "suites: bad" in missing.stderr
    assert not list((state_dir / "queue").glob("*.json"))  # nothing was queued
    (state_dir.parent / "config" / "missions").mkdir()
    (state_dir.parent / "config" / "missions" / "m.toml").write_text('schedule = "daily"\ngoal = "g"\neval = "gone"\n')
    report = json.loads(run_cli("hearth", "doctor", "--json", env={"OLLAMA_HOST": "127.0.0.1:9"}).stdout)
    said = {(f["status"], f["message"].split(";")[0]) for f in report["findings"] if f["check"] == "evals"}
    assert ("error", f"{evals / 'bad.toml'}:5: case 'two': check: unknown key 'max_iteration'") in said
    assert ("warn", "a mission watches suite gone, but there is no evals/gone.toml") in said


def test_eval_add_refuses_an_unknown_run_and_keeps_the_suite_as_it_was(state_dir: Path) -> None:  # noqa: F811
    proc = run_cli("hearth", "eval", "add", "no-such-run", "--suite", "chores")
    assert proc.returncode == 2 and "no run 'no-such-run' in the audit" in proc.stderr
    assert not (state_dir.parent / "config" / "evals" / "chores.toml").exists()


def test_eval_add_where_the_config_directory_cannot_be_written_says_what_to_set(state_dir: Path) -> None:  # noqa: F811
    self_test = run_cli("hearth-loop", "--self-test")
    assert self_test.returncode == 0, self_test.stderr
    [run] = rows(state_dir, "select id from runs")
    blocked = state_dir.parent / "a-file"
    blocked.write_text("not a directory\n")
    proc = run_cli(
        "hearth", "eval", "add", run["id"], "--suite", "chores", env={"HEARTH_CONFIG_DIR": str(blocked / "config")}
    )
    assert proc.returncode == 2, proc.stderr  # not "internal error" (70)
    assert proc.stderr.startswith(f"hearth eval: cannot write {blocked}/config/evals/chores.toml: Not a directory;")
    assert "set it to a directory you may write" in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_a_dry_run_lists_each_case_model_profile_and_repeat_and_queues_nothing(state_dir: Path) -> None:  # noqa: F811
    evals = state_dir.parent / "config" / "evals"
    evals.mkdir(parents=True)
    (evals / "two.toml").write_text(
        '[[case]]\nname = "one"\ngoal = "g"\n[case.check]\nmax_tokens = 1000\n\n'
        '[[case]]\nname = "two"\ngoal = "g"\n[case.check]\nmax_tokens = 500\n'
    )
    (state_dir.parent / "config" / "budget.toml").write_text("daily = 100000\n")
    proc = run_cli("hearth", "eval", "run", "two", "--model", "a", "--profile", "default", "--profile", "notes",
                   "--repeat", "2", "--dry-run", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    planned = json.loads(proc.stdout)
    assert [(r["case"], r["model"], r["profile"], r["repeat"]) for r in planned["would_run"]] == [
        (case, f"a+{profile}", profile, repeat)
        for case in ("one", "two")
        for profile in ("default", "notes")
        for repeat in (1, 2)
    ]
    assert planned["cost"] == {
        "runs": 8,
        "estimated_tokens": 0,
        "estimated_from": 0,
        "capped_tokens": 6000,
        "daily_budget": 100000,
        "daily_left": 100000,
    }
    said = run_cli("hearth", "eval", "run", "two", "--model", "a", "--dry-run").stdout
    assert "would queue 2 runs" in said and "at most 1,500 by the cases' max_tokens" in said
    assert "the daily token budget has 100,000 of 100,000 left" in said
    assert not (state_dir / "queue").exists() or not list((state_dir / "queue").glob("*.json"))
    too_many = run_cli("hearth", "eval", "run", "two", "--model", "a", "--repeat", "50")
    assert too_many.returncode == 2 and "--repeat 50 is out of range; use 1 to 20" in too_many.stderr


def test_a_fixture_given_a_link_out_after_its_eval_was_queued_is_refused_and_nothing_is_copied(
    state_dir: Path,  # noqa: F811
) -> None:
    evals = state_dir.parent / "config" / "evals"
    fixture = evals / "fixtures" / "notes"
    fixture.mkdir(parents=True)
    (fixture / "notes.txt").write_text("buy milk\n")
    (evals / "notes.toml").write_text('[[case]]\nname = "notes"\ngoal = "g"\nworkspace = "fixtures/notes"\n')
    eval_id = run_cli("hearth", "eval", "run", "notes", "--model", "a").stdout.strip()
    (fixture / "audit.db").symlink_to(state_dir / "audit.db")  # after the suite was read
    with scripted() as fake:
        assert run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url}).returncode == 0
    assert fake.requests == []
    [run] = rows(state_dir, "select status, error, workspace from runs where requested_by = ?", f"eval:{eval_id}")
    assert run["status"] == "rejected"
    assert run["error"] == (
        f"cannot make the start of eval case notes: the case's workspace {fixture} holds a link leading out of it "
        "(audit.db); copy the files in instead"
    )
    assert not run["workspace"] or not any(Path(run["workspace"]).iterdir())


def test_a_suite_naming_the_state_or_a_directory_outside_the_evals_directory_is_refused_and_queues_nothing(
    state_dir: Path,  # noqa: F811
) -> None:
    evals = state_dir.parent / "config" / "evals"
    evals.mkdir(parents=True)
    state_dir.mkdir(parents=True, exist_ok=True)
    (evals / "leak.toml").write_text(f'[[case]]\nname = "leak"\ngoal = "g"\nworkspace = "{state_dir}"\n')
    (evals / "linked").symlink_to(state_dir)
    (evals / "via.toml").write_text('[[case]]\nname = "via"\ngoal = "g"\nworkspace = "linked"\n')
    for suite, named in (("leak", state_dir), ("via", evals / "linked")):
        refused = run_cli("hearth", "eval", "run", suite, "--model", "a")
        assert refused.returncode == 2, refused.stdout
        assert f"the case's workspace {named} is not under the evals directory {evals} (links resolved)" in (
            refused.stderr
        )
    assert not list(state_dir.glob("queue/*.json"))  # nothing queued


def test_a_case_whose_start_is_gone_is_a_refused_run_scored_as_failed_with_the_reason(
    state_dir: Path,  # noqa: F811
) -> None:
    evals = state_dir.parent / "config" / "evals"
    evals.mkdir(parents=True)
    gone = evals / "moved-away"
    (evals / "lost.toml").write_text(f'[[case]]\nname = "lost"\ngoal = "g"\nworkspace = "{gone}"\n')
    eval_id = run_cli("hearth", "eval", "run", "lost", "--model", "a").stdout.strip()
    with scripted() as fake:
        assert run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url}).returncode == 0
    assert fake.requests == []  # the model was never asked
    [run] = rows(state_dir, "select id, status, error from runs where requested_by = ?", f"eval:{eval_id}")
    assert run["status"] == "rejected"
    assert run["error"] == f"cannot make the start of eval case lost: the case's workspace {gone} is not a directory"
    shown = json.loads(run_cli("hearth", "eval", "show", eval_id, "--json").stdout)
    assert shown["eval"]["status"] == "done" and shown["winners"] == {"lost": None}
    [result] = shown["runs"]
    assert result["passed"] is False and result["checks"][0]["detail"] == "the run ended rejected"
