"""A suite's file: a case written by `add_case` reads back as it was, and a file that does not load
is refused before anything is written to it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from hearth.errors import ConfigError
from hearth.eval.suite import Case, Checks, add_case, case_from_spec, case_spec, load_suite


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
