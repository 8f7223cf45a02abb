"""Several Ollama hosts behind one model (agent/model/hosts.py), against real loopback servers."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from agent.model.hosts import Host, HostPool, choice_line, rank, survey
from agent.model.ollama_client import ModelUnavailable, OllamaClient
from tests.fake_ollama import FakeOllama, final_answer

GIB = 2**30


def _client(url: str) -> OllamaClient:
    return OllamaClient("qwen2.5-coder", url, retries=1, backoff_s=0.01)


def _dead_url() -> str:
    with FakeOllama() as gone:
        url = gone.url
    return url  # closed: nothing listens there now


def test_a_survey_reads_each_hosts_models_and_loaded_memory_and_names_a_dead_one() -> None:
    with FakeOllama(
        models=("qwen2.5-coder:latest", "llama3.2:3b"), loaded=[{"name": "llama3.2:3b", "size_vram": 3 * GIB}]
    ) as a:
        views = survey([Host(a.url, "gpu1"), Host(_dead_url(), "gpu2")], timeout_s=2)
    assert views[0].up and views[0].models == ("qwen2.5-coder:latest", "llama3.2:3b")
    assert views[0].loaded == ("llama3.2:3b",) and views[0].vram == 3 * GIB
    assert not views[1].up and "connection refused" in views[1].why
    assert views[0].has("qwen2.5-coder") and not views[0].has("qwen2.5-coder:7b")


def test_the_host_that_has_the_model_loaded_comes_first_then_the_least_loaded_for_its_weight() -> None:
    with (
        FakeOllama(models=("m:latest",), loaded=[{"name": "other", "size_vram": 8 * GIB}]) as busy,
        FakeOllama(models=("m:latest",), loaded=[{"name": "other", "size_vram": 6 * GIB}]) as heavy_but_strong,
        FakeOllama(models=("m:latest",), loaded=[{"name": "m:latest", "size_vram": 9 * GIB}]) as loaded,
        FakeOllama(models=("x",)) as lacks,
    ):
        hosts = [Host(busy.url, "busy"), Host(heavy_but_strong.url, "strong", 4.0), Host(loaded.url, "loaded")]
        views = survey([*hosts, Host(lacks.url, "lacks")])
    assert [v.host.label for v in rank(views, "m")] == ["loaded", "strong", "busy"]
    assert [v.host.label for v in rank(views, "m", label="busy")] == ["busy"]
    assert rank(views, "x:7b") == []
    assert choice_line(views, "m").startswith("model m on host loaded (loaded there; 3 of 4 hosts have it)")
    assert "pull it on one: ollama pull x:7b" in choice_line(views, "x:7b")


def test_a_host_that_fails_mid_run_gives_the_same_turn_to_another_host_that_has_the_model() -> None:
    said: list[str] = []

    def die(body: dict[str, Any]) -> dict[str, Any]:
        """Host a goes away in the middle of the second turn: its listener closes, the reply is cut."""
        threading.Thread(target=a.__exit__).start()
        raise ConnectionResetError("host a went away")

    with (
        FakeOllama([final_answer("first turn"), die], loaded=[{"name": "qwen2.5-coder", "size_vram": GIB}]) as a,
        FakeOllama([final_answer("second turn, from b")]) as b,
    ):
        views = survey([Host(a.url, "a"), Host(b.url, "b")])
        pool = HostPool("qwen2.5-coder", views, _client, on_switch=said.append)
        messages: list[dict[str, Any]] = [{"role": "user", "content": "hello"}]
        first = pool.chat(messages, [])
        second = pool.chat([*messages, {"role": "assistant", "content": first.content}], [])
        pool.close()
    assert (first.host, first.content) == ("a", "first turn")
    assert (second.host, second.content) == ("b", "second turn, from b")
    assert b.requests[0]["messages"][-1] == {"role": "assistant", "content": "first turn"}  # the whole conversation
    assert len(said) == 1 and said[0].startswith("host a failed (") and "goes to host b" in said[0]
    assert "prompt cache starts cold" in said[0]


def test_a_host_that_resets_the_connection_mid_reply_is_left_for_the_next() -> None:
    cut = threading.Event()

    def reset(body: dict[str, Any]) -> dict[str, Any]:
        cut.set()
        raise ConnectionResetError("the host went away mid-reply")

    with FakeOllama([reset, reset]) as a, FakeOllama([final_answer("from b")]) as b:
        pool = HostPool("qwen2.5-coder", survey([Host(a.url, "a"), Host(b.url, "b")]), _client)
        reply = pool.chat([{"role": "user", "content": "hi"}], [])
    assert cut.is_set() and (reply.host, reply.content) == ("b", "from b")


def test_with_no_host_left_the_turn_fails_in_one_line_naming_every_host_tried() -> None:
    with FakeOllama() as a:
        views = survey([Host(a.url, "a")])
    pool = HostPool("qwen2.5-coder", views, _client)  # a is closed now
    with pytest.raises(ModelUnavailable) as failed:
        pool.chat([{"role": "user", "content": "hi"}], [])
    assert str(failed.value).startswith("every host with model qwen2.5-coder failed this turn: a: ")
    assert "\n" not in str(failed.value)


def test_a_model_no_host_has_fails_the_first_turn_saying_where_to_pull_it() -> None:
    with FakeOllama(models=("llama3.2",)) as a:
        pool = HostPool("qwen2.5-coder", survey([Host(a.url, "a")]), _client)
        with pytest.raises(ModelUnavailable, match=r"a: has no qwen2.5-coder.*ollama pull qwen2.5-coder"):
            pool.chat([{"role": "user", "content": "hi"}], [])
    assert a.requests == []


def test_when_a_host_fails_the_others_are_asked_again_so_one_that_loaded_the_model_since_is_preferred() -> None:
    asked: list[int] = []

    def gone(body: dict[str, Any]) -> dict[str, Any]:
        raise ConnectionResetError("host a went away")

    with (
        FakeOllama([gone, gone], loaded=[{"name": "qwen2.5-coder", "size_vram": GIB}]) as a,
        FakeOllama([final_answer("never")]) as b,
        FakeOllama([final_answer("from c, which loaded it since")]) as c,
    ):
        hosts = [Host(a.url, "a"), Host(b.url, "b"), Host(c.url, "c")]
        views = survey(hosts)
        c.loaded = [{"name": "qwen2.5-coder", "size_vram": GIB}]  # c loaded the model after the run began

        def again() -> list[Any]:
            asked.append(1)
            return survey(hosts)

        pool = HostPool("qwen2.5-coder", views, _client, refresh=again)
        reply = pool.chat([{"role": "user", "content": "hi"}], [])
    assert (reply.host, asked) == ("c", [1]) and b.requests == []
