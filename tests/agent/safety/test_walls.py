"""The walls around a command, each alone, under real bwrap and Landlock, as root and as a user.

"root" is this test process itself when it is root; "user" is the same probe started as uid
65534 through setpriv (or this process, when it is an ordinary user already). Every probe is a
real command in a real sandbox; nothing is mocked.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.safety import cgroups, seccomp
from tests.conftest import require
from tests.walls_support import ROOT, WHO, as_who, checkout, give_to_user, link_tree, readable_copy, sandboxed

SECRET = "walls-secret-canary"


@pytest.fixture(params=WHO)
def who(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def state(who: str) -> Iterator[Path]:
    """hearth's state as in production: this run's workspace, another run's, the audit, a credential."""
    base = Path(tempfile.mkdtemp(prefix="hearth-walls-", dir="/var/tmp"))  # not under bwrap's private /tmp
    state = base / "state"
    (state / "agents" / "this").mkdir(parents=True)
    (state / "agents" / "other").mkdir()
    (state / "agents" / "other" / "notes.txt").write_text(SECRET)
    (state / "audit.db").write_text(SECRET)
    (state / "credentials.json").write_text(SECRET)
    os.chmod(state / "credentials.json", 0o644)  # readable by anyone: only the sandbox stands in the way
    give_to_user(who, base)
    yield state
    shutil.rmtree(base)


# --- the allow-list filesystem ---------------------------------------------------------------------


def test_a_command_sees_none_of_the_host_beyond_the_allow_list(who: str, kind: str, state: Path) -> None:
    ws = state / "agents" / "this"
    files = ["/etc/shadow", f"{state}/audit.db", f"{state}/credentials.json", f"{state}/agents/other/notes.txt"]
    dirs = ["/root", "/home", "/srv", "/var/lib", f"{state}/agents/other", "/etc/ssh", "/etc/ssl/private"]
    tries = [f"cat {p}" for p in files] + [f"ls -A {p}" for p in dirs]
    script = "; ".join(f"{t} >/dev/null 2>&1 && echo SEEN {t} || echo hidden" for t in tries)
    result = sandboxed(who, script, ws, kind=kind, hide=(str(state),))
    assert result["output"].split() == ["hidden"] * len(tries), result["output"]
    assert SECRET not in result["output"]


def test_the_programs_a_command_needs_are_there(who: str, kind: str, state: Path) -> None:
    ws = state / "agents" / "this"
    script = "python3 -c 'print(6*7)' && git --version >/dev/null && sh -c 'echo sh' && ls /etc/ssl/certs >/dev/null && echo certs"
    result = sandboxed(who, script, ws, kind=kind, hide=(str(state),))
    assert result["exit_code"] == 0 and result["output"].split() == ["42", "sh", "certs"], result["output"]


def test_an_exposed_path_is_visible_read_only(who: str, kind: str, state: Path) -> None:
    tool = state.parent / "opt-tool"
    tool.mkdir()
    (tool / "run.sh").write_text("echo the operators tool\n")
    give_to_user(who, tool)
    ws = state / "agents" / "this"
    script = f"sh {tool}/run.sh; echo x > {tool}/run.sh || echo unwritable"
    result = sandboxed(who, script, ws, kind=kind, hide=(str(state),), expose=(str(tool),))
    assert result["output"].splitlines()[0] == "the operators tool" and "unwritable" in result["output"]
    assert (tool / "run.sh").read_text() == "echo the operators tool\n"


def test_bwrap_shows_generated_accounts_and_runs_the_command_as_nobody(who: str, state: Path) -> None:
    require("bwrap")
    ws = state / "agents" / "this"
    script = "id -u; id -g; id -un; cat /etc/passwd | cut -d: -f1 | tr '\\n' ' '; echo; grep -E 'CapEff|NoNewPrivs' /proc/self/status"
    result = sandboxed(who, script, ws, kind="bwrap")
    lines = result["output"].splitlines()
    assert lines[:4] == ["65534", "65534", "nobody", "root nobody "], result["output"]
    assert lines[4].split() == ["CapEff:", "0000000000000000"] and lines[5].split() == ["NoNewPrivs:", "1"]


