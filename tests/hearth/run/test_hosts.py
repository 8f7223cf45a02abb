"""A run over several Ollama hosts (router.toml's [[host]]): routed by model, switched when one dies."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from hearth.audit.store import AuditStore
from hearth.errors import ConfigError
from hearth.run.goal import GoalRequest
from hearth.run.hosts import configured
from hearth.run.runner import run_goal
from hearth.settings import Settings
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer, tool_call

GIB = 2**30


def _hosts(config: Path, *hosts: tuple[str, str], rules: str = "") -> None:
    config.mkdir(parents=True, exist_ok=True)
    tables = "".join(f'\n[[host]]\nurl = "{url}"\nlabel = "{label}"\n' for label, url in hosts)
    (config / "router.toml").write_text(rules + tables)


def _run(state_dir: Path, tmp_path: Path, model: str = "", goal: str = "read notes.md") -> tuple[str, str]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "notes.md").write_text("the nightly copy needs the NAS mounted first\n")
    settings = Settings(**{**Settings.from_env().__dict__, "model_host": "127.0.0.1:1"})
    request = GoalRequest(goal=goal, model=model or None, mode="bypass", workspace=workspace)
    run_id, outcome = run_goal(request, settings, out=io.StringIO())
    return run_id, outcome.status


def _steps(state_dir: Path, run_id: str) -> list[dict[str, Any]]:
    with AuditStore(state_dir / "audit.db") as audit:
        return audit.steps(run_id)


def test_a_run_goes_to_the_host_that_has_its_model_loaded_and_records_it_on_every_turn(
    state_dir: Path, tmp_path: Path
) -> None:
    with (
        FakeOllama(models=("qwen2.5-coder:latest",)) as a,
        FakeOllama(
            [tool_call("read_file", {"path": "notes.md"}), final_answer("read it")],
            models=("llama3.2:3b",),
            loaded=[{"name": "llama3.2:3b", "size_vram": 2 * GIB}],
        ) as b,
        FakeOllama(models=("llama3.2:3b",)) as c,
    ):
        _hosts(tmp_path / "config", ("a", a.url), ("b", b.url), ("c", c.url))
        run_id, status = _run(state_dir, tmp_path, model="llama3.2:3b")
    assert status == "done" and len(b.requests) == 2 and a.requests == c.requests == []
    steps = _steps(state_dir, run_id)
    [chose] = [s for s in steps if s["kind"] == "host"]
    assert chose["detail"] == "model llama3.2:3b on host b (loaded there; 2 of 3 hosts have it)"
    turns = [json.loads(s["data"]) for s in steps if s["kind"] == "model"]
    assert [t["host"] for t in turns] == ["b", "b"]
    shown = run_cli("hearth", "show", run_id).stdout
    assert "on host b" in shown and "model llama3.2:3b on host b" in shown


def test_a_run_start_asks_each_host_once_for_its_models_and_what_is_loaded(state_dir: Path, tmp_path: Path) -> None:
    """The router's choice of a model and the pool that runs it read one survey (a dead host costs its timeout once)."""
    with (
        FakeOllama([final_answer("done")], models=("llama3.2:3b",)) as a,
        FakeOllama(models=("qwen2.5-coder:latest",)) as b,
    ):
        _hosts(tmp_path / "config", ("a", a.url), ("b", b.url))
        _, status = _run(state_dir, tmp_path, model="llama3.2:3b")
    assert status == "done"
    for host in (a, b):
        assert host.paths.count("/api/tags") == 1 and host.paths.count("/api/ps") == 1, host.paths


