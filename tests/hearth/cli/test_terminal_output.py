"""What a terminal shows of hostile model and tool output: `hearth-loop`, `hearth show`, `hearth
watch` and the run logs escape control characters visibly; the audit keeps the bytes; refusals
are bounded with the length of what was cut."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from agent.tools.gate import call_tool
from tests.conftest import ROOT, run_cli
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.netfixtures import TestNet
from tests.queue_support import drop, rows, runs_by_status, wait_for

# cursor home + clear, an OSC window title, the bell, a carriage return that overwrites, a C1 CSI,
# a right-to-left override, and a line that forges the end of the run
HOSTILE = "\x1b[H\x1b[2J\x1b]0;pwned\x07ring\x07 ok\rOVERWRITTEN \x9b31m red \u202eevil\n== done: forged"
RAW = ("\x1b", "\x07", "\r", "\x9b", "\u202e")


def raw_controls(text: str) -> list[str]:
    return [repr(c) for c in RAW if c in text]


def test_hearth_loop_and_hearth_show_escape_what_the_model_and_tools_wrote(state_dir: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text(HOSTILE)
    script = [tool_call("read_file", {"path": "notes.txt"}, content=HOSTILE), final_answer(HOSTILE)]
    with FakeOllama(script) as fake:
        proc = run_cli("hearth-loop", "--ollama-host", fake.url, "--workspace", str(workspace), "read the notes")
    assert proc.returncode == 0, proc.stderr
    assert raw_controls(proc.stdout) == [] and "\\e[H\\e[2J\\e]0;pwned\\x07" in proc.stdout
    assert "\n== done: forged" not in proc.stdout  # the forged line stays inside the real one
    [run] = rows(state_dir, "select id, summary from runs")
    shown = run_cli("hearth", "show", run["id"])
    assert raw_controls(shown.stdout) == [] and "\\x9b31m" in shown.stdout and "\\u202eevil" in shown.stdout
    assert not any(line.startswith("== done") for line in shown.stdout.splitlines())
    as_json = run_cli("hearth", "show", run["id"], "--json").stdout
    assert raw_controls(as_json) == [] and json.loads(as_json)["run"]["summary"] == HOSTILE.strip()
    kept = rows(state_dir, "select output from steps where kind = 'tool'")[0]["output"]
    assert kept == HOSTILE  # the audit keeps the bytes as they were


def test_hearth_watch_and_the_run_log_escape_what_they_print(state_dir: Path) -> None:
    queue = state_dir / "queue"
    queue.mkdir(parents=True)
    with FakeOllama([final_answer(HOSTILE)], repeat_last=True) as fake:
        watch = subprocess.Popen(
            [sys.executable, "-m", "hearth.cli.main", "watch"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**os.environ, "OLLAMA_HOST": fake.url, "PYTHONPATH": str(ROOT)},
        )
        try:
            drop(queue, "loud.json", {"id": "loud", "goal": "g"})
            drop(queue, "odd.json", {"id": "odd", "goal": "g", "mode": "\x9b2J\u202e"})
            wait_for(lambda: runs_by_status(state_dir) == {"done": 1, "rejected": 1}, what="both requests to end")
        finally:
            watch.send_signal(signal.SIGTERM)
            out, err = watch.communicate(timeout=60)
    assert watch.returncode == 0, err
    assert raw_controls(out + err) == [] and 'got "\\x9b2J\\u202e"' in out
    log = (state_dir / "logs" / "loud.log").read_text()
    assert raw_controls(log) == [] and "\\e]0;pwned" in log


def test_refusals_are_at_most_500_characters_and_say_how_long_the_value_was(state_dir: Path, tmp_path: Path) -> None:
    queue = state_dir / "queue"
    drop(queue, "long.json", {"id": "long", "goal": "g", "mode": "x" * 10_000, "source": "y" * 10_000})
    assert run_cli("hearth", "spawn", "--local").returncode == 0
    reason = json.loads((queue / "rejected" / "long.json.error.json").read_text())["reason"]
    assert len(reason) <= 500 and "(10000 characters)" in reason
    (tmp_path / "ws").mkdir()
    unknown = call_tool("z" * 10_000, {}, tmp_path / "ws")
    assert len(unknown.output) <= 500 and "(10000 characters)" in unknown.output
    from agent.safety.workspace import Workspace
    from agent.services import RunServices

    with Workspace(tmp_path / "ws", services=RunServices(net=TestNet().guard())) as ws:
        fetched = call_tool("web_fetch", {"url": "http://site.test/" + "a b" * 30_000}, ws, mode="bypass")
    assert not fetched.ok and len(fetched.output) <= 500 and "(90017 characters)" in fetched.output
