"""A role's home: its runs work there, behind the same walls, one at a time; what is missing is
made from templates (the operator's first), never over what is there."""

from __future__ import annotations

import io
import subprocess
import threading
from pathlib import Path

import pytest

from hearth.errors import ConfigError, UsageError
from hearth.roles.home import home_of, prepare_home, read_markdown, read_record, stamp_review
from hearth.run.goal import GoalRequest
from hearth.run.runner import run_goal
from tests.fake_ollama import FakeOllama, Held, final_answer, tool_call
from tests.queue_support import wait_for
from tests.roles_support import make_role, rows, settings_for

ROLE = 'home = true\nmodel = "qwen2.5-coder"\n'


def test_a_roles_run_works_in_its_home_made_from_templates_with_checkpoints_around_it(tmp_path: Path) -> None:
    make_role(tmp_path / "config", "household", ROLE)
    script = [tool_call("write_file", {"path": "notes.md", "content": "bills: none due\n"}), final_answer("noted")]
    with FakeOllama(script) as fake:
        settings = settings_for(tmp_path, fake.url)
        run_id, outcome = run_goal(GoalRequest("note the bills", agent_name="household"), settings, out=io.StringIO())
    home = home_of(settings, "household")
    assert outcome.status == "done"
    assert (home / "notes.md").read_text() == "bills: none due\n"
    record = read_record(home)
    assert record.front == {"role": "household", "last_strategic_review": None}
    assert (home / "agent" / "inbox.md").read_text().startswith("---\nrole: household\n")
    assert sorted(p.name for p in (home / "prompts").iterdir()) == ["heartbeat.md", "strategic-review.md"]
    [run] = rows(settings, "select workspace, status from runs")
    assert run["workspace"] == str(home.resolve())
    [made] = rows(settings, "select detail from steps where kind = 'home'")
    assert made["detail"].startswith("made agent/record.md, agent/inbox.md, prompts/heartbeat.md")
    points = rows(settings, "select phase, commit_sha from checkpoints where run_id = ? order by id", run_id)
    assert [p["phase"] for p in points] == ["before", "after"]
    assert "Hearth-Outcome: done" in _commit_message(settings.checkpoints_dir, points[1]["commit_sha"])


def _commit_message(history: Path, sha: str) -> str:
    for git_dir in {p.parent for p in history.rglob("HEAD")}:
        shown = subprocess.run(
            ["git", "--git-dir", str(git_dir), "log", "-1", "--format=%B", sha], capture_output=True, text=True
        )
        if shown.returncode == 0:
            return shown.stdout
    raise AssertionError(f"no checkpoint history under {history} holds {sha}")


def test_a_second_run_of_a_role_waits_for_the_first_and_is_not_refused(tmp_path: Path) -> None:
    make_role(tmp_path / "config", "household", ROLE)
    release = threading.Event()
    script = [Held(final_answer("first done"), 1, release), final_answer("second done")]
    ended: dict[str, str] = {}
    with FakeOllama(script) as fake:
        settings = settings_for(tmp_path, fake.url)

        def run(name: str) -> None:
            ended[name] = run_goal(GoalRequest(name, agent_name="household"), settings, out=io.StringIO())[1].status

        first = threading.Thread(target=run, args=("first",))
        first.start()
        wait_for(lambda: len(fake.requests) == 1, what="the first run's model call")
        second = threading.Thread(target=run, args=("second",))
        second.start()
        waited = wait_for(
            lambda: rows(settings, "select run_id, detail from steps where kind = 'role'"), what="the wait"
        )
        assert len(fake.requests) == 1  # the second run has not reached its model while the first works
        release.set()
        first.join(60)
        second.join(60)
    assert ended == {"first": "done", "second": "done"}
    by_goal = {r["goal"]: r["id"] for r in rows(settings, "select id, goal from runs")}
    assert [w["run_id"] for w in waited] == [by_goal["second"]]
    assert f"waits for role household's run {by_goal['first']} to end" in waited[0]["detail"]
    assert [r["messages"][-1]["content"] for r in fake.requests] == ["first", "second"]


def test_the_operators_template_is_used_and_a_file_there_is_never_overwritten(tmp_path: Path) -> None:
    directory = make_role(tmp_path / "config", "household", ROLE)
    (directory / "templates").mkdir()
    (directory / "templates" / "inbox.md").write_text("# {role}'s own inbox\n")
    settings = settings_for(tmp_path)
    home = home_of(settings, "household")
    (home / "agent").mkdir(parents=True)
    (home / "agent" / "record.md").write_text("---\nrole: kept\n---\nmine\n")
    _, made = prepare_home(settings, "household")
    assert made == ["agent/inbox.md", "prompts/heartbeat.md", "prompts/strategic-review.md"]
    assert (home / "agent" / "inbox.md").read_text() == "# household's own inbox\n"
    assert (home / "agent" / "record.md").read_text() == "---\nrole: kept\n---\nmine\n"


def test_a_symlinked_home_is_refused_and_the_run_recorded_rejected(tmp_path: Path) -> None:
    make_role(tmp_path / "config", "household", ROLE)
    settings = settings_for(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    home_of(settings, "household").parent.mkdir(parents=True)
    home_of(settings, "household").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UsageError, match="is a symlink; a role's home is made only of real directories"):
        run_goal(GoalRequest("g", agent_name="household"), settings, out=io.StringIO())
    [run] = rows(settings, "select status, error from runs")
    assert run["status"] == "rejected" and "symlink" in run["error"]
    assert list((tmp_path / "elsewhere").iterdir()) == []


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("no frontmatter\n", "has no frontmatter"),
        ("---\nrole: [unclosed\n---\n", "not valid YAML at line"),
        ("---\n- a list\n---\n", "must be keys and values"),
        ("---\nlast_strategic_review: soon\n---\n", "last_strategic_review must be a time"),
    ],
)
def test_a_broken_record_is_one_line_naming_the_file(tmp_path: Path, text: str, problem: str) -> None:
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "record.md").write_text(text)
    with pytest.raises(ConfigError) as caught:
        read_record(tmp_path)
    assert problem in str(caught.value) and str(tmp_path / "agent" / "record.md") in str(caught.value)
    assert "\n" not in str(caught.value)


def test_stamping_a_review_changes_only_that_line(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    (tmp_path / "agent").mkdir()
    path = tmp_path / "agent" / "record.md"
    path.write_text("---\nrole: household\nlast_strategic_review: 2026-01-01T00:00:00+00:00\nbills: 3\n---\nbody\n")
    stamp_review(tmp_path, datetime(2026, 12, 7, 21, 0, tzinfo=UTC))
    assert path.read_text() == (
        "---\nrole: household\nlast_strategic_review: 2026-12-07T21:00:00+00:00\nbills: 3\n---\nbody\n"
    )
    path.write_text("---\nrole: household\n---\nbody\n")
    stamp_review(tmp_path, datetime(2026, 12, 7, 21, 0, tzinfo=UTC))
    assert read_markdown(path, front_required=True).front["role"] == "household"
    assert "last_strategic_review: 2026-12-07T21:00:00+00:00\nrole: household" in path.read_text()
