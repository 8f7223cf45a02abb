"""`hearth doctor` as a real process: exit codes on a healthy and a broken setup, and --context."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from agent.safety.sandbox import SandboxUnavailable, detect
from hearth.doctor.files import check_credentials
from hearth.doctor.finding import Finding
from hearth.doctor.host import check_cgroups, check_reach, check_systemd
from hearth.settings import Settings
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer


def write(path: Path, text: str, mode: int | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mode is not None:
        path.chmod(mode)
    return path


def healthy_config(tmp_path: Path) -> Path:
    config = tmp_path / "config"
    write(config / "agents" / "builder" / "AGENTS.md", "You are {{agentName}}; you build on {{gitBranch}}.\n")
    write(config / "agents" / "builder" / "agent.toml", 'model = "qwen2.5-coder"\nmode = "auto"\n')
    write(config / "prompts" / "10-style.md", "Keep answers short.\n")
    write(config / "SOUL.md", "Calm and exact.\n")
    (tmp_path / "state").mkdir(mode=0o700)
    return config


def doctor(fake: FakeOllama | None, *args: str, sandbox: str = "auto") -> tuple[int, dict[str, Any]]:
    env = {"OLLAMA_HOST": fake.url if fake else "127.0.0.1:9", "HEARTH_SANDBOX": sandbox}
    proc = run_cli("hearth", "doctor", "--json", *args, env=env)
    return proc.returncode, json.loads(proc.stdout)


def statuses(report: dict[str, Any]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for f in report["findings"]:
        found.setdefault(f["check"], set()).add(f["status"])
    return found


def errors(report: dict[str, Any]) -> list[str]:
    return [f["message"] for f in report["findings"] if f["status"] == "error"]


def sandbox_available() -> bool:
    try:
        return detect("auto") != "none"
    except SandboxUnavailable:
        return False


@pytest.mark.skipif(not sandbox_available(), reason="no bwrap or Landlock here: the sandbox check would fail")
def test_a_healthy_setup_exits_0(state_dir: Path, tmp_path: Path, fake: FakeOllama) -> None:
    healthy_config(tmp_path)
    code, report = doctor(fake)
    assert code == 0, errors(report)
    assert report["ok"] is True and report["counts"]["error"] == 0
    found = statuses(report)
    for check in ("state", "config", "profile builder", "prompts", "ollama", "models", "sandbox", "prompt size"):
        assert found[check] == {"ok"}, check
    assert found["systemd"] == {"info"}  # PID 1 is not systemd here
    assert any(
        "model qwen2.5-coder is pulled (profiles: builder, default, demo, evolve, self-test)" in f["message"]
        for f in report["findings"]
    )


def test_warnings_alone_exit_0(state_dir: Path, tmp_path: Path, fake: FakeOllama) -> None:
    config = healthy_config(tmp_path)
    (config / "prompts").chmod(0o775)
    write(config / "agents" / "lazy" / "agent.toml", 'allowed_tools = ["read_file", "teleport"]\n')
    code, report = doctor(fake, sandbox="none")
    assert code == 0, errors(report)
    warnings = [f["message"] for f in report["findings"] if f["status"] == "warn"]
    assert any("is writable by its group (mode 0775)" in w for w in warnings)
    assert any("lazy/AGENTS.md is missing" in w for w in warnings)
    assert any("hearth does not have: teleport" in w for w in warnings)
    assert any("HEARTH_SANDBOX=none" in w for w in warnings)


def test_a_broken_setup_exits_1_naming_every_problem(state_dir: Path, tmp_path: Path, fake: FakeOllama) -> None:
    config = healthy_config(tmp_path)
    write(config / "prompts" / "20-bad.md", "Answer as {{persona}} in {{ language }}.\n")
    write(config / "agents" / "writer" / "AGENTS.md", "You write.\n")
    write(config / "agents" / "writer" / "agent.toml", 'model = "mistral-nemo"\n')
    write(config / "agents" / "broken" / "agent.toml", "max_iterations = 1000\n")
    (tmp_path / "state" / "queue").mkdir()
    (tmp_path / "state" / "queue").chmod(0o777)
    write(tmp_path / "state" / "credentials" / "github", "token", mode=0o644)
    (tmp_path / "state" / "credentials").chmod(0o755)
    code, report = doctor(fake)
    assert code == 1 and report["ok"] is False
    problems = "\n".join(errors(report))
    assert "20-bad.md has unknown placeholders {{persona}}, {{language}}" in problems
    warned = [f["message"] for f in report["findings"] if f["status"] == "warn"]
    # its runs still work, on another model: worth a look, not a failure
    assert (
        "model mistral-nemo (profiles: writer) is not pulled: its runs take qwen2.5-coder; run: ollama pull mistral-nemo"
        in warned
    )
    assert "broken/agent.toml: max_iterations must be a whole number from 1 to 100, got 1000" in problems
    assert f"queue directory {tmp_path}/state/queue is writable by every user (mode 0777)" in problems
    assert f"the credentials directory {tmp_path}/state/credentials has mode 0755, expected 0700" in problems
    assert f"credential file {tmp_path}/state/credentials/github has mode 0644, expected 0600" in problems


def test_a_model_pulled_only_by_another_tag_is_the_one_runs_take(state_dir: Path, tmp_path: Path) -> None:
    healthy_config(tmp_path)  # builder names qwen2.5-coder, as does HEARTH_MODEL for the rest
    with FakeOllama(models=("qwen2.5-coder:7b", "llama3.2:3b")) as fake:
        _, report = doctor(fake, sandbox="none")
    said = {f["message"]: f["status"] for f in report["findings"] if f["check"] == "models"}
    assert said == {
        "model qwen2.5-coder is pulled as qwen2.5-coder:7b (profiles: builder, default, demo, evolve, self-test)": "ok"
    }


def test_a_mistyped_model_is_answered_with_the_name_meant_not_a_pull_of_the_typo(
    state_dir: Path, tmp_path: Path
) -> None:
    config = healthy_config(tmp_path)
    write(config / "agents" / "builder" / "agent.toml", 'model = "qwen2.5-codr"\n')
    with FakeOllama(models=("qwen2.5-coder:7b",)) as fake:
        _, report = doctor(fake, sandbox="none")
        nothing_pulled = FakeOllama(models=())
        with nothing_pulled:
            _, empty = doctor(nothing_pulled, sandbox="none")
    said = {f["message"]: f["status"] for f in report["findings"] if f["check"] == "models"}
    typo = "model qwen2.5-codr (profiles: builder) is not pulled: its runs take qwen2.5-coder:7b; did you mean qwen2.5-coder:7b?"
    assert said[typo] == "warn" and not any("ollama pull qwen2.5-codr" in m for m in said)
    assert (
        "model qwen2.5-codr (profiles: builder) is not pulled, nor is any other; run: ollama pull qwen2.5-codr"
        in errors(empty)
    )


def test_ollama_down_and_a_world_writable_config_are_errors(state_dir: Path, tmp_path: Path) -> None:
    config = healthy_config(tmp_path)
    (config / "agents" / "builder" / "AGENTS.md").chmod(0o666)
    code, report = doctor(None)
    assert code == 1
    problems = "\n".join(errors(report))
    assert "cannot reach Ollama at http://127.0.0.1:9; is ollama.service running?" in problems
    assert "builder/AGENTS.md is writable by every user (mode 0666)" in problems


def test_an_unknown_agent_name_is_an_error_listing_the_profiles(
    state_dir: Path, tmp_path: Path, fake: FakeOllama
) -> None:
    healthy_config(tmp_path)
    code, report = doctor(fake, "--agent-name", "ghost", "--context")
    assert code == 1
    assert any("unknown agent profile 'ghost'; configured: builder; built in: default" in e for e in errors(report))
    assert report["context"] is None


def test_doctor_creates_nothing(tmp_path: Path, fake: FakeOllama) -> None:
    env = {
        "HEARTH_STATE_DIR": str(tmp_path / "no-state"),
        "HEARTH_CONFIG_DIR": str(tmp_path / "no-config"),
        "OLLAMA_HOST": fake.url,
        "HEARTH_SANDBOX": "none",
    }
    proc = run_cli("hearth", "doctor", env=env)
    assert proc.returncode == 0, proc.stdout
    assert "does not exist yet; the first run creates it" in proc.stdout
    assert "no config directory at" in proc.stdout
    assert not (tmp_path / "no-state").exists() and not (tmp_path / "no-config").exists()


def test_context_prints_each_part_with_its_source_and_size_and_the_total(
    state_dir: Path, tmp_path: Path, fake: FakeOllama
) -> None:
    config = healthy_config(tmp_path)
    write(tmp_path / "ws" / "AGENTS.md", "Use make.\n")
    proc = run_cli(
        "hearth",
        "doctor",
        "--agent-name",
        "builder",
        "--context",
        "--workspace",
        str(tmp_path / "ws"),
        "--num-ctx",
        "4096",
        env={"OLLAMA_HOST": fake.url},
    )
    out = proc.stdout
    assert f"--- prompts/10-style.md  ({config}/prompts/10-style.md, 19 chars)" in out
    assert f"--- role (builder)  ({config}/agents/builder/AGENTS.md, 35 chars)" in out
    assert "You are builder; you build on none." in out  # the workspace is not a repository yet
    assert f"--- voice  ({config}/SOUL.md, 15 chars)" in out
    assert f"--- project  ({tmp_path}/ws/AGENTS.md," in out and "Use make." in out
    assert "--- base  (built-in," in out
    total = out.strip().splitlines()[-1]
    assert total.startswith("total: ") and total.endswith("of num_ctx 4,096")
    _, report = doctor(fake, "--agent-name", "builder", "--context", "--workspace", str(tmp_path / "ws"))
    context = report["context"]
    assert sum(p["chars"] for p in context["parts"]) + 2 * (len(context["parts"]) - 1) + 1 == context["prompt_chars"]
    assert context["estimated_tokens"] == (context["prompt_chars"] + context["tool_schema_chars"]) // 4


def test_context_shows_exactly_what_a_run_sends(state_dir: Path, tmp_path: Path) -> None:
    healthy_config(tmp_path)
    ws = tmp_path / "ws"
    write(ws / "CLAUDE.md", "Project notes.\n")
    with FakeOllama([final_answer("ok")]) as fake:
        run_cli("hearth-loop", "--ollama-host", fake.url, "--agent-name", "builder", "--workspace", str(ws), "go")
        _, report = doctor(fake, "--agent-name", "builder", "--context", "--workspace", str(ws))
    sent = fake.requests[0]["messages"][0]["content"]
    assert sent == "\n\n".join(p["text"] for p in report["context"]["parts"]) + "\n"
    assert "you build on main." in sent  # the checkpoint history (hearth's own git directory) is on main


def test_context_prints_each_shown_tools_share_and_the_schemas_a_run_is_sent(state_dir: Path, tmp_path: Path) -> None:
    healthy_config(tmp_path)
    ws = tmp_path / "ws"
    with FakeOllama([final_answer("ok")]) as fake:
        run_cli("hearth-loop", "--ollama-host", fake.url, "--agent-name", "builder", "--workspace", str(ws), "go")
        _, report = doctor(fake, "--agent-name", "builder", "--context")
        proc = run_cli("hearth", "doctor", "--agent-name", "builder", "--context", env={"OLLAMA_HOST": fake.url})
    sent = fake.requests[0]["tools"]
    shown = report["context"]["tools"]
    assert [t["name"] for t in shown] == [t["function"]["name"] for t in sent]
    assert [t["chars"] for t in shown] == [len(json.dumps(t)) for t in sent]
    assert report["context"]["tool_schema_chars"] == len(json.dumps(sent))
    assert "tools shown (8), each one's share of the prompt and tools:" in proc.stdout
    line = next(x for x in proc.stdout.splitlines() if x.strip().startswith("read_file "))
    assert line.split()[1].replace(",", "").isdigit() and line.endswith("%")


def test_systemd_units_are_checked_only_when_systemd_is_pid_1(tmp_path: Path) -> None:
    systemctl = write(
        tmp_path / "systemctl",
        "#!/bin/sh\necho 'hearth-queue.path loaded active waiting Queue'\n"
        "echo 'hearth-agent@x.service loaded failed failed Run x'\n",
        mode=0o755,
    )
    [failed] = check_systemd("systemd", systemctl=str(systemctl))
    assert failed.status == "error" and "failed hearth units: hearth-agent@x.service" in failed.message
    write(systemctl, "#!/bin/sh\necho 'hearth-queue.path loaded active waiting Queue'\n", mode=0o755)
    assert check_systemd("systemd", systemctl=str(systemctl))[0].status == "ok"
    [skipped] = check_systemd("init")
    assert skipped.status == "info" and "systemd is not PID 1" in skipped.message


def test_cgroup_v1_is_a_warning_that_the_agent_units_ip_rules_are_not_enforced(tmp_path: Path) -> None:
    v2, v1 = tmp_path / "v2", tmp_path / "v1"
    write(v2 / "cgroup.controllers", "cpu memory pids\n")
    (v1 / "pids").mkdir(parents=True)
    [unified] = check_cgroups(v2)
    assert unified.status == "ok" and "IPAddressDeny= and TasksMax= are enforced" in unified.message
    [legacy] = check_cgroups(v1)
    assert legacy.status == "warn" and "cannot enforce the agent unit's IPAddressDeny=" in legacy.message
    assert "systemd.unified_cgroup_hierarchy=1" in legacy.message  # what to do
    assert check_cgroups(tmp_path / "absent")[0].status == "info"


def test_credentials_are_checked_by_path_and_mode_only(tmp_path: Path) -> None:
    (tmp_path / "creds").mkdir()
    systemd = Settings.from_env({"HEARTH_STATE_DIR": str(tmp_path), "CREDENTIALS_DIRECTORY": str(tmp_path / "creds")})
    [ok] = check_credentials(systemd)
    assert ok.status == "ok" and "systemd credentials" in ok.message
    [missing] = check_credentials(
        Settings.from_env({"HEARTH_STATE_DIR": str(tmp_path), "CREDENTIALS_DIRECTORY": str(tmp_path / "nope")})
    )
    assert missing.status == "error"
    plain = Settings.from_env({"HEARTH_STATE_DIR": str(tmp_path)})
    assert check_credentials(plain)[0].status == "info"
    write(tmp_path / "credentials.json", "{}", mode=0o600)
    assert [f.status for f in check_credentials(plain)] == ["ok"]
    (tmp_path / "credentials.json").chmod(0o640)
    [loose] = check_credentials(plain)
    assert loose.status == "error" and "has mode 0640, expected 0600" in loose.message


def test_a_context_workspace_that_is_not_a_directory_is_bad_usage(state_dir: Path, tmp_path: Path) -> None:
    proc = run_cli("hearth", "doctor", "--context", "--workspace", str(tmp_path / "nope"))
    assert (
        proc.returncode == 2 and proc.stderr.strip() == f"hearth doctor: workspace {tmp_path}/nope is not a directory"
    )


def test_the_nixos_layout_of_state_and_queue_is_healthy(state_dir: Path, tmp_path: Path, fake: FakeOllama) -> None:
    """tmpfiles of the module: state 0711, queue 2770 (the submitters' group writes requests)."""
    healthy_config(tmp_path)
    (tmp_path / "state").chmod(0o711)
    (tmp_path / "state" / "queue").mkdir()
    (tmp_path / "state" / "queue").chmod(0o2770)
    (tmp_path / "state" / "credentials").mkdir(mode=0o700)
    _, report = doctor(fake, sandbox="none")
    found = statuses(report)
    assert found["state"] == {"ok"} and found["queue"] == {"ok"} and found["credentials"] == {"ok"}


def test_a_venv_beneath_a_directory_others_may_not_enter_is_a_warning_saying_how_to_fix_it(
    state_dir: Path, tmp_path: Path, fake: FakeOllama
) -> None:
    """hearth runs commands as nobody; from a venv in a home (or a `mktemp -d` directory) that
    nobody may enter, they cannot start its Python: the doctor says so, where, and what to do."""
    healthy_config(tmp_path)
    base = Path(tempfile.mkdtemp(prefix="hearth-doctor-", dir="/var/tmp"))  # not under pytest's 0700 base
    base.chmod(0o755)
    home = base / "home"
    (home / "tool").mkdir(parents=True)
    home.chmod(0o700)
    try:
        expose = {"OLLAMA_HOST": fake.url, "HEARTH_SANDBOX_EXPOSE": str(home / "tool")}
        proc = run_cli("hearth", "doctor", "--json", env=expose)
    finally:
        shutil.rmtree(base)
    [warning] = [f for f in json.loads(proc.stdout)["findings"] if f["check"] == "reach" and f["status"] == "warn"]
    assert warning["path"] == str(home)
    assert f"the exposed path {home / 'tool'} is beneath {home} (mode 0700" in warning["message"]
    assert f"chmod o+x {home}" in warning["message"] and "VENV=/opt/hearth/venv" in warning["message"]
    assert proc.returncode == 0  # a warning: runs work, commands that need the venv do not


def test_other_users_reaching_the_venv_is_ok() -> None:
    assert check_reach([("hearth's venv", "/usr")]) == [
        Finding("reach", "ok", "other users (nobody, whom commands run as) can reach hearth's venv and code")
    ]


def test_with_several_hosts_each_is_checked_and_a_model_on_any_host_that_is_up_is_enough(
    state_dir: Path, tmp_path: Path
) -> None:
    config = healthy_config(tmp_path)
    with FakeOllama() as gone:
        dead = gone.url
    with FakeOllama(
        models=("qwen2.5-coder:latest",), loaded=[{"name": "qwen2.5-coder:latest", "size_vram": 2**31}]
    ) as up:
        write(
            config / "router.toml",
            f'[[host]]\nurl = "{up.url}"\nlabel = "gpu1"\n[[host]]\nurl = "{dead}"\nlabel = "gpu2"\n',
        )
        _, report = doctor(None)
    said = {f["message"]: f["status"] for f in report["findings"] if f["check"] in ("ollama", "models")}
    assert said[f"Ollama host gpu1 ({up.url}) answers with 1 model(s), 1 loaded (2.0 GiB)"] == "ok"
    [down] = [m for m in said if m.startswith(f"Ollama host gpu2 ({dead}) does not answer: ")]
    assert said[down] == "error" and down.endswith("runs go to the other hosts")
    [model] = [m for m in said if m.startswith("model qwen2.5-coder is on gpu1 (profiles: builder")]
    assert said[model] == "ok"
    assert not any("127.0.0.1:9" in m for m in said)  # OLLAMA_HOST is not asked when hosts are named


def test_an_alert_link_key_others_can_read_is_an_error_naming_the_chmod(state_dir: Path, tmp_path: Path) -> None:
    from hearth.leash.actions import key, key_path

    healthy_config(tmp_path)
    key(state_dir)
    path = key_path(state_dir)
    with FakeOllama() as fake:
        _, report = doctor(fake)
        assert f"the alert-link signing key {path} is readable by its owner only" in str(report)
        path.chmod(0o644)
        code, report = doctor(fake)
    assert code == 1
    assert f"the alert-link signing key {path} has mode 0644, expected 0600; run: chmod 600 {path}" in errors(report)
