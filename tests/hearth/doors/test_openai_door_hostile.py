"""The `/v1` door against callers that do not play fair, end to end (the official `openai` client or
raw httpx against `hearth serve` on loopback, a real `hearth watch`, the fake Ollama): a key made
again under a removed key's name, calls made at once against a budget, a body nested without end,
and a client that hangs up."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from hearth.audit.store import AuditStore
from hearth.doors import keys
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, Held, final_answer, tool_call
from tests.hearth.doors.conftest import make_key
from tests.hearth.doors.test_openai_door import ask, client
from tests.mcp_servers.support import until
from tests.queue_support import rows
from tests.web_support import Center, run_status

FOLLOWING = "hearth.web.routes.v1"


def test_a_key_made_again_under_a_removed_keys_name_continues_none_of_its_conversations(
    center: Center, state_dir: Path
) -> None:
    old = make_key(state_dir, "webui")
    script = [
        tool_call("write_file", {"path": "secret.txt", "content": "old-key-marker"}),
        final_answer("noted"),
        final_answer("a fresh start"),
    ]
    with FakeOllama(script) as fake:
        center.start_watch(fake.url)
        first = ask(client(center, old), "note this", model="demo")
        conversation = first.headers["x-hearth-conversation"]
        assert run_cli("hearth", "keys", "rm", "webui").returncode == 0
        new = make_key(state_dir, "webui", agents=("default",))
        history = [
            {"role": "user", "content": "note this"},
            {"role": "assistant", "content": "noted"},
            {"role": "user", "content": "what does secret.txt say?"},
        ]
        second = client(center, new).chat.completions.with_raw_response.create(
            model="default",  # "default" names no profile of its own: a follow-up took the earlier run's
            messages=history,
            extra_headers={"X-Hearth-Conversation": conversation},  # type: ignore[arg-type]
        )
    assert second.parse().choices[0].message.content == "a fresh start"
    one, two = first.headers["x-hearth-run"], second.headers["x-hearth-run"]
    [earlier] = rows(state_dir, "select agent_name, workspace from runs where id = ?", one)
    [run] = rows(state_dir, "select agent_name, workspace, parent_run from runs where id = ?", two)
    assert earlier["agent_name"] == "demo"
    assert run["parent_run"] is None and run["agent_name"] == "default" and run["workspace"] != earlier["workspace"]
    assert not (Path(run["workspace"]) / "secret.txt").exists()


def test_a_conversation_under_a_profile_the_key_may_not_use_is_not_continued(center: Center, state_dir: Path) -> None:
    """The door's own check, apart from the key's id: a conversation of this key whose run is under
    another profile (as a call kept from before the ids were could be) is refused, not continued."""
    wide = make_key(state_dir, "wide")
    with FakeOllama([final_answer("noted")]) as fake:
        center.start_watch(fake.url)
        earlier = ask(client(center, wide), "note this", model="demo").headers["x-hearth-run"]
        narrow = make_key(state_dir, "narrow", agents=("default",))
        with AuditStore(state_dir / "audit.db") as audit:
            key = keys.identify(audit, f"Bearer {narrow}")
            keys.record(audit, key, earlier, "kept-conversation", 0)
        with pytest.raises(openai.PermissionDeniedError) as refused:
            client(center, narrow).chat.completions.create(
                model="default",
                messages=[{"role": "user", "content": "go on"}],
                extra_headers={"X-Hearth-Conversation": "kept-conversation"},
            )
    assert refused.value.code == "model_not_allowed" and "its runs use profile 'demo'" in refused.value.message
    assert rows(state_dir, "select count(*) as n from runs") == [{"n": 1}]


def test_calls_made_at_once_cannot_spend_past_the_keys_budget(center: Center, state_dir: Path) -> None:
    key = make_key(state_dir, budget=700)
    release = threading.Event()
    answers: list[Any] = []

    def call(n: int) -> None:
        try:
            answers.append(ask(client(center, key), f"goal {n}"))
        except openai.RateLimitError as refused:
            answers.append(refused)

    with FakeOllama([Held(final_answer("first"), 1, release), final_answer("next")]) as fake:
        center.start_watch(fake.url)
        callers = [threading.Thread(target=call, args=(n,)) for n in range(8)]
        for caller in callers:
            caller.start()
        refused_all_but_one = until(lambda: len(answers) >= 7)
        release.set()  # the one admitted run answers, and its call ends with it
        for caller in callers:
            caller.join(60)
        later = ask(client(center, key), "one more")
    assert refused_all_but_one
    refused = [a for a in answers if isinstance(a, openai.RateLimitError)]
    assert len(refused) == 7 and all(r.code == "insufficient_quota" for r in refused)
    assert all("700 held by its runs still going; retry when they end" in r.message for r in refused)
    [first] = [a for a in answers if not isinstance(a, Exception)]
    assert first.parse().choices[0].message.content == "first"
    spent = rows(state_dir, "select tokens_in + tokens_out as n from runs where id = ?", first.headers["x-hearth-run"])
    assert spent == [{"n": 120}]
    # the first run ended: what it spent counts, not what it held, and the next call may spend the rest
    assert later.parse().choices[0].message.content == "next"
    [request] = rows(state_dir, "select body from requests where id = ?", later.headers["x-hearth-run"])
    assert json.loads(request["body"])["max_tokens"] == 580


def test_a_body_nested_past_what_a_parser_follows_is_a_400_in_openais_shape(center: Center, state_dir: Path) -> None:
    key = make_key(state_dir)
    deep = '{"model": "default", "messages": [{"role": "user", "content": "hi", "x": ' + "[" * 200_000
    deep += "]" * 200_000 + "}]}"
    answer = httpx.post(
        f"{center.url}/v1/chat/completions",
        content=deep,
        headers={"Authorization": f"Bearer {key}", "content-type": "application/json"},
    )
    assert answer.status_code == 400
    assert answer.json()["error"] == {
        "message": "the body nests deeper than hearth reads; send a chat completion request",
        "type": "invalid_request_error",
        "code": "invalid_json",
        "param": None,
    }
    assert rows(state_dir, "select count(*) as n from runs") == [{"n": 0}]


@pytest.mark.parametrize("stream", [False, True], ids=["answer", "stream"])
def test_a_call_whose_client_went_away_stops_following_its_run_and_the_run_goes_on(
    center: Center, state_dir: Path, caplog: pytest.LogCaptureFixture, stream: bool
) -> None:
    caplog.set_level(logging.INFO, logger=FOLLOWING)
    key = make_key(state_dir)
    release = threading.Event()
    body = {"model": "default", "messages": [{"role": "user", "content": "wait here"}], "stream": stream}
    headers = {"Authorization": f"Bearer {key}"}
    with FakeOllama([Held(final_answer("done after all"), 1, release)]) as fake:
        center.start_watch(fake.url)
        hasty = httpx.Client(base_url=center.url, timeout=httpx.Timeout(60, read=1))
        with hasty, pytest.raises(httpx.ReadTimeout):  # it hangs up while the run still works
            if stream:
                with hasty.stream("POST", "/v1/chat/completions", json=body, headers=headers) as answer:
                    for _ in answer.iter_lines():
                        pass
            else:
                hasty.post("/v1/chat/completions", json=body, headers=headers)
        stopped = until(lambda: any("went away" in r.getMessage() for r in caplog.records))
        release.set()
        assert stopped, "the call went on following its run after the client had gone"
        [said] = [r.getMessage() for r in caplog.records if "went away" in r.getMessage()]
        run_id = said.split()[5]
        assert said == f"/v1: the client of run {run_id} went away; its call stopped following the run"
        assert until(lambda: run_status(state_dir, run_id) == "done")  # the run is hearth's: it goes on
