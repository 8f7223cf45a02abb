"""The cost of round 2's walls per command, as ratios to the command sandbox of today.

"Today's sandbox" is the bwrap command line hearth used before the allow list: the whole host
read-only (`--ro-bind / /`), a private /tmp and /run, new PID/IPC/UTS/net namespaces, no
capabilities, the same seccomp filter, and a direct network when granted. It is kept here, in the
bench only (`_today`), and run through the sandbox's own output collector, so both sides differ
in their walls alone. Each pair is interleaved (today, now, today, now, ...) and the median of the
per-pair ratios is printed.

Measured, for a plain command (`true`):
- now: the allow list, nobody in a user namespace, no cgroup (an ordinary user's run);
- now in the run's cgroup (when one can be made here: root, or a delegated unit);
- now with network granted: plus the private network namespace and the listener handed to the
  run's proxy (no request made);
and for one HTTP request from the command: through the run's proxy (now) against a direct
connection under today's sandbox with network. Target: <= 1.3x for a plain command.
"""

from __future__ import annotations

import compileall
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.net.cmdproxy import CommandProxy
from agent.safety import cgroups, seccomp
from agent.safety.sandbox import SandboxPolicy, _collect, run_sandboxed, scrubbed_env
from tests.netfixtures import Answer, TestNet, Web

PAIRS = int(os.environ.get("BENCH_PAIRS", "40"))
FETCH = "python3 -c \"import urllib.request as u; u.urlopen('http://{host}/x').read()\""


def _today(command: str, ws: str, *, network: bool = False) -> None:
    """Today's sandbox: the bwrap command line before the allow list, with its rlimits and filter."""
    argv = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--size", str(256 << 20)]
    argv += ["--tmpfs", "/tmp", "--size", str(1 << 20), "--tmpfs", "/run", "--bind", ws, ws]
    argv += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--cap-drop", "ALL"]
    argv += ["--new-session", "--die-with-parent", "--chdir", ws, "--clearenv"]
    argv += [] if network else ["--unshare-net"]
    fd = seccomp.program_fd() if not network else None
    argv += ["--seccomp", str(fd)] if fd is not None else []
    for name, value in scrubbed_env(home=ws, tmpdir="/tmp").items():
        argv += ["--setenv", name, value]
    limits = [(resource.RLIMIT_AS, 1 << 30), (resource.RLIMIT_NPROC, 256), (resource.RLIMIT_CORE, 0)]
    proc = subprocess.Popen(
        argv + ["--", "/bin/sh", "-c", command],
        cwd=ws,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=lambda: [resource.setrlimit(w, (v, v)) for w, v in limits] and None,
        pass_fds=(fd,) if fd is not None else (),
    )
    if fd is not None:
        os.close(fd)
    with proc:
        _collect(proc, 30, 64_000)
    assert proc.returncode == 0, f"today's sandbox failed: {command}"


def _timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def _pairs(today: Callable[[], object], now: Callable[[], object]) -> tuple[float, float, float]:
    """(median ratio now/today, median today s, median now s) over interleaved pairs."""
    today(), now()  # warm up
    pairs = [(_timed(today), _timed(now)) for _ in range(PAIRS)]
    return (
        statistics.median(b / a for a, b in pairs),
        statistics.median(a for a, _ in pairs),
        statistics.median(b for _, b in pairs),
    )


def main() -> None:
    if shutil.which("bwrap") is None:
        print("bwrap is not installed: nothing to compare")
        return
    for package in ("agent", "hearth"):
        compileall.compile_dir(ROOT / package, quiet=1)
    cgroup, why = cgroups.create(f"bench-{os.getpid()}", max_procs=256, memory_bytes=1 << 30)
    net, web = TestNet(), Web({"/x": Answer(200, "x")})
    net.host("site.test", web)
    proxy = CommandProxy(net.guard())
    with tempfile.TemporaryDirectory(prefix="hearth-bench-sandbox-", dir="/var/tmp") as ws:
        home = Path(ws, "home")
        home.mkdir()
        plain = SandboxPolicy(kind="bwrap", home=str(home))
        in_cgroup = SandboxPolicy(kind="bwrap", cgroup=cgroup.dirs if cgroup else (), home=str(home))
        granted = SandboxPolicy(kind="bwrap", network=True, cgroup=in_cgroup.cgroup, home=str(home))

        def now(command: str, policy: SandboxPolicy) -> Callable[[], object]:
            return lambda: run_sandboxed(command, ws, policy=policy, timeout_s=30, proxy=proxy)

        rows = [
            ("a plain command", _pairs(lambda: _today("true", ws), now("true", plain))),
            ("a plain command in the run's cgroup", _pairs(lambda: _today("true", ws), now("true", in_cgroup))),
            ("a command granted network", _pairs(lambda: _today("true", ws, network=True), now("true", granted))),
            (
                "one HTTP request (proxy vs direct)",
                _pairs(
                    lambda: _today(FETCH.format(host=f"127.0.0.1:{web.port}"), ws, network=True),
                    now(FETCH.format(host="site.test"), granted),
                ),
            ),
        ]
    web.close()
    if cgroup is not None:
        cgroup.remove()
    where = f"the run's cgroup: {cgroup.where}" if cgroup else f"no cgroup here ({why})"
    print(f"hearth command sandbox, round 2 vs today's, {PAIRS} interleaved pairs each, as uid {os.geteuid()}, {where}")
    for name, (ratio, before, after) in rows:
        print(f"  {name}: today {before * 1000:.1f} ms, now {after * 1000:.1f} ms, ratio {ratio:.2f}")
    print(f"ratio for a plain command: {rows[0][1][0]:.2f} (target <= 1.3); in the run's cgroup: {rows[1][1][0]:.2f}")


if __name__ == "__main__":
    main()
