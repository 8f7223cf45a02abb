"""The booted machine for tests/system: one container for the session, set up as docs/debian.md says.

scripts/test-system.sh (`make test-system`) builds the cached root and hearth's wheel and names them in
HEARTH_SYSTEM_ROOT and HEARTH_SYSTEM_WHEEL; without them every test here is skipped with that reason.
The session copies the root (HEARTH_SYSTEM_RUN, removed at the end), boots it, installs the wheel,
starts the fake model server on the container's loopback and runs `hearth install --systemd`.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fake_telegram import TOKEN
from tests.system.container import Container, copy_root
from tests.system.support import start_fake_bot, start_fake_model

ROOT = Path(__file__).resolve().parents[2]
SOURCE = os.environ.get("HEARTH_SYSTEM_ROOT")
WHEEL = os.environ.get("HEARTH_SYSTEM_WHEEL")
# a mission every minute: the timer test waits for it to fire (a condition, bounded by two minutes)
MISSION = 'schedule = "minutely"\ntimer = "systemd"\ngoal = "write hello.txt (mission)"\nmode = "auto"\n'
# a declared user (docs/debian.md): ada, who may launch in the default profile and is Telegram user
# 4242 (tests/system/fake_bot.py writes to hearth as her); her token is a credential file. One
# line, no [table]: a test appends top-level settings (sandbox = "bwrap") to this file
INSTALL = (
    "web = true\n"
    'users.ada = { role = "operator", memberships = { default = ["launch"] }, '
    'token_files = ["/etc/hearth/credentials/ada-token"], telegram = [4242] }\n'
)
# the Telegram channel against the fake Bot API in the container (tests/system/fake_bot.py)
CHANNELS = '[telegram]\napi_url = "http://127.0.0.1:8081"\npoll_s = 2\n'


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip this folder's tests without a booted root. The hook sees the whole session's items, so
    it marks only its own: the rest of the suite must never be skipped by this folder."""
    if SOURCE and WHEEL:
        return
    skip = pytest.mark.skip(reason="needs the booted root: run `make test-system` (as root)")
    here = Path(__file__).resolve().parent
    for item in items:
        if item.path.is_relative_to(here):
            item.add_marker(skip)


def _seed(root: Path) -> None:
    """What the test brings into the root before it boots: the wheel, the fake model, markers to probe."""
    test = root / "opt/hearth-test"
    (test / "tests").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "tests/fake_ollama.py", test / "tests/fake_ollama.py")
    (test / "tests/__init__.py").write_text("")
    shutil.copy(ROOT / "tests/system/fake_model.py", test / "fake_model.py")
    shutil.copy(ROOT / "tests/fake_telegram.py", test / "tests/fake_telegram.py")
    # the fake model reads a steer as the runs write it (agent/steer.py, which needs only the
    # standard library): the container's python3 runs it before hearth is installed
    (test / "agent").mkdir(exist_ok=True)
    for name in ("__init__.py", "steer.py"):
        shutil.copy(ROOT / "agent" / name, test / "agent" / name)
    shutil.copy(ROOT / "tests/system/fake_bot.py", test / "fake_bot.py")
    assert WHEEL is not None
    shutil.copy(WHEEL, test / Path(WHEEL).name)
    # what ProtectHome= must hide from every hearth unit
    (root / "root/secret-of-root").write_text("root's\n")
    (root / "etc/hearth/missions").mkdir(parents=True, exist_ok=True)
    (root / "etc/hearth/missions/tick.toml").write_text(MISSION)
    (root / "etc/hearth/install.toml").write_text(INSTALL)
    (root / "etc/hearth/channels.toml").write_text(CHANNELS)
    credentials = root / "etc/hearth/credentials"
    credentials.mkdir(mode=0o700, exist_ok=True)
    (credentials / "ada-token").write_text(secrets.token_urlsafe(32) + "\n")
    (credentials / "telegram-token").write_text(TOKEN + "\n")


def _install(machine: Container) -> str:
    """docs/debian.md's steps, in order: the wheel into /opt/hearth, its programs on PATH, the units."""
    wheel = f"/opt/hearth-test/{Path(str(WHEEL)).name}"
    machine.run(["/opt/hearth/bin/pip", "install", "-q", "--disable-pip-version-check", "--no-index", "--no-deps",
                 "--force-reinstall", wheel])  # fmt: skip
    machine.run(["ln", "-sf", "/opt/hearth/bin/hearth", "/opt/hearth/bin/hearth-loop", "/usr/local/bin/"])
    machine.run(["useradd", "--create-home", "alice"])
    done = machine.run(["hearth", "install", "--systemd"])
    machine.run(["usermod", "--append", "--groups", "hearth-submit", "alice"])
    return done.stdout


@pytest.fixture(scope="session")
def machine() -> Iterator[Container]:
    if os.environ.get("HEARTH_SYSTEM_PID"):  # a machine already booted and set up (scripts/system-dev.py)
        box = Container(
            Path(os.environ["HEARTH_SYSTEM_RUN"]) / "root", Path(os.environ["HEARTH_SYSTEM_RUN"]) / "nspawn.log"
        )
        box.pid = int(os.environ["HEARTH_SYSTEM_PID"])
        yield box
        return
    assert SOURCE is not None
    run = Path(os.environ.get("HEARTH_SYSTEM_RUN") or tempfile.mkdtemp(prefix="hearth-system-", dir="/var/tmp"))
    copy_root(Path(SOURCE), run / "root")
    _seed(run / "root")
    box = Container(run / "root", run / "nspawn.log")
    try:
        box.boot()
        start_fake_model(box)
        start_fake_bot(box)
        box.installed = _install(box)  # type: ignore[attr-defined]
        yield box
    finally:
        box.stop()
        shutil.rmtree(run, ignore_errors=True)
