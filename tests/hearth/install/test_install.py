"""`hearth install --systemd` and `hearth uninstall` on a temporary root: what they write, twice, and undo.

The root is a directory with an /etc/passwd and /etc/group of its own, so nothing on this host changes
(no useradd, no systemctl: those run only when the root is `/`). tests/system/ runs the same command
on a booted Debian as root.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_cli


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/sh\n")
    (tmp_path / "etc/group").write_text("root:x:0:\nalice:x:1000:\n")
    return tmp_path


def install(root: Path, *more: str) -> str:
    done = run_cli("hearth", "install", "--systemd", "--root", str(root), *more)
    assert done.returncode == 0, done.stderr
    return done.stdout


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_install_makes_the_user_groups_state_directory_and_units(root: Path) -> None:
    install(root)
    passwd = (root / "etc/passwd").read_text()
    assert "hearth:x:999:999:hearth agent appliance:/var/lib/hearth:/usr/sbin/nologin" in passwd
    assert "hearth-submit:x:998:hearth" in (root / "etc/group").read_text()
    state = root / "var/lib/hearth"
    assert mode(state) == 0o2711 and mode(state / "queue") == 0o2770 and mode(state / "agents") == 0o700
    assert mode(state / "audit.db") == 0o640 and mode(root / "etc/hearth/credentials") == 0o700
    units = sorted(p.name for p in (root / "etc/systemd/system").glob("hearth*"))
    assert units == [
        "hearth-agent@.service",
        "hearth-self-test.service",
        "hearth-self-test.timer",
        "hearth-spawn.path",
        "hearth-spawn.service",
        "hearth-spawn.timer",
    ]
    link = root / "etc/systemd/system/multi-user.target.wants/hearth-spawn.path"
    assert os.readlink(link) == "/etc/systemd/system/hearth-spawn.path"
    assert "hearth-agent@" in (root / "etc/polkit-1/rules.d/50-hearth.rules").read_text()


@pytest.mark.skipif(os.geteuid() != 0, reason="owners are set only as root")
def test_the_state_directory_belongs_to_hearth_and_the_submitters(root: Path) -> None:
    install(root)
    info = (root / "var/lib/hearth/queue").stat()
    assert (info.st_uid, info.st_gid) == (999, 998)


def test_a_second_install_changes_nothing(root: Path) -> None:
    install(root)
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert "nothing to change" in install(root)
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before


def test_dry_run_prints_the_unit_text_and_writes_nothing(root: Path) -> None:
    said = install(root, "--dry-run")
    assert "would make file /etc/systemd/system/hearth-agent@.service" in said
    assert "    ProtectSystem=strict" in said and "    ExecStart=" in said
    assert not (root / "var").exists() and not (root / "etc/systemd").exists()
    assert "hearth" not in (root / "etc/passwd").read_text()


def test_install_toml_and_systemd_missions_shape_the_units(root: Path) -> None:
    (root / "etc/hearth/missions").mkdir(parents=True)
    (root / "etc/hearth/install.toml").write_text('web = true\nollama_url = "http://127.0.0.1:11500"\n')
    (root / "etc/hearth/missions/tick.toml").write_text('schedule = "minutely"\ntimer = "systemd"\ngoal = "g"\n')
    (root / "etc/hearth/missions/manual.toml").write_text(
        'schedule = "hourly"\ngoal = "g"\n'
    )  # `hearth watch` fires it
    install(root)
    units = root / "etc/systemd/system"
    assert "OnCalendar=minutely" in (units / "hearth-schedule-tick.timer").read_text()
    assert not (units / "hearth-schedule-manual.timer").exists()
    web = (units / "hearth-web.service").read_text()
    assert "LoadCredential=operator-token:/etc/hearth/credentials/operator-token" in web
    token = root / "etc/hearth/credentials/operator-token"
    assert mode(token) == 0o600 and len(token.read_text().strip()) >= 32
    assert '"OLLAMA_HOST=http://127.0.0.1:11500"' in (units / "hearth-agent@.service").read_text()
    script = (root / "usr/local/lib/hearth/hearth-schedule-tick").read_text()
    assert script.endswith("missions fire tick\n") and mode(root / "usr/local/lib/hearth/hearth-schedule-tick") == 0o755


def test_the_token_is_kept_across_installs(root: Path) -> None:
    (root / "etc/hearth").mkdir(parents=True)
    (root / "etc/hearth/install.toml").write_text("web = true\n")
    install(root)
    token = (root / "etc/hearth/credentials/operator-token").read_text()
    install(root)
    assert (root / "etc/hearth/credentials/operator-token").read_text() == token


def test_an_unknown_setting_is_one_line_naming_it(root: Path) -> None:
    (root / "etc/hearth").mkdir(parents=True)
    (root / "etc/hearth/install.toml").write_text("webb = true\n")
    done = run_cli("hearth", "install", "--systemd", "--root", str(root))
    assert done.returncode == 1 and "unknown setting 'webb'" in done.stderr


def test_uninstall_removes_the_units_and_rules_and_keeps_the_state(root: Path) -> None:
    install(root)
    done = run_cli("hearth", "uninstall", "--root", str(root))
    assert done.returncode == 0, done.stderr
    assert not list((root / "etc/systemd/system").rglob("hearth*"))
    assert not (root / "etc/polkit-1/rules.d/50-hearth.rules").exists()
    assert (root / "var/lib/hearth/queue").is_dir() and "hearth:" in (root / "etc/passwd").read_text()


def test_install_without_systemd_says_which_kind(root: Path) -> None:
    done = run_cli("hearth", "install", "--root", str(root))
    assert done.returncode == 2 and "hearth install --systemd" in done.stderr


def test_json_lists_the_changes_and_then_none(root: Path) -> None:
    first = json.loads(install(root, "--json"))
    assert (
        first["dry_run"] is False
        and "user hearth (groups hearth, hearth-submit; home /var/lib/hearth)" in first["changes"]
    )
    assert json.loads(install(root, "--json"))["changes"] == []


POLKIT_PROBE = """
const rules = [];
const polkit = {Result: {YES: "yes"}, addRule: (f) => rules.push(f)};
%s
const cases = JSON.parse(process.argv[1]);
console.log(JSON.stringify(cases.map(([user, verb, unit]) => rules[0](
  {id: "org.freedesktop.systemd1.manage-units", lookup: (k) => ({verb, unit})[k]}, {user}) || "no")));
