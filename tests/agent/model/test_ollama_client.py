"""The real Ollama client against a real local HTTP server speaking /api/chat."""

from __future__ import annotations

import json
import socket

import pytest

from agent.model.host import normalize_host
from agent.model.ollama_client import BadReply, ModelUnavailable, OllamaClient
from agent.parsing import ToolCall
from tests.fake_ollama import FakeOllama, Raw, final_answer, tool_call

MESSAGES = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]
TOOLS = [
    {
        "type": "function",
        "function": {"name": "read_file", "description": "d", "parameters": {"type": "object", "properties": {}}},
    }
]


def client(fake: FakeOllama, **kw: object) -> OllamaClient:
    delays: list[float] = []
    c = OllamaClient("qwen2.5-coder", fake.url, sleep=delays.append, **kw)  # type: ignore[arg-type]
    c.delays = delays  # type: ignore[attr-defined]
    return c


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_request_body_carries_model_messages_tools_and_num_ctx(stream: bool) -> None:
    with FakeOllama([final_answer("ok")]) as fake:
        client(fake, stream=stream, num_ctx=16384).chat(MESSAGES, TOOLS)
    assert fake.requests == [
        {
            "model": "qwen2.5-coder",
            "messages": MESSAGES,
            "stream": stream,
            "options": {"num_ctx": 16384},
            "tools": TOOLS,
        }
    ]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_reply_content_tool_calls_and_token_counts_are_decoded(stream: bool) -> None:
    reply_item = tool_call("read_file", {"path": "a.txt"}, content="Reading the file now, carefully.")
    with FakeOllama([reply_item], tokens=(321, 45)) as fake:
        reply = client(fake, stream=stream).chat(MESSAGES, TOOLS)
    assert reply.content == "Reading the file now, carefully."
    assert reply.tool_calls == [ToolCall("read_file", {"path": "a.txt"})]
    assert (reply.tokens_in, reply.tokens_out) == (321, 45)


def test_arguments_sent_as_a_json_string_are_accepted() -> None:
    with FakeOllama([tool_call("read_file", '{"path": "a.txt"}')]) as fake:
        reply = client(fake).chat(MESSAGES, TOOLS)
    assert reply.tool_calls == [ToolCall("read_file", {"path": "a.txt"})]
    assert reply.malformed == []


def test_arguments_that_are_not_an_object_are_reported_not_raised() -> None:
    with FakeOllama([tool_call("read_file", "[1, 2")]) as fake:
        reply = client(fake).chat(MESSAGES, TOOLS)
    assert reply.tool_calls == []
    assert reply.malformed and "read_file" in reply.malformed[0]


def test_a_model_that_is_not_pulled_says_how_to_pull_it() -> None:
    with FakeOllama() as fake:
        c = OllamaClient("llama3.9", fake.url, sleep=lambda s: None)
        with pytest.raises(ModelUnavailable) as err:
            c.chat(MESSAGES, TOOLS)
    assert "ollama pull llama3.9" in str(err.value)
    assert len(fake.requests) == 1  # not retried: it will not appear by waiting


def test_unreachable_server_names_the_url_and_cause_after_bounded_retries() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again before the client connects
    delays: list[float] = []
    c = OllamaClient("m", f"127.0.0.1:{port}", retries=3, backoff_s=0.5, sleep=delays.append)
    with pytest.raises(ModelUnavailable) as err:
        c.chat(MESSAGES, [])
    assert str(err.value) == (
        f"cannot reach Ollama at http://127.0.0.1:{port}: connection refused; is ollama running there?"
    )
    assert delays == [0.5, 1.0, 2.0]


def test_http_500_is_retried_and_a_later_success_is_used() -> None:
    with FakeOllama([Raw(500, '{"error": "busy"}'), final_answer("fine")]) as fake:
        c = client(fake)
        reply = c.chat(MESSAGES, [])
    assert reply.content == "fine"
    assert len(fake.requests) == 2
    assert c.delays == [0.5]  # type: ignore[attr-defined]


def test_http_500_every_time_ends_as_unavailable_with_the_servers_error() -> None:
    with FakeOllama([Raw(500, '{"error": "out of memory"}')] * 4) as fake, pytest.raises(ModelUnavailable) as err:
        client(fake, retries=3).chat(MESSAGES, [])
    assert "HTTP 500: out of memory" in str(err.value)
    assert len(fake.requests) == 4


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (Raw(200, "<html>proxy error</html>", "text/html"), "not JSON"),
        (Raw(200, ""), "empty reply"),
        (Raw(200, '{"model": "m", "done": true}'), "without a message"),
        (Raw(200, '{"error": "model crashed"}'), "model crashed"),
        (Raw(200, "[1, 2, 3]"), "not an object"),
    ],
    ids=["garbage", "empty", "no-message", "error-object", "not-object"],
)
def test_unusable_replies_raise_bad_reply_with_one_line(raw: Raw, expected: str, stream: bool) -> None:
    with FakeOllama([raw]) as fake, pytest.raises(BadReply) as err:
        client(fake, stream=stream).chat(MESSAGES, [])
    assert expected in str(err.value)
    assert "\n" not in str(err.value)


def test_a_stream_cut_before_done_is_a_bad_reply() -> None:
    chunk = json.dumps({"message": {"role": "assistant", "content": "hal"}, "done": False})
    with (
        FakeOllama([Raw(200, chunk + "\n", "application/x-ndjson")]) as fake,
        pytest.raises(BadReply, match="before it was done"),
    ):
        client(fake).chat(MESSAGES, [])


def test_a_server_that_stalls_past_the_timeout_is_unavailable() -> None:
    with (
        FakeOllama([Raw(200, "{}", delay_s=1.0)] * 2) as fake,
        pytest.raises(ModelUnavailable, match="did not answer within 0.2 s"),
    ):
        client(fake, timeout_s=0.2, retries=1).chat(MESSAGES, [])


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (None, "http://127.0.0.1:11434"),
        ("", "http://127.0.0.1:11434"),
        ("0.0.0.0", "http://0.0.0.0:11434"),
        ("127.0.0.1:9999", "http://127.0.0.1:9999"),
        ("https://ollama.lan/", "https://ollama.lan:11434"),
        ("http://[::1]:8080", "http://[::1]:8080"),
    ],
)
def test_host_forms_are_normalised(given: str | None, expected: str) -> None:
    assert normalize_host(given) == expected


def test_a_model_without_tool_support_is_asked_again_without_tools_from_then_on() -> None:
    refusal = Raw(400, '{"error": "registry.ollama.ai/library/gemma:2b does not support tools"}')
    text_call = {"content": '{"name": "read_file", "arguments": {"path": "a.txt"}}'}
    with FakeOllama([refusal, text_call, final_answer("done")]) as fake:
        c = client(fake)
        first = c.chat(MESSAGES, TOOLS)
        c.chat(MESSAGES, TOOLS)
    assert first.content == text_call["content"]  # the loop parses the call from the text
    assert ["tools" in body for body in fake.requests] == [True, False, False]
    assert c.tools_supported is False
