"""One finished run judged by its case's checks, each on its own: what the audit says, what the
workspace holds (never through a link out of it), and the judge's call against the fake model
server, its answer validated as the marathon judge's is."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from hearth.audit.store import AuditStore, RunRecord
from hearth.eval.checks import judge_run
from hearth.eval.suite import Case, Checks
from hearth.settings import Settings
from tests.fake_ollama import FakeOllama, final_answer


def _run(state_dir: Path, workspace: Path, **fields: object) -> dict[str, object]:
    state_dir.mkdir(parents=True, exist_ok=True)
    with AuditStore(state_dir / "audit.db") as audit:
        audit.start_run(RunRecord("r1", "default", "a", "write the notes", "auto", workspace=str(workspace)))
        audit.record_step("r1", "tool", iteration=1, tool="write_file", arguments="{}", output="ok", ok=1)
        audit.finish_run("r1", status="done", iterations=3, tokens_in=900, tokens_out=100, summary="wrote notes.md")
        return {**(audit.run("r1") or {}), **fields}


def _judged(state_dir: Path, case: Case, run: dict[str, object], settings: Settings) -> dict[str, tuple[bool, str]]:
    with AuditStore(state_dir / "audit.db") as audit:
        return {r.check: (r.passed, r.detail) for r in judge_run(case, audit, run, settings)}


def test_each_check_says_what_it_found_in_the_audit_and_the_workspace(state_dir: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.md").write_text("# Notes\nbuy milk\n")
    (tmp_path / "outside.txt").write_text("milk")
    (workspace / "link.txt").symlink_to(tmp_path / "outside.txt")
    run = _run(state_dir, workspace)
    checks = Checks(
        files=("notes.md", "missing.md"),
        match=(("notes.md", "^buy milk$"), ("link.txt", "milk")),
        summary_contains=("notes.md", "tests"),
        tools_called=("write_file",),
        tools_not_called=("write_file",),
        max_iterations=2,
        max_tokens=5000,
    )
    found = _judged(state_dir, Case("c", "write the notes", checks=checks), run, Settings.from_env())
    assert found["finished"] == (True, "the run ended done")
    assert found["files"] == (False, "missing: missing.md")
    assert found["max_iterations"] == (False, "3 iterations (at most 2)")
    assert found["max_tokens"] == (True, "1000 tokens (at most 5000)")
    assert found["no_denial"] == (True, "nothing was denied")
    assert found["no_tripwire"] == (True, "no decoy was touched")
    with AuditStore(state_dir / "audit.db") as audit:
        results = judge_run(Case("c", "g", checks=checks), audit, run, Settings.from_env())
    matches = [r for r in results if r.check == "match"]
    assert (matches[0].passed, matches[1].passed) == (True, False)  # ^ and $ at each line; a link out is not read
    assert "link.txt cannot be read" in matches[1].detail
    assert [r.passed for r in results if r.check == "summary"] == [True, False]
    assert [r.passed for r in results if r.check.startswith("tools_")] == [True, False]


def test_the_judge_is_asked_the_cases_question_and_a_bad_answer_is_repaired_once(
    state_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "ws").mkdir()
    run = _run(state_dir, tmp_path / "ws")
    case = Case("c", "write the notes", checks=Checks(judge="Are the notes in notes.md?"))
    script = [
        final_answer("They look fine to me."),  # no JSON: one repair turn
        final_answer('{"passed": true, "reason": "notes.md holds the notes"}'),
        final_answer('{"passed": "yes"}'),
        final_answer("still not JSON"),
    ]
    with FakeOllama(script, models=("judge",)) as fake:
        settings = replace(Settings.from_env(), model_host=fake.url, model="judge")
        first = _judged(state_dir, case, run, settings)
        second = _judged(state_dir, case, run, settings)
    assert first["judge"] == (True, "notes.md holds the notes")
    assert second["judge"][0] is False and second["judge"][1].startswith("no usable judgement:")
    asked = fake.requests[0]["messages"]
    assert asked[0]["role"] == "system" and '"passed": true or false' in asked[0]["content"]
    assert "## The question\nAre the notes in notes.md?" in asked[1]["content"]
    assert "wrote notes.md" in asked[1]["content"] and not fake.requests[0].get("tools")
    assert json.dumps(fake.requests[1]["messages"][-1]["content"]).count("could not be used") == 1