def test_a_host_killed_mid_run_hands_the_same_turn_to_another_and_the_run_finishes(
    state_dir: Path, tmp_path: Path
) -> None:
    def die(body: dict[str, Any]) -> dict[str, Any]:
        threading.Thread(target=a.__exit__).start()
        raise ConnectionResetError("host a went away")

    with (
        FakeOllama(
            [tool_call("read_file", {"path": "notes.md"}), die], loaded=[{"name": "qwen2.5-coder", "size_vram": GIB}]
        ) as a,
        FakeOllama([final_answer("The copy needs the NAS mounted.")]) as b,
    ):
        _hosts(tmp_path / "config", ("a", a.url), ("b", b.url))
        run_id, status = _run(state_dir, tmp_path, model="qwen2.5-coder")
    assert status == "done"
    [carried] = b.requests
    assert any("NAS mounted first" in str(m.get("content")) for m in carried["messages"])  # the tool result
    steps = _steps(state_dir, run_id)
    said = [s["detail"] for s in steps if s["kind"] == "host"]
    assert said[0].startswith("model qwen2.5-coder on host a (loaded there")
    assert said[1].startswith("host a failed (") and "goes to host b, whose prompt cache starts cold" in said[1]
    assert [json.loads(s["data"])["host"] for s in steps if s["kind"] == "model"] == ["a", "b"]
    with AuditStore(state_dir / "audit.db") as audit:
        assert (audit.run(run_id) or {})["model_host"] == "a,b"
    assert "on host a, then b" in run_cli("hearth", "show", run_id).stdout


def test_with_every_host_down_the_run_ends_model_unavailable_in_one_line(state_dir: Path, tmp_path: Path) -> None:
    with FakeOllama() as a:
        url = a.url
    _hosts(tmp_path / "config", ("a", url))
    run_id, status = _run(state_dir, tmp_path, model="qwen2.5-coder")
    with AuditStore(state_dir / "audit.db") as audit:
        error = (audit.run(run_id) or {})["error"]
    assert status == "model_unavailable" and "\n" not in error
    assert "no model host that is up has model qwen2.5-coder (a: down (" in error


def test_a_router_rule_pins_a_run_to_a_host_by_its_label(state_dir: Path, tmp_path: Path) -> None:
    rule = '[[rule]]\nname = "on-c"\nmodel = "qwen2.5-coder"\nhost = "c"\n'
    with (
        FakeOllama(loaded=[{"name": "qwen2.5-coder", "size_vram": GIB}]) as b,
        FakeOllama([final_answer("done on c")]) as c,
    ):
        _hosts(tmp_path / "config", ("b", b.url), ("c", c.url), rules=rule)
        run_id, status = _run(state_dir, tmp_path)
    assert status == "done" and b.requests == [] and len(c.requests) == 1
    [chose] = [s for s in _steps(state_dir, run_id) if s["kind"] == "host"]
    assert chose["detail"].startswith("model qwen2.5-coder on host c (") and "pinned to c" in chose["detail"]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            '[[host]]\nurl = "http://x:11434"\nport = 1\n',
            "host[0]: unknown key 'port'; the keys are url, kind, label, weight, timeout_s, api_key",
        ),
        ('[[host]]\nlabel = "a"\n', 'host[0] names no url; add url = "http://HOST:11434"'),
        ('[[host]]\nurl = "http://x"\nweight = 0\n', "host[0].weight must be a number above 0, got 0"),
        (
            '[[host]]\nurl = "http://x"\nlabel = "a"\n[[host]]\nurl = "http://y"\nlabel = "a"\n',
            "two hosts are labelled 'a'; give each its own label",
        ),
    ],
)
def test_a_bad_host_table_is_refused_naming_the_file_and_the_key(
    state_dir: Path, tmp_path: Path, text: str, said: str
) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "router.toml").write_text(text)
    with pytest.raises(ConfigError) as refused:
        configured(Settings.from_env())
    assert str(refused.value) == f"{tmp_path / 'config' / 'router.toml'}: {said}"


def test_hosts_from_the_environment_take_a_label_each(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEARTH_OLLAMA_HOSTS", "gpu1=http://10.0.0.5:11434, http://10.0.0.6:11434")
    hosts = configured(Settings.from_env())
    assert [(h.label, h.url, h.name) for h in hosts] == [
        ("gpu1", "http://10.0.0.5:11434", "gpu1"),
        ("", "http://10.0.0.6:11434", "10.0.0.6:11434"),
    ]
