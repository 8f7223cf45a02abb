"""`/v1`: a turn sent to a conversation while its run still works is a steer of that run, through
the official `openai` client against `hearth serve`, a real `hearth watch` and the fake Ollama. The
steer reaches the model after the next tool result, recorded as from `api:KEY/user`; no second run
is queued and the turn's call answers with that run's answer. A key whose user may not approve in
the run's profile, and a turn too long for a steer, are refused in OpenAI's shape with nothing left."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import openai
import pytest

from agent.steer import STEER_MARK
from hearth.audit.store import AuditStore
from hearth.doors.keys import Key, add
from hearth.users import roster
from tests.fake_ollama import FakeOllama, Gated, assert_every_request_legal, final_answer, tool_call
from tests.hearth.doors.conftest import make_key
from tests.hearth.doors.test_openai_door import client
from tests.queue_support import rows, wait_for
from tests.web_support import Center

WAIT_S = 120.0  # bounds only a broken test: each wait ends on its marker
TALK = {"X-Hearth-Conversation": "talk-1"}


def turn(api: openai.OpenAI, text: str, **extra: Any) -> Any:
    return api.chat.completions.with_raw_response.create(
        model="default", messages=[{"role": "user", "content": text}], extra_headers=TALK, **extra
    )


def test_a_turn_while_the_conversations_run_works_steers_it_and_answers_with_its_answer(
    center: Center, state_dir: Path
) -> None:
    key = make_key(state_dir)
    first = Gated(tool_call("list_files", {"path": "."}))
    with FakeOllama([first, final_answer("Listed the top level.")]) as fake, ThreadPoolExecutor(1) as pool:
        center.start_watch(fake.url)
        api = client(center, key)
        try:
            opened = pool.submit(turn, api, "list the workspace")
            wait_for(lambda: bool(fake.requests) or opened.done(), timeout=WAIT_S, what="the run to ask its model")
            assert not opened.done(), opened.result()
            too_long = _refused(lambda: turn(api, "x" * 4_001))
            assert too_long.status_code == 400 and "still working" in too_long.message
            said, headers = _steer(api, first)
        finally:
            first.release.set()
        answered = opened.result(timeout=WAIT_S)
    run_id = answered.headers["x-hearth-run"]
    assert answered.parse().choices[0].message.content == "Listed the top level."
    assert headers["x-hearth-run"] == run_id and headers["x-hearth-conversation"] == "talk-1"
    assert said.startswith(f"(given to run {run_id}, which is still working") and said.endswith("Listed the top level.")
    assert "> list_files" in said, "the steering call follows the run from where it was"
    told = fake.requests[1]["messages"]
    assert told[-2]["role"] == "tool"
    assert told[-1]["content"] == (
        f"{STEER_MARK}api:webui/alice: a person watching this run, not a tool result]\nOnly the top level."
    )
    assert_every_request_legal(fake.requests)
    assert [r["id"] for r in rows(state_dir, "select id from runs")] == [run_id], "no second run"
    [step] = rows(state_dir, "select detail from steps where kind = 'steer'")
    assert step["detail"] == "from api:webui/alice: Only the top level."


def _steer(api: openai.OpenAI, first: Gated) -> tuple[str, dict[str, str]]:
    """The steering turn, streamed: the model's reply is released once it said it was given."""
    raw = api.chat.completions.with_raw_response.create(
        model="default",
        messages=[{"role": "user", "content": "Only the top level."}],
        extra_headers=TALK,
        stream=True,
        user="alice",
    )
    said = ""
    for chunk in raw.parse():
        said += (chunk.choices[0].delta.content or "") if chunk.choices else ""
        if "(given to run" in said:
            first.release.set()
    return said, dict(raw.headers)


def _refused(call: Any) -> openai.APIStatusError:
    with pytest.raises(openai.APIStatusError) as refused:
        call()
    return refused.value


def test_a_key_whose_user_may_not_approve_is_refused_the_steer_and_nothing_is_queued(
    center: Center, state_dir: Path
) -> None:
    make_key(state_dir, "spare")  # the audit and its tables
    with AuditStore(state_dir / "audit.db") as audit:
        roster.add(audit, "lena", "operator", by="test")
        roster.grant(audit, "lena", "default", "launch", by="test")  # launches there, may not approve
        secret = add(audit, Key("lena", (), 0, 0, user="lena"))
    api = client(center, secret)
    opened = api.chat.completions.create(
        model="default", messages=[{"role": "user", "content": "wait"}], extra_headers=TALK, stream=True
    )
    next(iter(opened))  # the first chunk: the run is queued (no spawner here, so it stays there)
    opened.close()
    [queued] = [p.stem for p in (state_dir / "queue").glob("*.json")]
    refused = _refused(lambda: turn(api, "use staging"))
    assert refused.status_code == 403 and f"run {queued} of this conversation is still working" in refused.message
    assert "lena" in refused.message and "approve" in refused.message
    assert [p.stem for p in (state_dir / "queue").glob("*.json")] == [queued], "no second run was queued"
    assert not (state_dir / "state" / "steers" / queued).exists()