def test_a_command_runs_in_a_session_of_its_own(who: str, kind: str, state: Path) -> None:
    result = sandboxed(who, "echo $$; cut -d' ' -f6,7 /proc/$$/stat", state / "agents" / "this", kind=kind)
    pid, session, tty = result["output"].split()
    # a fresh session, led by the shell (or by bwrap's init, pid 1 of the sandbox), with no terminal
    assert session in (pid, "1") and tty == "0"


# --- system calls ----------------------------------------------------------------------------------

PROBE = """
import ctypes, json, os, platform, socket, sys
sys.path.insert(0, {root!r})
from agent.safety.seccomp import _ARCHES, REFUSED, UNSUPPORTED
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
nr = _ARCHES[platform.machine()][1]
def call(name, *args):
    ctypes.set_errno(0)
    return ctypes.get_errno() if libc.syscall(nr[name], *[ctypes.c_long(a) for a in args]) < 0 else 0
out = {{name: call(name, 0, 0, 0, 0, 0) for name in REFUSED + UNSUPPORTED}}
out["keyctl"] = call("keyctl", 0, -2, 1)  # the process keyring's id: works without the filter
out["ptrace"] = call("ptrace", 16, os.getppid(), 0, 0)  # PTRACE_ATTACH to the shell, a sibling process
out["unshare"] = call("unshare", 0x10000000)  # a new user namespace
out["clone_newuser"] = call("clone", 0x10000000 | 17, 0, 0, 0, 0)  # would fork; refused before it can
def sock(*args):
    try:
        socket.socket(*args).close()
        return 0
    except OSError as exc:
        return exc.errno
out["socket_tcp"] = sock(socket.AF_INET, socket.SOCK_STREAM)
out["socket_udp"] = sock(socket.AF_INET, socket.SOCK_DGRAM)
out["socket_unix"] = sock(socket.AF_UNIX)
out["socket_packet"] = sock(socket.AF_PACKET, socket.SOCK_RAW, 0)
out["netlink_audit"] = sock(socket.AF_NETLINK, socket.SOCK_RAW, 9)
out["netlink_uevent"] = sock(socket.AF_NETLINK, socket.SOCK_RAW, 15)
out["netlink_route"] = sock(socket.AF_NETLINK, socket.SOCK_RAW, 0)
out["socketpair"] = 0 if socket.socketpair() else 1
print(json.dumps(out))
"""


def test_each_refused_system_call_gets_eperm_or_enosys(who: str, kind: str, state: Path) -> None:
    if not seccomp.supported():
        pytest.skip("no seccomp filter for this architecture")
    ws = state / "agents" / "this"
    (ws / "probe.py").write_text(PROBE.format(root=str(checkout(who))))
    give_to_user(who, ws)
    result = sandboxed(who, "python3 probe.py", ws, kind=kind)
    seen = json.loads(result["output"])
    expected = dict.fromkeys(seccomp.REFUSED, errno.EPERM) | dict.fromkeys(seccomp.UNSUPPORTED, errno.ENOSYS)
    expected |= {"ptrace": errno.EPERM, "unshare": errno.EPERM, "clone_newuser": errno.EPERM}
    expected |= dict.fromkeys(("socket_tcp", "socket_udp", "socket_unix", "socket_packet"), errno.EACCES)
    expected |= {"netlink_audit": errno.EACCES, "netlink_uevent": errno.EACCES, "netlink_route": 0, "socketpair": 0}
    assert seen == expected


@pytest.mark.parametrize("who", ["root"])
def test_without_the_filter_the_keyring_call_really_works(who: str, state: Path) -> None:
    """The control: the probe's keyctl is a real call that succeeds when nothing refuses it."""
    ws = state / "agents" / "this"
    (ws / "probe.py").write_text(
        PROBE.format(root=str(checkout(who))).split("out = {")[0] + "print(call('keyctl', 0, -2, 1))\n"
    )
    result = sandboxed("root" if os.geteuid() == 0 else "user", "python3 probe.py", ws, kind="none")
    assert result["output"].strip() == "0", result["output"]


# --- the caps: processes, memory, CPU --------------------------------------------------------------

FORKS = """
import os, time
n = 0
for _ in range(400):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(600)
        os._exit(0)
    n += 1
print(n)
"""
BOMB = "a = []\nwhile True:\n    a.append(b'x' * (8 << 20))\n"