"""


@pytest.mark.skipif(not shutil.which("node"), reason="node runs the rendered polkit rule (JavaScript)")
@pytest.mark.parametrize("web", [False, True])
def test_the_polkit_rule_lets_only_hearth_start_and_stop_only_agent_units(root: Path, web: bool) -> None:
    if web:
        (root / "etc/hearth").mkdir(parents=True, exist_ok=True)
        (root / "etc/hearth/install.toml").write_text("web = true\n")
    install(root)
    rule = (root / "etc/polkit-1/rules.d/50-hearth.rules").read_text()
    cases = [
        ("hearth", "start", "hearth-agent@r1.service"),
        ("hearth", "stop", "hearth-agent@r1.service"),
        ("hearth", "stop", "sshd.service"),
        ("hearth", "start", "sshd.service"),
        ("alice", "start", "hearth-agent@r1.service"),
        ("alice", "stop", "hearth-agent@r1.service"),
    ]
    done = subprocess.run(
        ["node", "-e", POLKIT_PROBE % rule, json.dumps(cases)], capture_output=True, text=True, timeout=60, check=True
    )
    answers = dict(zip([f"{u} {v} {n}" for u, v, n in cases], json.loads(done.stdout), strict=True))
    allowed = {k for k, v in answers.items() if v == "yes"}
    expected = {"hearth start hearth-agent@r1.service"} | ({"hearth stop hearth-agent@r1.service"} if web else set())
    assert allowed == expected


def _users_and_channels(root: Path, users: str) -> Path:
    where = root / "etc/hearth/credentials"
    where.mkdir(parents=True)
    (where / "ada-token").write_text("ada-sign-in-token-from-a-file\n")
    (where / "telegram-token").write_text("123:bot\n")
    (where / "github").write_text("a run's secret\n")
    (root / "etc/hearth/channels.toml").write_text('[telegram]\napi_url = "http://127.0.0.1:8081"\n')
    (root / "etc/hearth/install.toml").write_text(users)
    return where


ADA = '[users.ada]\nrole = "operator"\ntoken_files = ["/etc/hearth/credentials/ada-token"]\ntelegram = [42]\n'


def test_install_toml_users_and_channels_toml_give_their_units_and_secrets_only_as_credentials(root: Path) -> None:
    _users_and_channels(root, ADA)
    install(root)
    units = root / "etc/systemd/system"
    users = (units / "hearth-users.service").read_text()
    assert "ExecStart=" in users and "users apply /etc/hearth/users.json" in users
    assert "LoadCredential=user-ada-token-1:/etc/hearth/credentials/ada-token" in users
    declaration = json.loads((root / "etc/hearth/users.json").read_text())
    assert declaration == {
        "users": {"ada": {"role": "operator", "token_files": ["user-ada-token-1"], "telegram": [42]}}
    }
    channels = (units / "hearth-channels.service").read_text()
    assert "LoadCredential=telegram-token:/etc/hearth/credentials/telegram-token" in channels
    assert (units / "multi-user.target.wants/hearth-channels.service").is_symlink()
    agent = (units / "hearth-agent@.service").read_text()
    assert "LoadCredential=github:/etc/hearth/credentials/github" in agent
    assert "ada-token" not in agent and "telegram-token" not in agent, "a run gets no door's secret"
    assert 'action.lookup("verb") == "stop"' in (root / "etc/polkit-1/rules.d/50-hearth.rules").read_text()


def test_a_bad_users_table_stops_the_install_with_one_line_and_writes_nothing(root: Path) -> None:
    _users_and_channels(root, ADA.replace("ada-token", "nobody-token"))
    done = run_cli("hearth", "install", "--systemd", "--root", str(root))
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert "install.toml: [users.ada] token_files: cannot read" in done.stderr and "nobody-token" in done.stderr
    assert not (root / "etc/systemd").exists() and not (root / "etc/hearth/users.json").exists()
