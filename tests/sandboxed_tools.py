"""Run tool calls with the tool-layer checks OFF, so that only the OS sandbox around this process
can contain them. tests/agent/tools/test_containment.py starts it inside bwrap or Landlock.

    python sandboxed_tools.py PLAN.json

PLAN: {"repo": str, "cases": [{"id": str, "root": str, "calls": [[tool, args], ...]}],
       "race": {"root": str, "outside": str, "turns_wanted": int, "rounds_wanted": int} | null}
Writes PLAN.json.result: per case the output of each call, and the race's outputs; prints DONE.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
from typing import Any


def run_cases(cases: list[dict[str, Any]]) -> dict[str, list[str]]:
    from agent.safety.workspace import Workspace
    from agent.tools.gate import call_tool

    results = {}
    for case in cases:
        with Workspace(case["root"], enforce=False) as ws:  # test-only switch: no tool-layer checks
            results[case["id"]] = [call_tool(name, args, ws, mode="bypass").output for name, args in case["calls"]]
    return results


def flip(stop: threading.Event, root: str, targets: list[str], turns: list[int]) -> None:
    """Swap root/d between a real directory and a symlink out, as fast as possible.

    A tool may recreate a missing d (write_file makes parent dirs): whatever stands in the way is
    cleared, so the swapping never stops. ``turns`` counts the swaps done.
    """
    d, real = f"{root}/d", f"{root}/d.real"
    while not stop.is_set():
        _retry(lambda: os.rename(d, real), real)
        _retry(lambda: os.symlink(targets[turns[0] % 2], d), d)
        _clear(d)
        _retry(lambda: os.rename(real, d), d)
        turns[0] += 1


def _clear(path: str) -> None:
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)


def _retry(action: Any, in_the_way: str) -> None:
    for _ in range(1000):
        try:
            action()
            return
        except OSError:
            _clear(in_the_way)
    raise RuntimeError(f"could not swap {in_the_way}")


RACE_CALLS = [
    ("write_file", {"path": "d/x", "content": "inside"}),
    ("edit_file", {"path": "d/x", "old_text": "inside", "new_text": "INSIDE"}),
    ("read_file", {"path": "d/x"}),
    ("list_tree", {"path": "d"}),
    ("search_files", {"path": "d", "pattern": "secret"}),
    ("replace_in_files", {"path": "d", "old_text": "INSIDE", "new_text": "inside"}),
]


MAX_ROUNDS = 200_000  # a bound, so a flipper that never runs fails the test instead of hanging it


def race(root: str, outside: str, turns_wanted: int, rounds_wanted: int) -> dict[str, Any]:
    """Use d through every file tool while another thread keeps swapping it for a symlink out, until
    both have done enough (counted, never timed: a loaded machine only makes it take longer)."""
    from agent.safety.workspace import Workspace
    from agent.tools.gate import call_tool

    outputs: list[str] = []
    stop, turns = threading.Event(), [0]
    flipper = threading.Thread(
        target=flip, args=(stop, root, [outside, os.path.relpath(outside, root)], turns), daemon=True
    )
    sys.setswitchinterval(1e-5)
    flipper.start()
    try:
        with Workspace(root, enforce=False) as ws:
            rounds = 0
            while (turns[0] <= turns_wanted or rounds <= rounds_wanted) and rounds < MAX_ROUNDS:
                outputs += [call_tool(name, args, ws, mode="bypass").output for name, args in RACE_CALLS]
                rounds += 1
    finally:
        stop.set()
        flipper.join()
    return {"outputs": outputs, "turns": turns[0], "flipper_alive_until_stopped": True}


def main() -> None:
    with open(sys.argv[1]) as handle:
        plan = json.load(handle)
    sys.path.insert(0, plan["repo"])
    results: dict[str, Any] = run_cases(plan["cases"])
    if plan.get("race"):
        results["race"] = race(**plan["race"])
    with open(sys.argv[1] + ".result", "w") as handle:  # a file: stdout is capped by the sandbox runner
        json.dump(results, handle)
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
