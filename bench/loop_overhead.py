"""Loop overhead: hearth-loop iterations per second over raw client round trips per second.

Both run against the same fake Ollama in this process. The loop runs the real runner (tools,
audit writes, state file); the raw client then replays the exact request bodies the loop sent,
so the ratio is what hearth adds around each model call (1.0 would be no overhead at all).
"""

from __future__ import annotations

import io
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.model.ollama_client import OllamaClient
from hearth.run.goal import GoalRequest
from hearth.run.runner import run_goal
from hearth.settings import Settings
from tests.fake_ollama import FakeOllama, tool_call

ITERATIONS = 100


def main() -> None:
    with (
        tempfile.TemporaryDirectory() as tmp,
        FakeOllama([tool_call("list_files", {"path": "."})], repeat_last=True) as fake,
    ):
        settings = Settings(
            state_dir=Path(tmp) / "state",
            config_dir=Path(tmp) / "config",
            ollama_host=fake.url,
            model="qwen2.5-coder",
            sandbox="auto",
        )
        request = GoalRequest(
            goal="list forever", model="qwen2.5-coder", max_iters=ITERATIONS, workspace=Path(tmp) / "ws"
        )
        started = time.perf_counter()
        _, outcome = run_goal(request, settings, out=io.StringIO())
        loop_rate = outcome.iterations / (time.perf_counter() - started)
        bodies = list(fake.requests)
        client = OllamaClient("qwen2.5-coder", fake.url)
        started = time.perf_counter()
        for body in bodies:
            client.chat(body["messages"], body.get("tools", []))
        raw_rate = len(bodies) / (time.perf_counter() - started)
    print(f"loop: {loop_rate:.1f} iterations/s over {outcome.iterations} iterations")
    print(f"raw client: {raw_rate:.1f} round trips/s over the same {len(bodies)} request bodies")
    print(f"ratio loop/raw: {loop_rate / raw_rate:.2f}")


if __name__ == "__main__":
    main()
