"""MCP: what a tool call over stdio inside the sandbox costs, and what the sandbox adds to start-up.

The server is tests/mcp_servers/toy.py (written with the official SDK, as a user's would be), its
`echo` tool against the same function called in-process. Each sample starts one server as a run
does (hearth/mcp/launch.py: bubblewrap, seccomp, rlimits) and, paired with it, one started bare
(the sandbox kind `none`), interleaved; start-up is from the connection's first request to its
tool list. Then CALLS `echo` calls on the sandboxed server, each timed, against CALLS in-process
calls. Targets (issue 23): a call adds at most 5 ms over its in-process twin; start-up in the
sandbox at most 1.5x the same server started outside it.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# this file is named mcp.py: its own directory must not shadow the SDK's package `mcp`
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

from agent.safety.sandbox import SandboxPolicy
from hearth.mcp.config import load_servers
from hearth.mcp.launch import connection
from hearth.settings import Settings
from tests.mcp_servers.declare import declare

SAMPLES = int(os.environ.get("BENCH_SAMPLES", "7"))
CALLS = int(os.environ.get("BENCH_CALLS", "200"))


def echo(text: str) -> str:  # the in-process twin of the toy's echo
    return text


def started(settings: Settings, workspace: Path, kind: str) -> tuple[float, object]:
    [config] = load_servers(settings.config_dir)
    policy = SandboxPolicy(kind=kind, network=False, hide=(str(settings.state_dir),))
    server = connection(config, settings, workspace, policy)
    begun = time.perf_counter()
    server.tools(60.0)
    return time.perf_counter() - begun, server


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        declare(base / "config", timeout=60)
        settings = Settings.from_env(
            {"HEARTH_STATE_DIR": str(base / "state"), "HEARTH_CONFIG_DIR": str(base / "config")}
        )
        workspace = base / "ws"
        workspace.mkdir()
        boxed, bare, added = [], [], []
        for _ in range(SAMPLES):
            seconds, server = started(settings, workspace, "bwrap")
            boxed.append(seconds)
            calls = []
            for n in range(CALLS):
                begun = time.perf_counter()
                server.call("echo", {"text": f"hello {n}"}, 30.0)  # type: ignore[attr-defined]
                calls.append(time.perf_counter() - begun)
            server.close()  # type: ignore[attr-defined]
            twins = []
            for n in range(CALLS):
                begun = time.perf_counter()
                echo(f"hello {n}")
                twins.append(time.perf_counter() - begun)
            added.append(statistics.median(calls) - statistics.median(twins))
            seconds, server = started(settings, workspace, "none")
            bare.append(seconds)
            server.close()  # type: ignore[attr-defined]
    ratios = [b / o for b, o in zip(boxed, bare, strict=True)]
    print(
        f"a call of echo over stdio in the sandbox adds {statistics.median(added) * 1000:.2f} ms (median of "
        f"{SAMPLES} samples of {CALLS} calls) over the same function in-process (target <= 5 ms)"
    )
    print(
        f"start-up to the tool list: {statistics.median(boxed) * 1000:.0f} ms in the sandbox, "
        f"{statistics.median(bare) * 1000:.0f} ms outside; median paired ratio {statistics.median(ratios):.2f} "
        "(target <= 1.5)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
