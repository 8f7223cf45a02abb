"""Both rows of the backend table pass the same contract, each against a real loopback server
speaking its API (tests/fake_ollama.py, tests/fake_openai.py): what is sent, what is read, what
fails and how, what a server has, embeddings, and a pool over hosts of both kinds."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from agent.knowledge.embedding import EmbedFailed
from agent.loop import Loop
from agent.model.backends import BACKENDS, HostEmbedder, backend_for, client_for, look, probe
from agent.model.host import ChatOptions, Host, parse_host
from agent.model.hosts import HostPool, survey
from agent.model.reply import BadReply, ModelUnavailable
from agent.parsing import ToolCall
from agent.tools.registry import ToolResult
from tests.fake_ollama import FakeOllama, Held, Raw, final_answer, tool_call
from tests.fake_openai import FakeOpenAI

MESSAGES = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]
TOOLS = [
    {
        "type": "function",
        "function": {"name": "read_file", "description": "d", "parameters": {"type": "object", "properties": {}}},
    }
]
KINDS = tuple(BACKENDS)


@contextmanager
def server(kind: str, script: list[Any] | None = None, **kw: Any) -> Iterator[FakeOllama | FakeOpenAI]:
    fake: FakeOllama | FakeOpenAI = FakeOllama(script, **kw) if kind == "ollama" else FakeOpenAI(script, **kw)
    with fake:
        yield fake


def host_of(fake: FakeOllama | FakeOpenAI) -> str:
    return fake.host if isinstance(fake, FakeOpenAI) else fake.url


def chat_client(fake: FakeOllama | FakeOpenAI, model: str = "qwen2.5-coder", **kw: Any) -> Any:
    opts = {"retries": 1, "backoff_s": 0.0, **kw}
    return client_for(host_of(fake), model, ChatOptions(**opts))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_a_reply_carries_content_calls_and_tokens_from_either_kind(kind: str, stream: bool) -> None:
    item = tool_call("read_file", {"path": "a.txt"}, content="Reading it.")
    with server(kind, [item]) as fake:
        reply = chat_client(fake, stream=stream).chat(MESSAGES, TOOLS)
    assert reply.content == "Reading it."
    assert reply.tool_calls == [ToolCall("read_file", {"path": "a.txt"})]
    assert reply.tokens_in > 0 and reply.tokens_out > 0
    assert fake.requests[0]["model"] == "qwen2.5-coder" and fake.requests[0]["tools"] == TOOLS
    assert fake.requests[0]["stream"] is stream


@pytest.mark.parametrize("kind", KINDS)
def test_every_request_carries_the_reply_cap_and_a_reply_cut_by_it_says_so(kind: str) -> None:
    long = final_answer("word " * 400)
    with server(kind, [long, long], tokens=(10, 64)) if kind == "ollama" else server(kind, [long]) as fake:
        reply = chat_client(fake, reply_tokens=64).chat(MESSAGES, [])
    sent = fake.requests[0]
    assert (sent["options"]["num_predict"] if kind == "ollama" else sent["max_tokens"]) == 64
    if kind == "openai":  # the OpenAI fake honours the cap as a server does; Ollama's fake has no tokenizer
        assert reply.cut and len(reply.content) <= 64 * 4


@pytest.mark.parametrize("kind", KINDS)
def test_a_model_the_server_lacks_is_unavailable_naming_it(kind: str) -> None:
    with server(kind) as fake, pytest.raises(ModelUnavailable, match="'llama3.9'") as failed:
        chat_client(fake, model="llama3.9").chat(MESSAGES, [])
    assert fake.url.split("//")[1] in str(failed.value)


@pytest.mark.parametrize("kind", KINDS)
def test_server_errors_are_retried_then_unavailable_with_the_status(kind: str) -> None:
    boom = Raw(503, json.dumps({"error": "overloaded"}))
    with server(kind, [boom, boom]) as fake, pytest.raises(ModelUnavailable, match="HTTP 503"):
        chat_client(fake, retries=1).chat(MESSAGES, [])
    assert len(fake.requests) == 2


@pytest.mark.parametrize("kind", KINDS)
def test_an_unreachable_server_names_the_url_and_the_cause(kind: str) -> None:
    with server(kind) as gone:
        dead = host_of(gone)
    with pytest.raises(ModelUnavailable, match="connection refused"):
        client_for(dead, "m", ChatOptions(retries=0)).chat(MESSAGES, [])


@pytest.mark.parametrize("kind", KINDS)
def test_garbage_is_a_bad_reply_not_a_crash(kind: str) -> None:
    with server(kind, [Raw(200, "this is not json", "text/plain")]) as fake, pytest.raises(BadReply):
        chat_client(fake, stream=False).chat(MESSAGES, [])


@pytest.mark.parametrize("kind", KINDS)
def test_a_stalled_server_is_unavailable_after_the_hosts_own_timeout(kind: str) -> None:
    with server(kind, [Raw(200, "{}", delay_s=1.0)] * 2) as fake:
        host = parse_host(host_of(fake))
        slow = Host(host.url, kind=host.kind, timeout_s=0.2)  # the host's own limit beats the run's
        with pytest.raises(ModelUnavailable, match="did not answer within 0.2 s"):
            client_for(slow, "qwen2.5-coder", ChatOptions(retries=0, timeout_s=60)).chat(MESSAGES, [])


@pytest.mark.parametrize("kind", KINDS)
def test_a_live_stream_is_read_to_its_end_and_counts_its_chunks(kind: str) -> None:
    release = threading.Event()
    seen: list[int] = []
    held = Held(final_answer("a slow but live reply"), after=2, release=release)
    with server(kind, [held]) as fake:
        model = chat_client(fake, on_tokens=lambda n: (seen.append(n), release.set()))
        reply = model.chat(MESSAGES, [])
    assert reply.content == "a slow but live reply" and seen and reply.first_token_s > 0


LOOPING = json.dumps({"name": "list_files", "arguments": {"path": "."}}) + "\n"


@pytest.mark.parametrize("kind", KINDS)
def test_a_reply_that_repeats_one_line_is_cut_after_its_first_writing_and_the_server_told_to_stop(
    kind: str,
) -> None:
    said = "Reading it.\n" + LOOPING * 600_000  # 30 MB: far more than a socket's buffers hold
    with server(kind, [final_answer(said)], chunk_size=4096) as fake:
        reply = chat_client(fake).chat(MESSAGES, TOOLS)
        assert fake.hung_up.wait(60)  # the stream was closed before its end: the server stops generating
    assert reply.content == "Reading it.\n" + LOOPING
    assert reply.cut and reply.runaway and reply.tokens_out > 0


@pytest.mark.parametrize("kind", KINDS)
def test_a_reply_with_short_repeated_lines_of_its_own_is_read_whole(kind: str) -> None:
    code = "def f():\n    return {\n        'a': 1,\n" + "    }\n" * 6 + "\n" * 12 + "x = 1\n" * 10 + "# done\n"
    with server(kind, [final_answer(code)]) as fake:
        reply = chat_client(fake).chat(MESSAGES, TOOLS)
    assert reply.content == code and not reply.cut and not reply.runaway and not fake.hung_up.is_set()


def test_a_server_without_tool_support_is_asked_again_without_tools() -> None:
    with FakeOpenAI([final_answer('{"name": "read_file", "arguments": {}}')], no_tools=True) as fake:
        model = chat_client(fake)
        reply = model.chat(MESSAGES, TOOLS)
    assert "tools" in fake.requests[0] and "tools" not in fake.requests[1]
    assert model.tools_supported is False and "read_file" in reply.content


@pytest.mark.parametrize("shape", ["pieces", "whole", "object", "text"])
@pytest.mark.parametrize("ids", ["openai", "vllm", "mistral"])
def test_each_tool_call_shape_a_server_emits_is_read(shape: str, ids: str) -> None:
    calls = [
        {"function": {"name": "read_file", "arguments": {"path": "a.txt"}}},
        {"function": {"name": "list_files", "arguments": {}}},
    ]
    with FakeOpenAI([{"content": "", "tool_calls": calls}], calls=shape, ids=ids) as fake:
        reply = chat_client(fake).chat(MESSAGES, TOOLS)
    if shape == "text":  # no parser on the server: the loop's own parser reads the text
        assert "<tool_call>" in reply.content and reply.tool_calls == []
        loop = Loop(chat_client(fake), _NoTools(), system_prompt="s")
        assert [c.name for c in loop._calls_in(reply)] == ["read_file", "list_files"]
    else:
        assert reply.tool_calls == [ToolCall("read_file", {"path": "a.txt"}), ToolCall("list_files", {})]


@pytest.mark.parametrize("usage", ["openai", "llamacpp"])
def test_the_prompt_tokens_a_server_took_from_its_cache_are_read(usage: str) -> None:
    with FakeOpenAI([final_answer("one"), final_answer("two")], usage=usage) as fake:
        model = chat_client(fake)
        first = model.chat(MESSAGES, [])
        second = model.chat(
            [*MESSAGES, {"role": "assistant", "content": "one"}, {"role": "user", "content": "more"}], []
        )
    assert first.tokens_cached == 0 and second.tokens_cached > 0
    assert second.tokens_in > second.tokens_cached


def test_a_server_that_says_nothing_of_its_cache_leaves_it_unknown() -> None:
    with FakeOpenAI([final_answer("one")], usage="none") as fake:
        reply = chat_client(fake).chat(MESSAGES, [])
    assert reply.tokens_cached == -1


@pytest.mark.parametrize("kind", KINDS)
def test_a_conversation_is_sent_so_that_each_request_extends_the_last_byte_for_byte(kind: str) -> None:
    """The server's prompt cache holds only while each request's messages begin with the previous
    request's, byte for byte; this holds for both wire formats, calls and results included."""
    script = [tool_call("read_file", {"path": f"{n}.txt"}, content=f"turn {n}") for n in range(3)]
    with server(kind, [*script, final_answer("done")]) as fake:
        loop = Loop(chat_client(fake), _NoTools(), system_prompt="the system prompt")
        assert loop.run("read three files").status == "done"
    sent = [json.dumps(body["messages"], ensure_ascii=False) for body in fake.requests]
    for before, after in zip(sent, sent[1:]):
        assert after.startswith(before[:-1]), "a request does not extend the previous one"