@pytest.fixture
def run_cgroup(who: str) -> Iterator[tuple[str, ...]]:
    """As root, the run's cgroup (what hearth makes for a run); as a user there is none outside a
    delegated unit, and the user namespace's uid makes RLIMIT_NPROC hold instead."""
    if who == "user":
        yield ()
        return
    made, why = cgroups.create(f"walls-{os.getpid()}", max_procs=32, memory_bytes=160 << 20)
    if made is None:
        pytest.skip(f"no cgroup can be made here ({why}): as root the process cap would not hold")
    yield made.dirs
    made.remove()


def test_a_fork_loop_stops_at_the_process_cap(who: str, kind: str, state: Path, run_cgroup: tuple[str, ...]) -> None:
    ws = state / "agents" / "this"
    (ws / "forks.py").write_text(FORKS)
    give_to_user(who, ws)
    result = sandboxed(who, "python3 forks.py", ws, kind=kind, max_procs=32, cgroup=run_cgroup)
    made = int(result["output"].split()[-1])
    assert 0 < made < 32, result["output"]
    if run_cgroup:
        assert result["forks_refused"] >= 1


@pytest.mark.parametrize("who", ["root"])
def test_a_memory_bomb_is_killed_at_the_runs_cap(who: str, kind: str, state: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("the run's memory cgroup needs root or a delegated unit")
    made, why = cgroups.create(f"bomb-{os.getpid()}", max_procs=32, memory_bytes=160 << 20)
    if made is None:
        pytest.skip(f"no cgroup can be made here: {why}")
    ws = state / "agents" / "this"
    (ws / "bomb.py").write_text(BOMB)
    try:
        result = sandboxed("root", "python3 bomb.py", ws, kind=kind, memory_bytes=160 << 20, cgroup=made.dirs)
    finally:
        made.remove()
    assert result["memory_killed"] and result["exit_code"] != 0, result


def test_without_a_cgroup_a_memory_bomb_stops_at_its_address_space_cap(who: str, kind: str, state: Path) -> None:
    ws = state / "agents" / "this"
    (ws / "bomb.py").write_text(BOMB)
    give_to_user(who, ws)
    result = sandboxed(who, "python3 bomb.py", ws, kind=kind, memory_bytes=160 << 20)
    assert result["exit_code"] != 0 and "MemoryError" in result["output"]


def test_cpu_time_is_capped_by_the_kernel(who: str, kind: str, state: Path) -> None:
    ws = state / "agents" / "this"
    result = sandboxed(who, "python3 -c 'while True: pass'; echo after", ws, kind=kind, cpu_seconds=1)
    assert result["output"].split() == ["Killed", "after"] and not result["timed_out"], result


def test_the_ordinary_user_runs_the_walls_from_a_checkout_it_cannot_enter(tmp_path: Path) -> None:
    """A clone inside a directory only root may enter (`mktemp -d`, mode 0700): the [user]
    variants run from a copy made for that user, not from a path it cannot reach."""
    if os.geteuid() != 0:
        pytest.skip("only root can make a checkout the ordinary user cannot enter, and run as that user")
    hidden = tmp_path / "private"
    hidden.mkdir(mode=0o700)
    for name in ("agent", "hearth", "tests"):
        link_tree(ROOT / name, hidden / "c" / name)
    venv = Path(sys.executable).parent.parent
    link_tree(venv, hidden / "venv")
    interpreter = str(hidden / "venv" / Path(sys.executable).relative_to(venv))
    probe = [*as_who("user"), interpreter, "-c", "import hearth.cli.loop"]
    seen = subprocess.run(probe, cwd="/", env={**os.environ, "PYTHONPATH": str(hidden / "c")}, capture_output=True)
    assert seen.returncode != 0  # the user cannot reach the hidden checkout itself: why the copy exists
    tree, python = readable_copy(hidden / "c", interpreter)
    assert not tree.is_relative_to(hidden)
    ws = Path(tempfile.mkdtemp(prefix="hearth-walls-", dir="/var/tmp"))
    try:
        give_to_user("user", ws)
        plan = {"command": "id -u", "workspace": str(ws), "policy": {"kind": "none", "expose": [str(tree)]}}
        done = subprocess.run(
            [*as_who("user"), python, "-m", "tests.walls_support", json.dumps(plan)],
            cwd=tree,
            env={**os.environ, "PYTHONPATH": str(tree)},
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        shutil.rmtree(ws)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"].strip() == "65534"
