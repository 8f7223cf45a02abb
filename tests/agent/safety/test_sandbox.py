"""The OS sandbox alone: real processes under real bwrap and real Landlock, no tool-layer checks."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.safety.sandbox import CommandResult, SandboxPolicy, SandboxUnavailable, detect, run_sandboxed, scrubbed_env
from tests.conftest import require
from tests.walls_support import accepted, wait_until_gone

# The real interpreter, not the venv link, and its tree exposed read-only: it lives outside the
# system paths a command sees (a pyenv under /root here), which is what `expose` is for.
PY = os.path.realpath(sys.executable)
PY_TREE = (sys.base_prefix,)


@pytest.fixture
def host_tmp() -> Iterator[Path]:
    # not under /tmp: bwrap puts a private tmpfs there, which would hide pytest's tmp_path by accident
    # and make every "cannot see / cannot write" assertion pass for the wrong reason
    path = Path(tempfile.mkdtemp(prefix="hearth-sandbox-test-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path)


@pytest.fixture
def ws(host_tmp: Path) -> Path:
    path = host_tmp / "ws"
    path.mkdir()
    return path


def run(
    command: str, ws: Path, kind: str, *, timeout_s: float = 20, output_limit: int = 64_000, **policy: object
) -> CommandResult:
    policy.setdefault("expose", PY_TREE)
    return run_sandboxed(
        command,
        ws,
        policy=SandboxPolicy(kind=kind, **policy),
        timeout_s=timeout_s,
        output_limit=output_limit,  # type: ignore[arg-type]
    )


# --- filesystem ----------------------------------------------------------------------------------


def test_workspace_is_writable_and_is_cwd_and_home(ws: Path, kind: str) -> None:
    result = run('echo made > made.txt && pwd && echo "$HOME" && echo t > "$TMPDIR/t" && cat "$TMPDIR/t"', ws, kind)
    assert result.exit_code == 0, result.output
    assert result.output.split() == [str(ws), str(ws), "t"]
    assert (ws / "made.txt").read_text() == "made\n"
    assert result.sandbox == kind


def test_command_cannot_write_outside_the_workspace(host_tmp: Path, ws: Path, kind: str) -> None:
    outside = host_tmp / "outside"
    outside.mkdir()
    (outside / "keep").write_text("keep me")
    canary = f"/etc/hearth-canary-{secrets.token_hex(4)}"
    attempts = [
        f"echo x > /tmp/../{outside}/new",
        f"touch {canary}",
        f"echo x > {ws}/../escape",
        f": > {outside}/keep",
        f"{PY} -c 'import os; os.truncate(\"{outside}/keep\", 0)'",
        f"ln -s /etc {outside}/link",
        f"mkdir {outside}/dir",
    ]
    result = run("; ".join(f"({attempt}) 2>/dev/null || echo refused" for attempt in attempts), ws, kind)
    assert result.output.split() == ["refused"] * len(attempts)
    assert sorted(os.listdir(outside)) == ["keep"] and (outside / "keep").read_text() == "keep me"
    assert not os.path.lexists(canary) and not (host_tmp / "escape").exists()


def test_command_has_no_capabilities(ws: Path, kind: str) -> None:
    result = run("grep CapEff /proc/self/status", ws, kind)
    assert result.output.split() == ["CapEff:", "0000000000000000"]


def test_hidden_dir_is_invisible_under_bwrap(host_tmp: Path) -> None:
    require("bwrap")
    state = host_tmp / "state"
    (state / "queue").mkdir(parents=True)
    (state / "audit.db").write_text("AUDIT-SECRET")
    (state / "queue" / "other-run.json").write_text("QUEUE-SECRET")
    ws = state / "runs" / "r1" / "ws"
    ws.mkdir(parents=True)
    listing = run(f"ls -A {state} {state}/queue", ws, "bwrap", hide=(str(state),))
    assert listing.output.splitlines() == [
        f"ls: cannot access '{state}/queue': No such file or directory",
        f"{state}:",
        "runs",
    ]
    script = f"cat {state}/audit.db {state}/queue/other-run.json 2>/dev/null; echo x > {state}/audit.db; echo ok > done"
    result = run(script, ws, "bwrap", hide=(str(state),))
    assert "SECRET" not in result.output
    assert (ws / "done").read_text() == "ok\n"
    assert (state / "audit.db").read_text() == "AUDIT-SECRET"


def test_workspace_under_a_hidden_dir_stays_usable(host_tmp: Path, kind: str) -> None:
    state = host_tmp / "state"
    ws = state / "runs" / "r1" / "ws"
    ws.mkdir(parents=True)
    (state / "audit.db").write_text("AUDIT")
    result = run(f"echo ok > done && cat done && echo x > {state}/audit.db", ws, kind, hide=(str(state),))
    assert result.output.startswith("ok\n") and result.exit_code != 0
    assert (ws / "done").read_text() == "ok\n"
    assert (state / "audit.db").read_text() == "AUDIT"


def test_credentials_directory_is_hidden_under_bwrap(host_tmp: Path, ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require("bwrap")
    creds = host_tmp / "creds"
    creds.mkdir()
    (creds / "token").write_text("CRED-CANARY")
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(creds))
    result = run(f"ls -A {creds} 2>/dev/null; cat {creds}/token 2>/dev/null", ws, "bwrap")
    assert result.output == ""


def test_environment_carries_no_secret(ws: Path, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    canary = secrets.token_hex(8)
    for name in (
        "HEARTH_SECRET",
        "CREDENTIALS_DIRECTORY",
        "GITHUB_TOKEN",
        "OPENAI_API_KEY",
        "AWS_REGION",
        "DB_PASSWORD",
        "CLIENT_SECRET",
        "SSH_AUTH_SOCK",
    ):
        monkeypatch.setenv(name, f"/{canary}")
    result = run("env", ws, kind)
    assert result.exit_code == 0 and "TERM=dumb" in result.output
    assert canary not in result.output


def test_scrubbed_env_keeps_only_the_allowlist() -> None:
    base = {
        "PATH": "/bin",
        "LANG": "de_DE.UTF-8",
        "HEARTH_STATE": "/var/lib/hearth",
        "AWS_ACCESS_KEY_ID": "a",
        "MY_TOKEN": "t",
        "SOME_KEY": "k",
        "X_SECRET": "s",
        "PGPASSWORD": "p",
        "HOME": "/root",
    }
    assert scrubbed_env(base, home="/ws", tmpdir="/tmp") == {
        "PATH": "/bin",
        "LANG": "de_DE.UTF-8",
        "TERM": "dumb",
        "HOME": "/ws",
        "TMPDIR": "/tmp",
    }


# --- network -------------------------------------------------------------------------------------


def connect_script(server: socket.socket) -> str:
    port = server.getsockname()[1]
    return f"{PY} -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3)\""


def test_tcp_to_the_host_is_refused_without_network(ws: Path, kind: str, listener: socket.socket) -> None:
    result = run(connect_script(listener), ws, kind)
    assert result.exit_code != 0
    assert accepted(listener) == 0


# --- processes, time and output ------------------------------------------------------------------


def test_timeout_kills_the_command_and_its_background_children(ws: Path, kind: str) -> None:
    marker = f"3{secrets.randbelow(10**6):06d}"
    result = run(f"sleep {marker} & sleep {marker} & wait", ws, kind, timeout_s=0.5)
    assert result.timed_out and result.exit_code is None  # (had it waited for its children, it never returns)
    assert wait_until_gone(marker) == []


def test_background_child_does_not_outlive_the_command(ws: Path, kind: str) -> None:
    marker = f"3{secrets.randbelow(10**6):06d}"
    result = run(f"sleep {marker} & echo started", ws, kind, timeout_s=20)
    assert result.exit_code == 0 and not result.timed_out  # it did not wait 20 s for the background child
    assert wait_until_gone(marker) == []


def test_output_over_the_limit_is_truncated_and_says_so(ws: Path, kind: str) -> None:
    # 300 kB is several pipe buffers: the command would block forever if we stopped reading
    result = run("head -c 300000 /dev/zero | tr '\\0' a; echo done >&2", ws, kind, output_limit=1000)
    assert result.exit_code == 0 and result.truncated
    assert result.output.startswith("a" * 1000)
    assert "[output truncated: 300005 bytes, only the first 1000 kept]" in result.output


def test_exit_code_and_stderr_come_back(ws: Path, kind: str) -> None:
    result = run("echo to-stderr >&2; exit 3", ws, kind)
    assert (result.exit_code, result.output, result.truncated) == (3, "to-stderr\n", False)


def test_memory_limit_stops_a_big_allocation(ws: Path, kind: str) -> None:
    result = run(f"{PY} -c 'bytearray(4 << 30)'", ws, kind)
    assert result.exit_code != 0 and "MemoryError" in result.output


def test_kind_none_still_applies_rlimits(ws: Path) -> None:
    policy = {"file_size_bytes": 1 << 20, "memory_bytes": 512 << 20}
    script = f"grep -E '^Max (processes|core)' /proc/self/limits; head -c 3000000 /dev/zero > big; {PY} -c 'bytearray(1 << 30)'"
    result = run(script, ws, "none", **policy)
    assert result.sandbox == "none" and result.exit_code != 0
    assert result.output.split()[:10] == ["Max", "core", "file", "size", "0", "0", "bytes", "Max", "processes", "256"]
    assert "MemoryError" in result.output
    assert (ws / "big").stat().st_size <= 1 << 20


def test_auto_prefers_bwrap_and_unknown_kinds_are_refused() -> None:
    try:
        detect("bwrap")
    except SandboxUnavailable:
        assert detect("auto") == "landlock"
    else:
        assert detect("auto") == "bwrap"
    with pytest.raises(ValueError, match="unknown sandbox kind"):
        detect("docker")


def test_auto_falls_back_to_landlock_when_bwrap_is_missing(ws: Path) -> None:
    require("landlock")
    script = (
        "import sys\nfrom agent.safety.sandbox import SandboxPolicy, run_sandboxed\n"
        "result = run_sandboxed('echo hi > f && read x < f && echo $x', sys.argv[1], policy=SandboxPolicy(), timeout_s=10)\n"
        "print(result.sandbox, result.output.strip())\n"
    )
    # a real process whose PATH has no bwrap, so the probe genuinely fails (only shell builtins run)
    done = subprocess.run(
        [PY, "-c", script, str(ws)],
        cwd=Path(__file__).resolve().parents[3],
        env={"PATH": str(ws)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.stdout.split() == ["landlock", "hi"], done.stderr


# --- local sockets: the seccomp filter and the private /run ---------------------------------------


@pytest.fixture
def unix_listener(host_tmp: Path) -> Iterator[tuple[socket.socket, str]]:
    path = str(host_tmp / "service.sock")  # stands for /run/docker.sock, a database's socket ...
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(4)
    server.setblocking(False)
    yield server, path
    server.close()


def unix_connect(path: str) -> str:
    return f"{PY} -c \"import socket; socket.socket(socket.AF_UNIX).connect('{path}'); print('connected')\""


def test_a_host_unix_socket_is_unreachable_without_network(
    ws: Path, kind: str, unix_listener: tuple[socket.socket, str]
) -> None:
    server, path = unix_listener
    result = run(unix_connect(path), ws, kind)
    assert result.exit_code != 0 and "Permission denied" in result.output
    assert accepted(server) == 0


def test_udp_is_blocked_without_network(ws: Path, kind: str) -> None:
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.setblocking(False)
    port = receiver.getsockname()[1]
    run(
        f"{PY} -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', {port}))\"",
        ws,
        kind,
    )
    with pytest.raises(BlockingIOError):
        receiver.recvfrom(8)
    receiver.close()


def test_without_network_local_plumbing_still_works_and_io_uring_does_not(ws: Path, kind: str) -> None:
    script = (
        "import ctypes, socket\n"
        "a, b = socket.socketpair(); a.send(b'pair'); print(b.recv(4).decode())\n"
        "socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0); print('netlink')\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print('io_uring', libc.syscall(425, 1, ctypes.create_string_buffer(120)), ctypes.get_errno())\n"
    )
    (ws / "probe.py").write_text(script)
    result = run(f"{PY} probe.py", ws, kind)
    assert result.output.split() == ["pair", "netlink", "io_uring", "-1", "38"]  # 38: ENOSYS


def test_bwrap_gives_commands_a_private_run(ws: Path) -> None:
    require("bwrap")
    listing = run("find /run -mindepth 1 | sort", ws, "bwrap").output.split()
    assert listing == ([] if not os.path.exists("/run/current-system") else ["/run/current-system"]), listing
