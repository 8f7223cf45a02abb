"""A suite's file: a case written by `add_case` reads back as it was, and a file that does not load
is refused before anything is written to it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from hearth.errors import ConfigError
from hearth.eval.fixture import fixture_problem
from hearth.eval.suite import Case, Checks, add_case, case_from_spec, case_spec, load_suite
from hearth.settings import Settings


def test_a_case_added_to_a_suite_reads_back_as_it_was_written(tmp_path: Path) -> None:
    case = Case(
        "x",
        'a goal with "quotes", a \\ backslash\nand a second line',
        mode="plan",
        from_run="20261201T101500-ab12cd",
        checks=Checks(files=("a.txt",), match=(("a.txt", r"^h\d"),), command="test -f a.txt", judge="ok?"),
    )
    path = add_case(tmp_path, "chores", case)
    add_case(tmp_path, "chores", replace(case, name="y"))
    [first, second] = load_suite(tmp_path, "chores").cases
    assert first == replace(case, line=first.line) and second.name == "y"
    assert path.read_text().count("[[case]]") == 2
    assert case_from_spec(case_spec(first)) == first  # as an eval result keeps it


def test_a_suite_that_does_not_load_is_left_untouched_by_add(tmp_path: Path) -> None:
    (tmp_path / "evals").mkdir()
    broken = tmp_path / "evals" / "chores.toml"
    broken.write_text('[[case]]\nname = "x"\n')  # no goal
    with pytest.raises(ConfigError, match=r"chores.toml:1: case 'x': goal must say what the agent should do"):
        add_case(tmp_path, "chores", Case("y", "g"))
    assert broken.read_text() == '[[case]]\nname = "x"\n'
    with pytest.raises(ConfigError, match="a case named 'x' is there already"):
        broken.write_text('[[case]]\nname = "x"\ngoal = "g"\n')
        add_case(tmp_path, "chores", Case("x", "g"))


def test_a_fixture_is_a_directory_under_the_evals_directory_with_no_link_out(tmp_path: Path) -> None:
    evals = tmp_path / "evals"
    (evals / "fixtures" / "ok" / "sub").mkdir(parents=True)
    (evals / "fixtures" / "ok" / "sub" / "a.txt").write_text("a")
    (evals / "fixtures" / "ok" / "inner").symlink_to("sub/a.txt")  # a link that stays inside is kept
    outside = tmp_path / "secrets"
    outside.mkdir()
    (evals / "fixtures" / "away").symlink_to(outside)
    (evals / "fixtures" / "leaky").mkdir()
    (evals / "fixtures" / "leaky" / "keys").symlink_to(outside)
    assert fixture_problem(evals / "fixtures" / "ok", evals) is None
    assert "is not under the evals directory" in (fixture_problem(outside, evals) or "")
    assert "is not under the evals directory" in (fixture_problem(evals / "fixtures" / "away", evals) or "")
    assert "holds a link leading out of it (keys)" in (fixture_problem(evals / "fixtures" / "leaky", evals) or "")
    (evals / "s.toml").write_text('[[case]]\nname = "x"\ngoal = "g"\nworkspace = "fixtures/away"\n')
    with pytest.raises(ConfigError, match=r"s.toml:1: case 'x': the case's workspace .*away is not under the evals"):
        load_suite(tmp_path, "s")


def test_a_fixture_overlapping_hearths_state_or_credentials_is_refused(tmp_path: Path) -> None:
    """The seed's check with the settings: nothing of the state or the credentials is ever copied in."""
    evals = tmp_path / "config" / "evals"
    (evals / "fixtures" / "notes").mkdir(parents=True)
    base = Settings.from_env(
        {"HEARTH_STATE_DIR": str(tmp_path / "state"), "HEARTH_CONFIG_DIR": str(tmp_path / "config")}
    )
    state_in_evals = replace(base, state_dir=evals / "fixtures" / "notes" / "state")
    creds_in_evals = replace(base, credentials_dir=evals / "fixtures")
    fine = base
    for settings in (state_in_evals, creds_in_evals):
        problem = fixture_problem(evals / "fixtures" / "notes", evals, settings) or ""
        assert "overlaps hearth's state or credentials; nothing of them is copied into a run" in problem
    assert fixture_problem(evals / "fixtures" / "notes", evals, fine) is None
    kept_in_state = replace(base, state_dir=tmp_path)  # the operator's evals, kept in the state directory
    assert fixture_problem(evals / "fixtures" / "notes", evals, kept_in_state) is None
