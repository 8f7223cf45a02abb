"""Context budget: what compaction keeps out of a small window, and what checkpoints cost a run.

One long scripted run (40 reads of 1,400-character files, num_ctx 4096) is played twice against
the same fake Ollama, with and without the compactor, and the prompts that were sent are
measured: the peak estimate over num_ctx (above 1.0 Ollama would silently drop the start of the
prompt) and the characters sent over the run. Then a run's workspace checkpoints (three git
scripts in the sandbox: before, git state, after) are timed against one sandboxed command, and
against a whole scripted run, which has no model time at all (a real run's turns take seconds).
"""

from __future__ import annotations

import io
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.context.compaction import Compactor, estimate_tokens
from agent.context.prompt import render_system_prompt
from agent.loop import Loop
from agent.model.ollama_client import OllamaClient
from agent.safety.sandbox import SandboxPolicy, run_sandboxed
from agent.safety.workspace import Workspace
from agent.tools.gate import ToolRunner, visible_tools
from hearth.run.checkpoints import Checkpoints
from hearth.run.goal import GoalRequest
from hearth.run.runner import run_goal
from hearth.settings import Settings
from tests.fake_ollama import FakeOllama, final_answer, tool_call

NUM_CTX = 4096
READS = 40
SMALL_PROFILE = ["read_file", "list_files"]  # what a profile for a small window would allow


def script() -> Any:
    reads = iter(range(READS))

    def reply(body: dict[str, Any]) -> Any:
        if not body.get("tools"):
            return final_answer("Read files f00 onward; each holds numbered lines of x.")
        i = next(reads, None)
        return tool_call("read_file", {"path": f"f{i:02d}.txt"}) if i is not None else final_answer("done")

    return reply


def play(ws: Path, compact: bool) -> list[dict[str, Any]]:
    with FakeOllama([script()], repeat_last=True) as fake, Workspace(ws) as handle:
        tools = ToolRunner(handle, mode="bypass", allowed=SMALL_PROFILE)
        client = OllamaClient("qwen2.5-coder", fake.url, num_ctx=NUM_CTX)
        loop = Loop(
            client,
            tools,
            system_prompt=render_system_prompt("bench", tools.schemas),
            max_iters=READS + 2,
            compactor=Compactor(NUM_CTX, client) if compact else None,
        )
        loop.run("Read every file.")
        return [r for r in fake.requests if r.get("tools")]


def measure(requests: list[dict[str, Any]]) -> tuple[float, int]:
    peak = max(estimate_tokens(r["messages"], r["tools"]) for r in requests)
    sent = sum(len(m.get("content") or "") for r in requests for m in r["messages"])
    return peak / NUM_CTX, sent


def checkpoint_cost(tmp: Path) -> tuple[float, float]:
    """Checkpoint time over one sandboxed command, and over a whole short scripted run."""
    with FakeOllama([tool_call("write_file", {"path": "out.txt", "content": "x"}), final_answer("ok")]) as fake:
        settings = Settings(
            state_dir=tmp / "state",
            config_dir=tmp / "config",
            model_host=fake.url,
            model="qwen2.5-coder",
            sandbox="auto",
        )
        started = time.perf_counter()
        run_goal(GoalRequest(goal="write", workspace=tmp / "run-ws"), settings, out=io.StringIO())
        whole = time.perf_counter() - started
    (tmp / "cp-ws").mkdir()
    (tmp / "cp-ws" / "a.txt").write_text("a")
    started = time.perf_counter()
    points = Checkpoints(tmp / "cp-ws", "bench", SandboxPolicy())
    points.before(agent_name="bench", model="m", goal="g")
    points.git_state()
    (tmp / "cp-ws" / "b.txt").write_text("b")
    points.after(outcome="done", summary="", agent_name="bench", model="m", goal="g")
    spent = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(5):
        run_sandboxed("true", tmp / "cp-ws", policy=SandboxPolicy(), timeout_s=10)
    command = (time.perf_counter() - started) / 5
    return spent / command, spent / whole


def fixed_share(num_ctx: int) -> float:
    """The system prompt and every tool's schema (auto mode), before any message, over the window."""
    schemas = [t.schema() for t in visible_tools(None, "auto")]
    return estimate_tokens([{"role": "system", "content": render_system_prompt("bench", schemas)}], schemas) / num_ctx


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        for i in range(READS):
            (ws / f"f{i:02d}.txt").write_text("".join(f"{i:02d}-{n:03d} " + "x" * 40 + "\n" for n in range(29)))
        plain_peak, plain_sent = measure(play(ws, compact=False))
        compact_peak, compact_sent = measure(play(ws, compact=True))
        per_command, per_run = checkpoint_cost(Path(tmp))
    print(
        f"system prompt + all tool schemas / num_ctx: {fixed_share(8192):.2f} of 8192, {fixed_share(4096):.2f} of 4096"
    )
    print(
        f"peak prompt / num_ctx {NUM_CTX} ({', '.join(SMALL_PROFILE)} only): {plain_peak:.2f} without compaction, "
        f"{compact_peak:.2f} with it"
    )
    print(f"characters sent over {READS} turns, with/without compaction: {compact_sent / plain_sent:.2f}")
    print(f"checkpoints of a run / one sandboxed command: {per_command:.1f}")
    print(f"checkpoints of a run / a whole scripted run (no model time): {per_run:.2f}")


if __name__ == "__main__":
    main()
