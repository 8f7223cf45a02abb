"""`hearth research`: a question queued as a research request, its plan shown and edited while it
waits, its report printed; each refusal one line with exit 2. Real `hearth` processes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hearth.audit import research
from hearth.audit.store import AuditStore
from hearth.settings import Settings
from tests.conftest import run_cli
from tests.research_support import (
    LoopWeb,
    PhaseModel,
    Script,
    approved_run,
    go_on,
    rows,
    settings_for,
    start,
)


@pytest.fixture
def settings(state_dir: Path) -> Settings:
    return settings_for(state_dir, HEARTH_CONFIG_DIR=str(state_dir.parent / "config"))


def test_a_question_is_queued_as_a_research_request_with_its_limits(state_dir: Path) -> None:
    done = run_cli(
        "hearth", "research", "What changed in Python 3.13?", "--id", "q1", "--max-pages", "3", "--egress", "docs.test"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "q1" and "hearth research --plan q1" in done.stderr
    queued = json.loads((state_dir / "queue" / "q1.json").read_text())
    assert queued["goal"] == "What changed in Python 3.13?" and queued["egress"] == ["docs.test"]
    assert queued["research"]["max_pages"] == 3 and queued["research"]["max_searches"] == 6  # the rest defaults


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        ((), "give one of: a question, --plan RUN or --report RUN"),
        (("q", "--report", "r1"), "give one of: a question, --plan RUN or --report RUN"),
        (("--edit", "plan.json"), "--edit goes with --plan RUN"),
        (("q", "--max-pages", "0"), "invalid request: research[max_pages] must be at least 1, got 0"),
        (("--report", "nothing-here"), "no research run 'nothing-here'"),
    ],
)
def test_a_research_command_it_cannot_do_is_one_line_and_exit_2(
    state_dir: Path, argv: tuple[str, ...], said: str
) -> None:
    (state_dir / "audit.db").parent.mkdir(parents=True, exist_ok=True)
    with AuditStore(state_dir / "audit.db"):
        pass
    done = run_cli("hearth", "research", *argv)
    assert done.returncode == 2 and said in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_the_plan_is_shown_and_edited_while_it_waits_and_the_report_printed_once_done(
    state_dir: Path, settings: Settings, loop_web: LoopWeb, tmp_path: Path
) -> None:
    extract = {
        "http://docs.test/gc": {
            "excerpts": [{"sub_question": 1, "quote": "The cycle garbage collector is now incremental"}]
        }
    }
    model = PhaseModel(Script(decide=[{"reads": ["S1"], "searches": []}], extract=extract))
    assert start(settings, loop_web, model).status == "waiting"

    shown = run_cli("hearth", "research", "--plan", "r1")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == "run r1 (waiting): plan revision 1, by model"
    assert lines[1:3] == ["1. How does the 3.13 collector collect cycles?", "   search: python 3.13 gc incremental"]
    assert "hearth approve " in shown.stdout

    edited = {
        "sub_questions": [{"question": "Is the 3.13 collector incremental?", "queries": ["python 3.13 gc incremental"]}]
    }
    (tmp_path / "plan.json").write_text(json.dumps(edited))
    done = run_cli("hearth", "research", "--plan", "r1", "--edit", str(tmp_path / "plan.json"), "--note", "narrower")
    assert done.returncode == 0, done.stderr
    assert "plan is now revision 2, by cli:" in done.stdout
    [_, second] = rows(settings, research.plans)
    assert json.loads(second["plan"]) == edited and second["note"] == "narrower" and second["by"].startswith("cli:")
    (tmp_path / "bad.json").write_text('{"sub_questions": [{"question": "q"}]}')
    bad = run_cli("hearth", "research", "--plan", "r1", "--edit", str(tmp_path / "bad.json"))
    assert bad.returncode == 2 and "the plan is not valid: sub_questions.0.queries: field required" in bad.stderr

    approval = json.loads(run_cli("hearth", "research", "--plan", "r1", "--json").stdout)["approval"]
    assert run_cli("hearth", "approve", approval["id"]).returncode == 0
    assert go_on(settings, loop_web, model).status == "done"
    printed = run_cli("hearth", "research", "--report", "r1")
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.startswith("# Research: What changed in the garbage collector of Python 3.13?\n")
    assert "## 1. Is the 3.13 collector incremental?" in printed.stdout
    assert json.loads(run_cli("hearth", "research", "--report", "r1", "--json").stdout)["sources"][0]["id"] == "S1"


def test_a_plan_no_longer_waiting_cannot_be_edited(
    state_dir: Path, settings: Settings, loop_web: LoopWeb, tmp_path: Path
) -> None:
    assert approved_run(settings, loop_web, PhaseModel(Script())).status == "done"
    (tmp_path / "plan.json").write_text(json.dumps({"sub_questions": [{"question": "q", "queries": ["q"]}]}))
    done = run_cli("hearth", "research", "--plan", "r1", "--edit", str(tmp_path / "plan.json"))
    assert done.returncode == 2 and "plan is not waiting for approval" in done.stderr
