"""End to end: credential canaries used by a whole run never land anywhere but the wire to their host.

A run (fake Ollama over HTTP, real audit/state/knowledge files, real local servers behind test
names) sends two credentials, one from the store and one from $CREDENTIALS_DIRECTORY, to a
server that reflects them; the model then stores what it saw in the knowledge base and a file,
follows a cross-origin redirect and tries other hosts and names. Afterwards every stored file,
the printed log and every request the fake Ollama received are scanned for the values.
"""

from __future__ import annotations

import io
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent.knowledge.store import run_store
from agent.services import RunServices
from hearth.run.goal import GoalRequest
from hearth.run.runner import run_goal
from hearth.settings import Settings
from tests.cli_support import run_cli_input
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.netfixtures import Answer, Seen, TestNet, Web

STORE_CANARY = "hc-store-canary-4d1f8e2b9a"
SYSTEMD_CANARY = "hc-systemd-canary-77c3e0a5d1"


def echo(seen: Seen) -> Answer:
    reflected = json.dumps({"headers": seen.headers, "body": seen.body.decode()})
    return Answer(200, reflected, {"content-type": "application/json", "location": seen.headers.get("x-sys", "")})


def last_tool_output(body: dict[str, Any]) -> str:
    return [m for m in body["messages"] if m["role"] == "tool"][-1]["content"]


def script() -> list[Any]:
    both = {"Authorization": "Bearer cred:STORE_TOKEN", "X-Sys": "cred:SYS_TOKEN"}
    return [
        tool_call("http_request", {"url": "http://api.test/echo", "method": "POST", "headers": both, "body": "hello"}),
        lambda body: tool_call("write_file", {"path": "seen.txt", "content": last_tool_output(body)}),
        lambda body: tool_call("kb_add", {"text": last_tool_output(body) + " echo", "source": "echo"}),
        tool_call("http_request", {"url": "http://api.test/away", "headers": {"X-Key": "cred:STORE_TOKEN"}}),
        tool_call("http_request", {"url": "http://elsewhere.test/land", "headers": {"X-Key": "cred:STORE_TOKEN"}}),
        tool_call("http_request", {"url": "http://api.test/echo", "headers": {"X-Key": "cred:UNLISTED"}}),
        tool_call("http_request", {"url": "http://api.test/echo", "headers": {"X-Key": "cred:bad$name"}}),
        tool_call("remember", {"lesson": "The echo endpoint of api.test reflects request headers."}),
        final_answer("Done: the echo service reflects headers."),
    ]


@pytest.fixture
def servers() -> Any:
    api = Web({"/echo": echo, "/away": Answer(302, headers={"location": "http://elsewhere.test/land"})})
    elsewhere = Web({"/land": echo})
    yield api, elsewhere
    api.close()
    elsewhere.close()


@dataclass
class Evidence:
    """What one canary run left behind: every stored file, the log, the model's requests."""

    run_id: str
    status: str
    files: dict[str, bytes]
    log: str
    shown: str
    model_requests: str


def set_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    systemd = tmp_path / "systemd-creds"
    systemd.mkdir()
    (systemd / "SYS_TOKEN").write_text(SYSTEMD_CANARY)
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(systemd))
    assert run_cli_input(["creds", "set", "STORE_TOKEN", "--host", "api.test"], STORE_CANARY).returncode == 0
    assert run_cli_input(["creds", "set", "SYS_TOKEN", "--host", "api.test", "--systemd"], "").returncode == 0
    assert run_cli_input(["creds", "set", "UNLISTED", "--host", "api.test"], "unlisted-value-1234").returncode == 0


def run_with_canaries(state_dir: Path, workspace: Path, net: TestNet) -> Evidence:
    keep_wal: list[sqlite3.Connection] = []

    def configure(services: RunServices) -> None:
        services.net.resolver, services.net.connector = net.resolve, net.connect
        run_store(services)  # opened now (a run opens it on first use) so its -wal can be kept
        for name in ("audit.db", "knowledge.db"):  # a second reader keeps each -wal file on disk
            keep_wal.append(sqlite3.connect(state_dir / name))
            keep_wal[-1].execute("select count(*) from sqlite_master").fetchall()

    log = io.StringIO()
    live: dict[str, bytes] = {}  # the live state files, read while the run still has them

    def read_live_state(body: dict[str, Any]) -> dict[str, Any]:
        live.update({str(p): p.read_bytes() for p in (state_dir / "state").glob("*.json")})
        return final_answer("Done: the echo service reflects headers.")

    with FakeOllama([*script()[:-1], read_live_state]) as fake:
        settings = Settings(**{**Settings.from_env().__dict__, "model_host": fake.url, "tool_set": "all"})
        request = GoalRequest(
            goal="call the echo API",
            model="qwen2.5-coder",
            mode="bypass",
            workspace=workspace,
            credentials=["STORE_TOKEN", "SYS_TOKEN"],
        )
        run_id, outcome = run_goal(request, settings, json_lines=True, out=log, configure_services=configure)
        shown = run_cli("hearth", "show", run_id, "--json").stdout
        files = {**live, **scan(state_dir, workspace)}
    for conn in keep_wal:
        conn.close()
    return Evidence(run_id, outcome.status, files, log.getvalue(), shown, json.dumps(fake.requests))


def test_credential_values_never_reach_the_model_audit_state_workspace_kb_or_logs(
    state_dir: Path, tmp_path: Path, servers: tuple[Web, Web], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_credentials(tmp_path, monkeypatch)
    api, elsewhere = servers
    net = TestNet()
    net.host("api.test", api)
    net.host("elsewhere.test", elsewhere)
    run = run_with_canaries(state_dir, tmp_path / "ws", net)
    assert run.status == "done"
    # the values did go out, to the bound host only (elsewhere saw the redirect, not the direct call)
    assert api.seen[0].headers["authorization"] == f"Bearer {STORE_CANARY}"
    assert api.seen[0].headers["x-sys"] == SYSTEMD_CANARY
    assert len(elsewhere.seen) == 1 and STORE_CANARY not in json.dumps(elsewhere.seen[0].headers)
    # ... and came back only redacted
    assert "Bearer [redacted:STORE_TOKEN]" in run.model_requests and "[redacted:SYS_TOKEN]" in run.model_requests
    assert "may not be sent to elsewhere.test" in run.model_requests
    assert "'UNLISTED' is not listed for this run" in run.model_requests
    assert "credential name 'bad$name' is not valid" in run.model_requests
    assert "[redacted:STORE_TOKEN]" in (tmp_path / "ws" / "seen.txt").read_text()
    names = {Path(p).name: data for p, data in run.files.items()}
    assert {"audit.db-wal", "knowledge.db-wal", f"{run.run_id}.json", "seen.txt"} <= set(names)
    assert b"[redacted:STORE_TOKEN]" in names["audit.db-wal"] + names["audit.db"]  # the scan reads real rows
    for canary in (STORE_CANARY, SYSTEMD_CANARY, "unlisted-value-1234"):
        assert canary not in run.model_requests and canary not in run.log and canary not in run.shown
        for path, data in run.files.items():
            assert canary.encode() not in data, f"{canary} found in {path}"


def scan(state_dir: Path, workspace: Path) -> dict[str, bytes]:
    """Every stored file but the credential store itself: audit DB and -wal, state, KB, workspace."""
    files = {}
    for root in (state_dir, workspace):
        for path in root.rglob("*"):
            if path.is_file() and path.name != "credentials.json":
                files[str(path)] = path.read_bytes()
    return files
