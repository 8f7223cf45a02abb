"""`hearth doctor`'s check of each role's contract: one line per problem, naming the file."""

from __future__ import annotations

from pathlib import Path

from hearth.doctor.roles import check_roles
from hearth.roles.home import home_of, prepare_home
from hearth.run.profiles import load_profile
from tests.roles_support import make_role, settings_for


def test_a_sound_role_is_ok_and_one_without_a_home_yet_is_told_it_is_made_at_its_first_run(tmp_path: Path) -> None:
    make_role(tmp_path / "config", "household", 'home = true\nheartbeat = "hourly"\n')
    make_role(tmp_path / "config", "garden")
    make_role(tmp_path / "config", "scout", 'model = "m"\n')  # not a role: not checked
    settings = settings_for(tmp_path)
    prepare_home(settings, "household")
    profiles = [load_profile(settings.config_dir, n) for n in ("household", "garden", "scout")]
    found = [(f.status, f.message) for f in check_roles(settings, profiles)]
    assert found == [
        ("ok", f"role household: home {home_of(settings, 'household')}, record and inbox read; heartbeat hourly"),
        ("info", f"role garden: no home yet; its first run makes {home_of(settings, 'garden')} from templates"),
    ]


def test_a_broken_record_and_inbox_are_errors_naming_each_file(tmp_path: Path) -> None:
    make_role(tmp_path / "config", "household")
    settings = settings_for(tmp_path)
    home, _ = prepare_home(settings, "household")
    (home / "agent" / "record.md").write_text("---\nlast_strategic_review: someday\n---\n")
    (home / "agent" / "inbox.md").write_bytes(b"---\nx: [\n---\n")
    found = check_roles(settings, [load_profile(settings.config_dir, "household")])
    assert [f.status for f in found] == ["error", "error"]
    assert "record.md: last_strategic_review must be a time" in found[0].message
    assert "inbox.md: its frontmatter is not valid YAML" in found[1].message
    assert all("\n" not in f.message for f in found)


def test_a_home_that_is_a_file_is_an_error(tmp_path: Path) -> None:
    make_role(tmp_path / "config", "household")
    settings = settings_for(tmp_path)
    home_of(settings, "household").parent.mkdir(parents=True)
    home_of(settings, "household").write_text("not a directory")
    [finding] = check_roles(settings, [load_profile(settings.config_dir, "household")])
    assert finding.status == "error" and "is not a real directory" in finding.message


def test_entity_records_missing_fields_files_or_with_a_borrowed_id_are_errors(tmp_path: Path) -> None:
    from hearth.doctor.entities import check_entities
    from tests.hearth.roles.test_entities import DEFS

    make_role(tmp_path / "config", "household")
    (tmp_path / "config" / "entity-defs").mkdir()
    (tmp_path / "config" / "entity-defs" / "entities.md").write_text(DEFS)
    settings = settings_for(tmp_path)
    bills = home_of(settings, "household") / "entities" / "bills"
    for name, front in (("2026-001-gas", "id: 2026-001-gas\npayee: Gas"), ("2026-002-gas", "id: 2026-001-gas\n")):
        (bills / name).mkdir(parents=True)
        (bills / name / "record.md").write_text(f"---\n{front}\n---\n")
    (bills / "2026-001-gas" / "notes.md").write_text("")
    found = [f.message for f in check_entities(settings, [load_profile(settings.config_dir, "household")])]
    record = bills / "2026-002-gas" / "record.md"
    assert found == [
        f"{bills / '2026-001-gas' / 'record.md'}: the required field 'amount' is missing",
        f"{record}: its id is '2026-001-gas', not its directory's",
        f"{record}: duplicate id '2026-001-gas', also {bills / '2026-001-gas'}",
        f"{record}: the required field 'payee' is missing",
        f"{record}: the required field 'amount' is missing",
        f"{bills / '2026-002-gas'}: the declared file notes.md is missing",
    ]


def test_a_mistake_in_the_entity_types_is_one_error_naming_the_line(tmp_path: Path) -> None:
    from hearth.doctor.entities import check_entities

    (tmp_path / "config" / "entity-defs").mkdir(parents=True)
    (tmp_path / "config" / "entity-defs" / "entities.md").write_text("## bill\n```yaml\nlabel: Bill\n```\n")
    [finding] = check_entities(settings_for(tmp_path), [])
    assert finding.status == "error" and finding.message.endswith("entities.md:3: bill.directory: required, a text")