def test_openai_wire_gives_each_result_the_id_of_the_call_it_answers() -> None:
    two = {
        "content": "",
        "tool_calls": [
            {"function": {"name": "a", "arguments": {}}},
            {"function": {"name": "b", "arguments": {"x": 1}}},
        ],
    }
    with FakeOpenAI([two, final_answer("done")]) as fake:
        Loop(chat_client(fake), _NoTools(), system_prompt="s").run("go")
    messages = fake.requests[1]["messages"]
    calls = messages[2]["tool_calls"]
    assert [c["function"]["arguments"] for c in calls] == ["{}", '{"x": 1}']
    assert [m["tool_call_id"] for m in messages[3:5]] == [c["id"] for c in calls]
    assert all(m["role"] == "tool" and "tool_name" not in m for m in messages[3:5])


@pytest.mark.parametrize("kind", KINDS)
def test_look_says_what_a_server_has_with_each_models_window(kind: str) -> None:
    with server(kind, models=("qwen2.5-coder:0.5b", "other")) as fake:
        view = look(host_of(fake), 2.0, detail=True)
        assert probe(host_of(fake)) == ["qwen2.5-coder:0.5b", "other"]
    assert view.up and view.host.kind == kind and view.models == ("qwen2.5-coder:0.5b", "other")
    info = view.info("qwen2.5-coder:0.5b")
    assert info is not None and info.context == 32768


