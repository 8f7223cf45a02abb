"""Credential values in any spelling, end to end: what the model is sent, what the audit and the
logs keep, and the audit's record of every use of a credential."""

from __future__ import annotations

import base64
import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.services import RunServices
from hearth.run.goal import GoalRequest
from hearth.run.runner import run_goal
from hearth.settings import Settings
from tests.cli_support import run_cli_input
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.netfixtures import Answer, Seen, TestNet, Web
from tests.queue_support import rows

CANARY = "hc-spelling-canary-5e2a9c71"


def spellings_of(value: str) -> dict[str, str]:
    data = value.encode()
    return {
        "base64": base64.b64encode(data).decode(),
        "base64 inside a blob": base64.b64encode(b"key=" + data + b";").decode(),
        "base64url": base64.urlsafe_b64encode(b"\xff\xfe" + data).decode(),
        "hex": data.hex(),
        "HEX": data.hex().upper(),
        "percent": "".join(f"%{b:02X}" for b in data),
    }


def forms_in(text: str) -> list[str]:
    """The spellings of the canary still readable in `text` (each checked as a whole, and its middle)."""
    found = [name for name, form in spellings_of(CANARY).items() if form[4:-4] in text]
    return found + (["raw"] if CANARY in text or CANARY[:12] in text else [])


def test_encoded_and_split_values_never_reach_the_model_or_the_audit(state_dir: Path, tmp_path: Path) -> None:
    assert run_cli_input(["creds", "set", "TOKEN", "--host", "api.test"], CANARY).returncode == 0
    workspace = tmp_path / "ws"
    workspace.mkdir()
    leak = "\n".join(f"{name}: {form}" for name, form in spellings_of(CANARY).items())
    folded = base64.b64encode(CANARY.encode()).decode()
    leak += f"\nsplit: {CANARY[:10]}\n    {CANARY[10:]}\nfolded:\n{folded[:12]}\n{folded[12:]}\n"
    (workspace / "leak.txt").write_text(leak)
    with FakeOllama([tool_call("read_file", {"path": "leak.txt"}), final_answer("read it")]) as fake:
        proc = run_cli("hearth-loop", "--ollama-host", fake.url, "--workspace", str(workspace), "read leak.txt")
    assert proc.returncode == 0, proc.stderr
    sent = json.dumps(fake.requests)
    assert "[redacted:TOKEN]" in sent
    assert forms_in(fake.requests[-1]["messages"][-1]["content"]) == []
    shown = run_cli("hearth", "show", "--json", rows(state_dir, "select id from runs")[0]["id"]).stdout
    assert forms_in(shown) == [] and forms_in(proc.stdout + proc.stderr) == []
    audit = b"".join(p.read_bytes() for p in state_dir.glob("audit.db*"))
    assert forms_in(audit.decode("latin-1")) == []


def echo(seen: Seen) -> Answer:
    return Answer(200, "ok", {"x-echo": seen.headers.get("authorization", "")})


@pytest.fixture
def captured_logs() -> Iterator[io.StringIO]:
    """The operator's most verbose logging: every library's debug trace, to a buffer."""
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield buffer
    root.removeHandler(handler)
    root.setLevel(previous)


def test_library_debug_logs_never_hold_a_value_and_every_use_of_a_credential_is_recorded(
    state_dir: Path, captured_logs: io.StringIO
) -> None:
    assert run_cli_input(["creds", "set", "TOKEN", "--host", "api.test"], CANARY).returncode == 0
    api, elsewhere = Web({"/echo": echo}), Web({"/echo": echo})
    net = TestNet()
    net.host("api.test", api)
    net.host("elsewhere.test", elsewhere)

    def configure(services: RunServices) -> None:
        assert services.net is not None
        services.net.resolver, services.net.connector = net.resolve, net.connect

    script = [
        tool_call("http_request", {"url": "http://api.test/echo", "headers": {"Authorization": "Bearer cred:TOKEN"}}),
        tool_call("http_request", {"url": "http://elsewhere.test/echo", "headers": {"Authorization": "cred:TOKEN"}}),
        tool_call("http_request", {"url": f"http://elsewhere.test/echo?t={spellings_of(CANARY)['hex']}"}),
        final_answer("done"),
    ]
    try:
        with FakeOllama(script) as fake:
            settings = Settings(**{**Settings.from_env().__dict__, "model_host": fake.url, "tool_set": "all"})
            request = GoalRequest(goal="call it", model="qwen2.5-coder", mode="bypass", credentials=["TOKEN"])
            run_id, outcome = run_goal(request, settings, out=io.StringIO(), configure_services=configure)
    finally:
        api.close()
        elsewhere.close()
    assert outcome.status == "done" and api.seen[0].headers["authorization"] == f"Bearer {CANARY}"
    logged = captured_logs.getvalue()
    assert "x-echo" in logged and "[redacted:TOKEN]" in logged  # httpcore's trace of the reflected header
    assert forms_in(logged) == []
    uses = rows(state_dir, "select kind, tool, verdict, detail from steps where kind = 'credential' order by seq")
    details = [json.loads(u["detail"]) for u in uses]
    assert [(u["tool"], u["verdict"]) for u in uses] == [
        ("http_request", "used"),
        ("http_request", "refused"),
        ("http_request", "refused"),
    ]
    assert [(d["name"], d["host"]) for d in details] == [
        ("TOKEN", "api.test"),
        ("TOKEN", "elsewhere.test"),
        ("TOKEN", "elsewhere.test"),
    ]
    assert "it is bound to api.test" in details[1]["reason"]
    assert "URL carries the value of credential 'TOKEN' (hex)" in details[2]["reason"]
    assert elsewhere.seen == [] and all(CANARY not in json.dumps(d) for d in details)
    shown = run_cli("hearth", "show", run_id).stdout
    assert "http_request: credential TOKEN -> api.test used" in shown and CANARY not in shown
