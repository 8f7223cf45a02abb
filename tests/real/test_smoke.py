"""The real tier's smoke, which CI runs when the machine has the real-model cache: one chore of
bench/chores.py through hearth on a real model, as its users run it (hearth-loop as a process, its
check in the command sandbox), in a few minutes on a CPU.

What it holds to is the path, not the model's skill: the server answered every call in its own
wire format, the loop ran to an end of its own and recorded it with the tokens (and, from an
OpenAI-compatible server, the prompt tokens it took from its cache), and the check ran. Whether the
model did the chore is printed; bench/chores.py measures that, on every chore."""

from __future__ import annotations

from typing import Any

import pytest

from tests.real.conftest import SMOKE_CHORE

NOT_AN_END = ("", "model_unavailable", "failed", "interrupted", "timeout")  # the path broke, or the time ran out


@pytest.mark.real
def test_a_real_model_runs_a_chore_through_hearth_to_a_recorded_end(
    real_server: tuple[str, str], greeting_run: dict[str, Any]
) -> None:
    run = greeting_run
    print(f"{SMOKE_CHORE}: passed {run['passed']} ({run['status']} in {run['wall_s']}s, {run['detail']})")
    print(f"answer: {run['answer']}")
    assert run["status"] not in NOT_AN_END, f"{run['status']} after {run['wall_s']}s: {run['calls']}"
    assert run["turns"] >= 1 and run["model_calls"] >= run["turns"] and run["tokens_in"] > 0 and run["tokens_out"] > 0
    if real_server[0].startswith("openai+"):
        # a reply cut while it repeated itself is left unread, so the server's counts of it never come
        counted = [cached for cached, runaway in zip(run["audit_cached"], run["audit_runaway"]) if not runaway]
        assert counted and None not in counted, f"cached tokens per call {run['audit_cached']}"
    assert run["detail"].startswith("exit ")  # the check ran in the sandbox
