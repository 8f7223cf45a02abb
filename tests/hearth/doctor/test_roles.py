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
