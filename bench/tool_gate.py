"""What the gate costs: call_tool (policy, validation, containment, output cap) over the bare tool
function, and the command guard (floor + heads) over the sandboxed command it guards.

Both ratios are measured in this one run on this machine. The first says how much heavier a
tool call is than the work it wraps; the second how small the guard is next to starting a
sandboxed `true` (it should be far below 1.0).
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.safety.command_approval import auto_approved
from agent.safety.command_floor import floor_violation
from agent.safety.sandbox import SandboxPolicy, SandboxUnavailable, detect, run_sandboxed
from agent.safety.workspace import Workspace
from agent.tools.gate import TOOLS, call_tool

COMMAND = "git status --short && ls -la | grep -v '^total' | sort -k5 -n; python3 -m pytest -q tests/ || true"
# the costliest lines of the longest allowed size found so far (64 KiB): re-read at every level
ADVERSARIAL = [("watch " * 11000)[:65536], ("eval " * 14000)[:65536], ("f() { " * 11000)[:65536]]


def per_call(fn: Callable[[], object], rounds: int) -> float:
    started = time.perf_counter()
    for _ in range(rounds):
        fn()
    return (time.perf_counter() - started) / rounds


def main() -> None:
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp, Workspace(tmp) as ws:
        (ws.root / "notes.txt").write_text("a line of notes\n" * 200)
        args = {"path": "notes.txt"}
        bare = per_call(lambda: TOOLS["read_file"].fn(args, ws), 2000)
        gated = per_call(lambda: call_tool("read_file", args, ws, mode="auto"), 2000)
        print(
            f"call_tool(read_file) / bare read_file: {gated / bare:.2f}  ({gated * 1e6:.0f} us vs {bare * 1e6:.0f} us)"
        )
        guard = per_call(lambda: (floor_violation(COMMAND), auto_approved(COMMAND, ["git", "ls"])), 500)
        worst = max(per_call(lambda line=line: floor_violation(line), 3) for line in ADVERSARIAL)
        print(
            f"worst 64 KiB adversarial line / typical line in the guard: {worst / guard:.0f}  "
            f"({worst * 1e3:.0f} ms vs {guard * 1e6:.0f} us)"
        )
        try:
            kind = detect("auto")
        except SandboxUnavailable as exc:
            print(f"guard per command: {guard * 1e6:.0f} us (no sandbox here to compare with: {exc})")
            return
        sandboxed = per_call(lambda: run_sandboxed("true", ws.root, policy=SandboxPolicy(kind=kind), timeout_s=10), 30)
        print(
            f"command guard / sandboxed `true` ({kind}): {guard / sandboxed:.4f}  "
            f"({guard * 1e6:.0f} us vs {sandboxed * 1e3:.1f} ms)"
        )


if __name__ == "__main__":
    main()
