"""What the appliance hands a run's tools: settings read once, guard options, redaction in the recorder."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent.knowledge.store import run_store
from agent.loop import Event
from agent.safety.redaction import Redactor
from agent.safety.sandbox import SandboxPolicy
from hearth.audit.store import AuditStore, RunRecord
from hearth.errors import ConfigError
from hearth.run.admission import resolved
from hearth.run.events import SqliteRecorder
from hearth.run.goal import GoalRequest
from hearth.run.recorder import Recorder
from hearth.run.services import run_services
from hearth.run.state import StateFile
from hearth.settings import Settings


def test_network_and_recall_settings_come_from_the_environment(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {
            "HEARTH_STATE_DIR": str(tmp_path),
            "HEARTH_NET_PRIVATE_HOSTS": "nas.lan, printer.lan",
            "HEARTH_RECALL_CHARS": "900",
            "CREDENTIALS_DIRECTORY": "/run/credentials/x",
        }
    )
    assert settings.net_private_hosts == ("nas.lan", "printer.lan") and settings.recall_chars == 900
    assert settings.credentials_dir == Path("/run/credentials/x")
    assert settings.knowledge_path == tmp_path / "knowledge.db"
    with pytest.raises(ConfigError, match="HEARTH_RECALL_CHARS must be a whole number"):
        Settings.from_env({"HEARTH_RECALL_CHARS": "lots"})


def test_a_runs_services_carry_its_egress_list_the_operators_lan_hosts_and_the_store(tmp_path: Path) -> None:
    (tmp_path / "etc" / "agents" / "builder").mkdir(parents=True)
    env = {"HEARTH_STATE_DIR": str(tmp_path), "HEARTH_CONFIG_DIR": str(tmp_path / "etc")}
    settings = Settings.from_env(env | {"HEARTH_NET_PRIVATE_HOSTS": "NAS.lan"})
    plan = resolved(GoalRequest(goal="g", model="m", agent_name="builder", egress=["*.github.com"]), settings, "r1")
    with run_services(plan, "r1", settings, SandboxPolicy(), Redactor()) as services:
        assert services.net.egress == ("*.github.com",) and services.net.private_hosts == frozenset({"nas.lan"})
        assert services.agent_name == "builder" and services.run_id == "r1"
        assert run_store(services).path == tmp_path / "knowledge.db"


def test_the_recorder_redacts_every_event_it_stores_and_prints(tmp_path: Path) -> None:
    value = "hc-recorder-canary-0042"
    out = io.StringIO()
    with AuditStore(tmp_path / "audit.db") as audit:
        audit.start_run(RunRecord(id="r1", agent_name="a", model="m", goal="g", mode="auto"))
        recorder = Recorder(
            SqliteRecorder(audit),
            StateFile(tmp_path / "state", "r1"),
            "r1",
            json_lines=True,
            out=out,
            redactor=Redactor({"TOKEN": value}),
        )
        recorder(
            Event(
                "tool",
                1,
                {
                    "tool": "http_request",
                    "arguments": {"h": value},
                    "ok": True,
                    "output": f"echo {value}",
                    "verdict": "run",
                    "duration_s": 0.1,
                    "detail": {},
                },
            )
        )
        recorder(Event("tool_started", 1, {"tool": "http_request", "arguments": {"h": value}}))
        state = (tmp_path / "state" / "r1.json").read_text()
        recorder(Event("run_finished", 1, {"status": "done", "summary": f"saw {value}", "error": ""}))
        recorder.note("recall", output=value)
        stored = json.dumps(audit.steps("r1"))
    for text in (stored, state, out.getvalue()):
        assert value not in text
    assert "echo [redacted:TOKEN]" in stored and "saw [redacted:TOKEN]" in out.getvalue()
    assert not (tmp_path / "state" / "r1.json").exists()  # the run ended: its live state is the audit's


@pytest.mark.parametrize("made", [False, True], ids=["no mcp directory", "an empty one"])
def test_a_box_that_declares_no_mcp_server_never_loads_mcp_s_code(tmp_path: Path, made: bool) -> None:
    if made:
        (tmp_path / "etc" / "mcp").mkdir(parents=True)
    script = """
import sys
HEAVY = {"hearth.mcp.offer", "agent.tools.mcp.client", "agent.tools.mcp.tools"}
from agent.safety.sandbox import SandboxPolicy
from agent.net.guard import NetGuard
from hearth.run.admission import resolved
from hearth.run.goal import GoalRequest
from hearth.run.services import mcp_tools
from hearth.settings import Settings
settings = Settings.from_env({"HEARTH_STATE_DIR": sys.argv[1] + "/state", "HEARTH_CONFIG_DIR": sys.argv[1] + "/etc"})
plan = resolved(GoalRequest(goal="g", model="m"), settings, "r1")
assert plan.every_tool
print(mcp_tools(plan, settings, SandboxPolicy(), None, NetGuard()), sorted(m for m in sys.modules if m.split(".")[0] == "mcp" or m in HEAVY))
"""
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None", "[]"]
