"""hearth's prompt is byte-stable from one model call to the next (a system prompt rendered once, an
append-only history, an unusable reply asked again with the same messages), so a server that caches
the prompt evaluates only the new messages. Measured on what hearth recorded of each call: the
prompt's size and what llama.cpp said it took from its cache (the model steps' tokens_in and
tokens_cached in the audit). On a server other clients share, a call whose turn came after another
client's may find that client's prompt in the cache instead: such calls are left out, as the tap in
front of the server saw them (bench/chorekit/tap.py)."""

from __future__ import annotations

from typing import Any

import pytest

# tokens: the server keeps back the prompt's last token to sample from, and the previous reply may be
# written back as the chat template spells it, not as the model wrote it
SLACK = 16


@pytest.mark.real
def test_after_the_first_call_only_the_new_messages_are_evaluated(
    real_server: tuple[str, str], greeting_run: dict[str, Any]
) -> None:
    if not real_server[0].startswith("openai+"):
        pytest.skip(
            "an Ollama API does not say how much of a prompt it took from its cache; name llama-server (openai+)"
        )
    run = greeting_run
    prompts, cached, shared = run["audit_prompt"], run["audit_cached"], run["shared"]
    print(f"prompt tokens per call {prompts}, from the cache {cached}, server shared before {shared} ({run['status']})")
    assert len(shared) == len(prompts), f"the server was asked {len(shared)} times, the audit has {len(prompts)} calls"
    if len(prompts) < 2:
        pytest.skip(f"the model ended in one call ({run['status']}: {run['answer'][:80]}); nothing to compare")
    # a call another client's request came before may find that client's prompt in the cache; a reply
    # cut while it repeated itself is left unread, so the server's counts of it never come
    runaway = run["audit_runaway"]
    alone = [c for c in range(1, len(prompts)) if shared[c] is not True and not runaway[c] and not runaway[c - 1]]
    if not alone:
        pytest.skip(f"no two calls in a row had the server to themselves (shared {shared}, cut {runaway})")
    for call in alone:
        assert cached[call] is not None, f"call {call + 1} recorded no cached tokens: {cached}"
        evaluated, new = prompts[call] - cached[call], prompts[call] - prompts[call - 1]
        assert evaluated <= new + SLACK, (
            f"call {call + 1} evaluated {evaluated} of its {prompts[call]} prompt tokens; "
            f"only {new} were new since the call before"
        )
