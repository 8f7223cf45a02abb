"""A run on an OpenAI-compatible server (llama.cpp, vLLM ...) as on Ollama: named by `openai+URL` or
router.toml's `kind = "openai"`, its key a credential the audit never holds, its reply cap and its
prompt cache recorded on every model step."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hearth.audit.store import AuditStore
from hearth.credentials import CredentialStore
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.fake_openai import FakeOpenAI


def _model_steps(state_dir: Path, run_id: str) -> list[dict[str, Any]]:
    with AuditStore(state_dir / "audit.db") as audit:
        return [s for s in audit.steps(run_id) if s["kind"] == "model"]


def _run_id(stdout: str) -> str:
    return next(json.loads(line)["run_id"] for line in stdout.splitlines() if '"run_id"' in line)


def test_hearth_loop_runs_a_goal_on_an_openai_compatible_server_and_records_its_cache(
    state_dir: Path, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.md").write_text("the NAS must be mounted first\n")
    script = [tool_call("read_file", {"path": "notes.md"}), final_answer("The NAS must be mounted first.")]
    with FakeOpenAI(script, usage="llamacpp") as fake:
        done = run_cli(
            "hearth-loop", "--host", fake.host, "--workspace", str(workspace), "--json", "what do the notes say?"
        )
    assert done.returncode == 0, done.stderr
    assert [p for p in fake.paths if p.startswith("/v1/chat")] == ["/v1/chat/completions"] * 2
    assert all(body["max_tokens"] == 2048 for body in fake.requests)  # every request carries the reply cap
    assert fake.requests[1]["messages"][-1]["role"] == "tool"
    turns = [json.loads(s["data"]) for s in _model_steps(state_dir, _run_id(done.stdout))]
    assert turns[0]["tokens_cached"] == 0 and turns[1]["tokens_cached"] > 0
    assert all(t["first_token_ms"] >= 0 for t in turns)


def test_a_reply_that_runs_away_is_cut_recorded_and_its_one_call_run_once(state_dir: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.md").write_text("mount the NAS first\n")
    looping = json.dumps({"name": "read_file", "arguments": {"path": "notes.md"}}) + "\n"
    script = [final_answer(looping * 2_000), final_answer("Mount the NAS first.")]
    with FakeOpenAI(script, usage="llamacpp", chunk_size=4096) as fake:
        done = run_cli(
            "hearth-loop", "--host", fake.host, "--workspace", str(workspace), "--json", "what do the notes say?"
        )
    assert done.returncode == 0, done.stderr
    run_id = _run_id(done.stdout)
    first = _model_steps(state_dir, run_id)[0]
    assert first["output"] == looping and json.loads(first["data"])["runaway"] is True
    with AuditStore(state_dir / "audit.db") as audit:
        assert [s["tool"] for s in audit.steps(run_id) if s["kind"] == "tool"] == ["read_file"]


def test_a_profiles_reply_cap_goes_out_on_every_request(state_dir: Path, tmp_path: Path) -> None:
    profile = tmp_path / "config" / "agents" / "terse"
    profile.mkdir(parents=True)
    (profile / "agent.toml").write_text("reply_tokens = 300\n")
    with FakeOllama([final_answer("ok"), final_answer("ok")]) as fake:
        done = run_cli("hearth-loop", "--host", fake.url, "--agent", "terse", "say ok")
        flagged = run_cli("hearth-loop", "--host", fake.url, "--reply-tokens", "99", "say ok")
    assert done.returncode == 0, done.stderr
    assert fake.requests[0]["options"]["num_predict"] == 300
    assert flagged.returncode == 0 and fake.requests[1]["options"]["num_predict"] == 99


def test_router_hosts_of_both_kinds_route_by_model_and_a_key_stays_out_of_the_audit(
    state_dir: Path, tmp_path: Path
) -> None:
    config = tmp_path / "config"
    config.mkdir()
    CredentialStore(state_dir / "credentials.json").set("vllm", ["127.0.0.1"], "sk-very-secret-key")
    with (
        FakeOllama(models=("llama3.2:3b",)) as ollama,
        FakeOpenAI(
            [final_answer("served by vllm")], models=("qwen2.5-coder:7b",), api_key="sk-very-secret-key"
        ) as vllm,
    ):
        (config / "router.toml").write_text(
            f'[[host]]\nurl = "{ollama.url}"\nlabel = "box"\n\n'
            f'[[host]]\nurl = "{vllm.url}/v1"\nkind = "openai"\nlabel = "gpu"\napi_key = "cred:vllm"\n'
        )
        done = run_cli("hearth-loop", "--model", "qwen2.5-coder:7b", "--json", "say hi")
        doctor = run_cli("hearth", "doctor")
    assert done.returncode == 0, done.stderr
    assert len(vllm.requests) == 1 and ollama.requests == []
    assert f"the OpenAI-compatible server host gpu (openai+{vllm.url})" in doctor.stdout
    assert f"Ollama host box ({ollama.url})" in doctor.stdout
    audit = (state_dir / "audit.db").read_bytes()
    assert b"sk-very-secret-key" not in audit and b"sk-very-secret-key" not in doctor.stdout.encode()


def test_a_router_host_naming_a_credential_hearth_lacks_is_refused_by_doctor(state_dir: Path, tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "router.toml").write_text('[[host]]\nurl = "http://127.0.0.1:1"\nkind = "openai"\napi_key = "raw-key"\n')
    doctor = run_cli("hearth", "doctor")
    assert 'api_key must name a credential, as api_key = "cred:NAME"' in doctor.stdout


def test_a_model_host_of_a_kind_there_is_not_is_one_line_naming_the_kinds(state_dir: Path) -> None:
    bad = run_cli("hearth-loop", "--host", "vllm+http://127.0.0.1:8000", "go")
    env = run_cli("hearth-loop", "go", env={"HEARTH_MODEL_HOST": "nomad+http://x"})
    assert bad.returncode == env.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "hearth-loop: --host: unknown model server kind 'vllm' in vllm+http://127.0.0.1:8000; write ollama+URL or "
        "openai+URL (llama.cpp, vLLM, LM Studio, LocalAI and SGLang speak openai)"
    ]
    assert env.stderr.startswith("hearth-loop: HEARTH_MODEL_HOST: unknown model server kind 'nomad'")