def test_llama_cpp_says_its_window_on_its_props_page() -> None:
    with FakeOpenAI(models=("qwen2.5-coder:0.5b",), window=8192, props=True) as fake:
        view = look(fake.host, 2.0)
    info = view.info("qwen2.5-coder:0.5b")
    assert info is not None and info.context == 8192 and view.has_loaded("qwen2.5-coder:0.5b")


@pytest.mark.parametrize("kind", KINDS)
def test_a_server_that_does_not_answer_is_down_with_the_reason(kind: str) -> None:
    with server(kind) as gone:
        dead = host_of(gone)
    view = look(dead, 1.0)
    assert not view.up and "connection refused" in view.why and probe(dead) is None


@pytest.mark.parametrize("kind", KINDS)
def test_embeddings_come_back_in_the_order_of_the_texts(kind: str) -> None:
    embedders = {"e5": lambda text: [float(len(text)), 1.0]}
    with server(kind, embedders=embedders) as fake:
        vectors = HostEmbedder(host_of(fake)).embed("e5", ["a", "bbb", "cc"], timeout_s=5)
        with pytest.raises(EmbedFailed):
            HostEmbedder(host_of(fake)).embed("missing", ["a"], timeout_s=5)
    assert vectors == [[1.0, 1.0], [3.0, 1.0], [2.0, 1.0]]


