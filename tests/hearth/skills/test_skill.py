"""SKILL.md read as other agent systems write it: extra keys kept, a colon inside a plain value
tolerated, every refusal one line naming the file and the key; a learned skill's default name."""

from __future__ import annotations

from pathlib import Path

import pytest

from hearth.eval.cases import slug_of
from hearth.skills.skill import SkillInvalid, read_skill


def _write(tmp_path: Path, text: str, name: str = "tidy-notes") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "SKILL.md").write_text(text)
    return folder


def test_a_skill_written_for_another_system_loads_with_its_extra_keys(tmp_path: Path) -> None:
    folder = _write(
        tmp_path,
        "---\nname: tidy-notes\ndescription: Use when: the notes are a mess\nlicense: MIT\n"
        "allowed-tools: Read Write\n---\n# Tidy\nSort them.\n",
    )
    skill = read_skill(folder, "box")
    assert (skill.name, skill.description, skill.body) == (
        "tidy-notes",
        "Use when: the notes are a mess",
        "# Tidy\nSort them.",
    )
    assert skill.extra == {"license": "MIT", "allowed-tools": "Read Write"} and skill.suite == ""


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("no frontmatter\n", "no frontmatter"),
        ("---\nname: tidy-notes\n---\nbody\n", "description must say"),
        ("---\nname: other\ndescription: d\n---\n", "name 'other' must be the directory's name"),
        ("---\nname: tidy-notes\ndescription: d\neval_min: 2\n---\n", "eval_min must be a pass rate"),
        ("---\nname: tidy-notes\ndescription: d\neval: ../x\n---\n", "eval must name a suite"),
    ],
)
def test_a_broken_skill_md_is_one_line_naming_the_file_and_key(tmp_path: Path, text: str, line: str) -> None:
    folder = _write(tmp_path, text)
    with pytest.raises(SkillInvalid) as refused:
        read_skill(folder, "box")
    assert str(refused.value).startswith(f"{folder / 'SKILL.md'}: ") and line in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_change_to_a_resource_changes_the_digest(tmp_path: Path) -> None:
    folder = _write(tmp_path, "---\nname: tidy-notes\ndescription: d\n---\nbody\n")
    (folder / "ref.md").write_text("one")
    before = read_skill(folder, "box")
    (folder / "ref.md").write_text("two")
    assert before.resources == ("ref.md",) and read_skill(folder, "box").digest != before.digest


def test_a_learned_skill_or_a_case_is_named_from_the_runs_first_words() -> None:
    assert slug_of({"id": "x", "goal": "Write hello.txt, saying hi!"}, 64) == "write-hello-txt-saying"
    assert slug_of({"id": "20261207T101500-ab12cd", "goal": "!!!"}, 40) == "run-ab12cd"
