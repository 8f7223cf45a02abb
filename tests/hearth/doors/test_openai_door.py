"""The OpenAI-compatible door through the official `openai` client, against `hearth serve` (the real
app on loopback), a real `hearth watch` and the fake Ollama: every call is a run in the audit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.fake_ollama import FakeOllama, assert_every_request_legal, final_answer, tool_call
from tests.hearth.doors.conftest import make_key
from tests.queue_support import rows
from tests.web_support import Center


def client(center: Center, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{center.url}/v1", api_key=key, max_retries=0, timeout=60)


def ask(api: openai.OpenAI, goal: str, model: str = "default", **extra: Any) -> Any:
    return api.chat.completions.with_raw_response.create(
        model=model, messages=[{"role": "user", "content": goal}], **extra
    )


def test_the_models_are_the_profiles_and_auto_with_what_each_resolves_to(center: Center, state_dir: Path) -> None:
    key = make_key(state_dir)
    listed = {m.id: m for m in client(center, key).models.list()}
    assert {"auto", "default", "demo"} <= set(listed)
    assert listed["default"].model_extra["hearth"]["agent"] == "default"  # type: ignore[index]
    assert listed["auto"].model_extra["hearth"]["model"] == "qwen2.5-coder"  # type: ignore[index]
    narrow = make_key(state_dir, "narrow", agents=("demo",))
    assert [m.id for m in client(center, narrow).models.list()] == ["demo"]


def test_a_completion_is_a_run_recorded_with_the_key_that_launched_it(center: Center, state_dir: Path) -> None:
    key = make_key(state_dir)
    with FakeOllama([final_answer("hello from hearth")]) as fake:
        center.start_watch(fake.url)
        raw = ask(client(center, key), "say hello", user="alice")
    answer = raw.parse()
    assert answer.choices[0].message.content == "hello from hearth"
    assert answer.usage.prompt_tokens == 100 and answer.usage.total_tokens == 120
    run_id = raw.headers["x-hearth-run"]
    [run] = rows(state_dir, "select * from runs where id = ?", run_id)
    assert run["source"] == "api:webui" and run["requested_by"] == "api:webui/alice" and run["goal"] == "say hello"
    assert raw.headers["x-hearth-conversation"] == f"conv-{run_id}"


def test_a_streamed_completion_says_each_tool_call_and_result_then_the_answer_and_its_tokens(
    center: Center, state_dir: Path
) -> None:
    key = make_key(state_dir)
    script = [tool_call("write_file", {"path": "notes.txt", "content": "stream-marker"}), final_answer("wrote it")]
    with FakeOllama(script) as fake:
        center.start_watch(fake.url)
        chunks = list(
            client(center, key).chat.completions.create(
                model="default", messages=[{"role": "user", "content": "write notes"}], stream=True
            )
        )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    lines = text.splitlines()
    assert lines[0].startswith("> write_file ") and lines[1].startswith("< ok: ")
    assert text.endswith("\nwrote it") and chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices[0].finish_reason == "stop" and chunks[-1].usage.total_tokens == 240  # type: ignore[union-attr]
    [run] = rows(state_dir, "select source, status from runs")
    assert run == {"source": "api:webui", "status": "done"}


def test_the_stream_is_openais_event_stream_ending_with_done(center: Center, state_dir: Path) -> None:
    key = make_key(state_dir)
    with FakeOllama([final_answer("fine")]) as fake:
        center.start_watch(fake.url)
        body = {
            "model": "auto",
            "messages": [{"role": "user", "content": "hi"}],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        with httpx.stream(
            "POST",
            f"{center.url}/v1/chat/completions",
            json=body,
            headers={"Authorization": f"Bearer {key}"},
            timeout=60,
        ) as answer:
            events = [line for line in answer.iter_lines() if line]
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert events[-1] == "data: [DONE]"
    data = [json.loads(e.removeprefix("data: ")) for e in events[:-1]]
    assert all(d["object"] == "chat.completion.chunk" for d in data)
    assert data[-1]["choices"] == [] and data[-1]["usage"]["total_tokens"] == 120


def test_a_second_turn_continues_the_first_runs_workspace(center: Center, state_dir: Path) -> None:
    key = make_key(state_dir)
    script = [
        tool_call("write_file", {"path": "notes.txt", "content": "turn-one-marker"}),
        final_answer("noted"),
        {"content": ""},  # unusable, and unusable again when asked again: the nudge, in the second turn
        {"content": ""},
        tool_call("read_file", {"path": "notes.txt"}),
        final_answer("it says turn-one-marker"),
    ]
    with FakeOllama(script) as fake:
        center.start_watch(fake.url)
        api = client(center, key)
        first = ask(api, "note this")
        conversation = first.headers["x-hearth-conversation"]
        messages = [
            {"role": "user", "content": "note this"},
            {"role": "assistant", "content": "noted"},
            {"role": "user", "content": "what does it say?"},
        ]
        second = api.chat.completions.with_raw_response.create(
            model="default",
            messages=messages,
            extra_headers={"X-Hearth-Conversation": conversation},  # type: ignore[arg-type]
        )
    assert second.parse().choices[0].message.content == "it says turn-one-marker"
    assert_every_request_legal(fake.requests)  # the client's three messages became one goal, one user message
    assert second.headers["x-hearth-conversation"] == conversation
    one, two = first.headers["x-hearth-run"], second.headers["x-hearth-run"]
    [run] = rows(state_dir, "select * from runs where id = ?", two)
    [earlier] = rows(state_dir, "select * from runs where id = ?", one)
    assert run["goal"] == "what does it say?" and run["source"] == "api:webui"
    assert run["workspace"] == earlier["workspace"]
    [read] = rows(state_dir, "select output from steps where run_id = ? and tool = 'read_file'", two)
    assert "turn-one-marker" in read["output"]
    assert rows(state_dir, "select parent_run, link from runs where id = ?", two) == [
        {"parent_run": one, "link": "follow-up"}
    ]


@pytest.mark.parametrize(
    ("shape", "headers", "body"),
    [
        # Open WebUI, with ENABLE_FORWARD_USER_INFO_HEADERS=true, sends these with each call
        ("open-webui", {"X-OpenWebUI-Chat-Id": "chat-{n}", "X-OpenWebUI-User-Id": "u1"}, {}),
        # LibreChat: `user` in the body; its endpoint's headers can carry the conversation id
        ("librechat", {"X-Conversation-Id": "lc-{n}"}, {"user": "6650f0c0"}),
        ("metadata", {}, {"metadata": {"conversation_id": "meta-{n}"}}),
        ("history only", {}, {}),
    ],
)
def test_the_common_clients_conversation_shapes_continue_their_run(
    center: Center, state_dir: Path, shape: str, headers: dict[str, str], body: dict[str, Any]
) -> None:
    key = make_key(state_dir)
    filled = {k: v.format(n=shape.replace(" ", "-")) for k, v in headers.items()}
    meta = json.loads(json.dumps(body).replace("{n}", shape.replace(" ", "-")))
    with FakeOllama([final_answer("first answer"), final_answer("second answer")]) as fake:
        center.start_watch(fake.url)
        api = client(center, key)
        first = api.chat.completions.with_raw_response.create(
            model="default",
            messages=[{"role": "user", "content": "one"}],
            extra_headers=filled,
            extra_body=meta,  # type: ignore[arg-type]
        )
        history = [
            {"role": "user", "content": "one"},
            {"role": "assistant", "content": "first answer"},
            {"role": "user", "content": "two"},
        ]
        second = api.chat.completions.with_raw_response.create(
            model="default",
            messages=history,
            extra_headers=filled,
            extra_body=meta,  # type: ignore[arg-type]
        )
    one, two = first.headers["x-hearth-run"], second.headers["x-hearth-run"]
    assert rows(state_dir, "select parent_run from runs where id = ?", two) == [{"parent_run": one}]
    assert second.headers["x-hearth-conversation"] == first.headers["x-hearth-conversation"]


def test_no_key_and_a_wrong_key_are_refused_401_in_openais_shape(center: Center, state_dir: Path) -> None:
    make_key(state_dir)
    with pytest.raises(openai.AuthenticationError) as wrong:
        client(center, "hk-not-a-key").models.list()
    assert wrong.value.status_code == 401 and wrong.value.code == "invalid_api_key"
    bare = httpx.post(f"{center.url}/v1/chat/completions", json={"model": "default", "messages": []})
    assert bare.status_code == 401
    assert bare.json()["error"]["code"] == "missing_key" and bare.json()["error"]["type"] == "authentication_error"
    assert rows(state_dir, "select count(*) as n from runs") == [{"n": 0}]


def test_a_profile_the_key_may_not_use_is_403_and_tools_are_refused(center: Center, state_dir: Path) -> None:
    key = make_key(state_dir, agents=("demo",))
    with pytest.raises(openai.PermissionDeniedError) as refused:
        ask(client(center, key), "hi", model="default")
    assert refused.value.code == "model_not_allowed" and "'default'" in refused.value.message
    tool = {"type": "function", "function": {"name": "x", "parameters": {"type": "object"}}}
    with pytest.raises(openai.BadRequestError) as tools:
        ask(client(center, key), "hi", model="demo", tools=[tool])
    assert tools.value.code == "tools_not_supported"
    with pytest.raises(openai.NotFoundError) as unknown:
        ask(client(center, key), "hi", model="gpt-4o")
    assert unknown.value.code == "model_not_found"
    assert rows(state_dir, "select count(*) as n from runs") == [{"n": 0}]


def test_a_key_over_its_rate_is_429_and_queues_nothing(center: Center, state_dir: Path) -> None:
    key = make_key(state_dir, rate=1)
    with FakeOllama([final_answer("one")]) as fake:
        center.start_watch(fake.url)
        ask(client(center, key), "first")
        with pytest.raises(openai.RateLimitError) as limited:
            ask(client(center, key), "second")
    assert limited.value.code == "rate_limit_exceeded" and "1 calls a minute" in limited.value.message
    assert rows(state_dir, "select goal, source from runs") == [{"goal": "first", "source": "api:webui"}]


def test_a_key_whose_budget_is_spent_is_429_and_its_run_was_capped_to_it(center: Center, state_dir: Path) -> None:
    key = make_key(state_dir, budget=100)
    with FakeOllama([final_answer("spent"), final_answer("never")]) as fake:
        center.start_watch(fake.url)
        ask(client(center, key), "spend it")
        with pytest.raises(openai.RateLimitError) as spent:
            ask(client(center, key), "again")
    assert spent.value.code == "insufficient_quota" and "100 tokens" in spent.value.message
    [run] = rows(state_dir, "select id, source, tokens_in + tokens_out as tokens from runs")
    assert run["source"] == "api:webui" and run["tokens"] == 120
    [request] = rows(state_dir, "select body from requests where id = ?", run["id"])
    assert json.loads(request["body"])["max_tokens"] == 100


def test_a_host_this_server_does_not_answer_to_is_refused_in_openais_shape(center: Center, state_dir: Path) -> None:
    key = make_key(state_dir)
    answer = httpx.get(f"{center.url}/v1/models", headers={"Host": "evil.example", "Authorization": f"Bearer {key}"})
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "bad_host"


def test_a_waiting_approval_is_said_with_where_to_decide_and_the_call_ends_with_the_run(
    center: Center, state_dir: Path
) -> None:
    key = make_key(state_dir)
    script = [tool_call("run_command", {"command": "echo approved-marker"}), final_answer("ran it")]
    with FakeOllama(script) as fake:
        center.start_watch(fake.url)
        stream = client(center, key).chat.completions.create(
            model="default", messages=[{"role": "user", "content": "run it"}], stream=True
        )
        said, decided = "", False
        for chunk in stream:
            said += (chunk.choices[0].delta.content or "") if chunk.choices else ""
            if "waiting for a person" in said and not decided:  # the stream says it while the run waits
                [pending] = center.client().get("/api/approvals").json()
                answer = center.client().post_json(f"/api/approvals/{pending['id']}", {"decision": "approve"})
                decided = answer.status_code == 200
    assert f"{center.url}/approvals" in said and "hearth approve " in said
    assert said.endswith("ran it") and "approved-marker" in said
    [run] = rows(state_dir, "select source, status from runs")
    assert run == {"source": "api:webui", "status": "done"}


def test_a_body_over_the_limit_is_413_in_openais_shape_before_the_key_is_read(center: Center, state_dir: Path) -> None:
    key = make_key(state_dir)
    huge = b'{"model": "default", "messages": [{"role": "user", "content": "' + b"x" * (2 * 2**20) + b'"}]}'
    with pytest.raises(openai.APIStatusError) as refused:
        client(center, key).chat.completions.create(
            model="default", messages=[{"role": "user", "content": "x" * (2 * 2**20)}]
        )
    assert refused.value.status_code == 413 and refused.value.code == "request_too_large"
    bare = httpx.post(f"{center.url}/v1/chat/completions", content=huge, headers={"content-type": "application/json"})
    assert bare.status_code == 413 and bare.json()["error"]["type"] == "invalid_request_error"
    assert "takes at most" in bare.json()["error"]["message"]
    assert rows(state_dir, "select count(*) as n from runs") == [{"n": 0}]


def test_a_completion_under_a_research_profile_is_a_research_run_whose_report_is_the_answer(
    center: Center, state_dir: Path, tmp_path: Path
) -> None:
    from tests.research_support import Script

    scout = tmp_path / "config" / "agents" / "scout"
    scout.mkdir(parents=True)
    (scout / "agent.toml").write_text('name = "scout"\n[research]\nmax_rounds = 1\n')
    key = make_key(state_dir)
    with FakeOllama([Script()], repeat_last=True) as fake:
        center.start_watch(fake.url, HEARTH_SEARCH_URL="http://127.0.0.1:9/search")  # refused: loopback
        stream = client(center, key).chat.completions.create(
            model="scout", messages=[{"role": "user", "content": "What changed in Python 3.13?"}], stream=True
        )
        said, decided = "", False
        for chunk in stream:
            said += (chunk.choices[0].delta.content or "") if chunk.choices else ""
            if "waiting for a person" in said and not decided:  # the plan waits for its approval
                [pending] = center.client().get("/api/approvals").json()
                assert pending["tool"] == "research_plan"
                answer = center.client().post_json(f"/api/approvals/{pending['id']}", {"decision": "approve"})
                decided = answer.status_code == 200
    assert decided and "# Research: What changed in Python 3.13?" in said
    assert "0 claims cited, 1 caveat" in said  # the scripted claim cites evidence no page gave
    [run] = rows(state_dir, "select source, status, kind, summary from runs")
    assert (run["source"], run["status"], run["kind"]) == ("api:webui", "done", "research")
    assert said.rstrip().endswith(run["summary"].rstrip())
