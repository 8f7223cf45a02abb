"""The fake model server inside the booted container: tests/fake_ollama.py on 127.0.0.1:11434.

Copied into the container with tests/fake_ollama.py and run there as a transient unit. What it answers
depends on the goal (the first user message):
    "... RUN: <command> :NUR"   a run_command call with that command, then a final answer
    "... HOLD: <name>"     no answer until /run/hearth-test/release-<name> exists (the run stays up
                           for the probes, `hearth stop`, SIGKILL), then a final answer
    "... STEP: <name>"     a list_files call; then, once its result is in, held as HOLD (a run
                           killed between steps), then a final answer
    anything else          write_file hello.txt, then a final answer (as nix/fake-ollama.py)
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

from tests.fake_ollama import FakeOllama, final_answer, tool_call

RELEASE = Path("/run/hearth-test")


def _goal(body: dict[str, Any]) -> str:
    users = [str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "user"]
    return users[0] if users else ""


def answer(body: dict[str, Any]) -> dict[str, Any]:
    goal = _goal(body)
    answered = any(m.get("role") == "tool" for m in body.get("messages", []))
    if "STEP: " in goal and not answered:
        return tool_call("list_files", {})
    if "HOLD: " in goal or "STEP: " in goal:
        name = goal.split("HOLD: " if "HOLD: " in goal else "STEP: ", 1)[1].split()[0]
        deadline = time.monotonic() + 600
        while not (RELEASE / f"release-{name}").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        return final_answer(f"released {name}")
    if "RUN: " in goal and not answered:
        return tool_call("run_command", {"command": goal.split("RUN: ", 1)[1].split(" :NUR", 1)[0]})
    if answered:
        return final_answer("done as asked")
    return tool_call("write_file", {"path": "hello.txt", "content": "hello from the booted test\n"})


def main() -> None:
    RELEASE.mkdir(parents=True, exist_ok=True)
    with FakeOllama([answer], repeat_last=True, port=11434):
        print("fake model on 127.0.0.1:11434", flush=True)
        signal.sigwait({signal.SIGTERM, signal.SIGINT})


if __name__ == "__main__":
    main()