def test_a_hosts_key_is_sent_as_its_bearer_token_and_a_wrong_one_is_named() -> None:
    with FakeOpenAI([final_answer("ok")], api_key="s3cret") as fake:
        keyed = Host(fake.url, kind="openai", api_key="s3cret")
        assert client_for(keyed, "qwen2.5-coder").chat(MESSAGES, []).content == "ok"
        assert look(keyed, 2.0).up
        with pytest.raises(ModelUnavailable, match="refused hearth's key"):
            client_for(Host(fake.url, kind="openai", api_key="wrong"), "qwen2.5-coder").chat(MESSAGES, [])
    assert fake.headers[0]["Authorization"] == "Bearer s3cret"
    assert "s3cret" not in repr(keyed)


def test_a_pool_fails_over_from_an_openai_host_to_an_ollama_one_with_the_same_turn() -> None:
    said: list[str] = []
    loaded = [{"name": "qwen2.5-coder", "size_vram": 1}]
    with (
        FakeOpenAI([Raw(500, "{}"), Raw(500, "{}")]) as openai,  # served models are loaded, and hold no GPU figure
        FakeOllama([final_answer("from b")], loaded=loaded) as ollama,
    ):
        views = survey([Host(openai.url, "a", kind="openai"), Host(ollama.url, "b")])
        pool = HostPool(
            "qwen2.5-coder",
            views,
            lambda h: client_for(h, "qwen2.5-coder", ChatOptions(retries=1, backoff_s=0)),
            on_switch=said.append,
        )
        reply = pool.chat(MESSAGES, [])
    assert len(openai.requests) == 2 and ollama.requests[0]["messages"] == MESSAGES
    assert (reply.host, reply.content) == ("b", "from b")
    assert said and "host a failed" in said[0] and "goes to host b" in said[0]


def test_a_kind_there_is_not_is_refused_naming_the_kinds() -> None:
    with pytest.raises(ValueError, match="write ollama\\+URL or openai\\+URL"):
        parse_host("vllm+http://127.0.0.1:8000")
    with pytest.raises(ValueError, match="there are: ollama, openai"):
        backend_for("nomad")
    assert parse_host("openai+http://127.0.0.1:8000/v1").base == "http://127.0.0.1:8000"
    assert parse_host("http://127.0.0.1").base == "http://127.0.0.1:11434"


class _NoTools:
    """The loop's tools for a wire test: every call answers ok."""

    schemas: list[dict[str, Any]] = TOOLS
    names = ["read_file", "list_files", "a", "b"]

    def run(self, call: ToolCall) -> ToolResult:
        return ToolResult(True, f"ran {call.name}")
